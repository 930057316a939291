/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/repo/autoremove.h"

#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

#define AUTOREMOVE_FILE_MAX (64 * 1024)

/* POSIX extended regex metacharacters (apt matches NeverAutoRemove with regcomp REG_EXTENDED). */
static char *escape_release(const char *release)
{
    char *out = malloc(strlen(release) * 2 + 1), *o = out;

    if (!out)
        return NULL;
    for (const char *p = release; *p; p++) {
        if (strchr(".[]()*+?{}|^$\\", *p))
            *o++ = '\\';
        *o++ = *p;
    }
    *o = '\0';
    return out;
}

char *ks_autoremove_text(char *const *releases)
{
    _cleanup_strv_free_ char **seen = NULL;
    _cleanup_free_ char *text =
        strdup(KS_AUTOREMOVE_MARKER ": the kernels a kernel swap relies on (the old one it\n"
                                    "// falls back to, the new one), kept from apt autoremove. "
                                    "'kswap rollback --purge'\n"
                                    "// removes this file; the next 'kswap apply' rewrites it.\n"
                                    "APT::NeverAutoRemove\n{\n");

    for (char *const *r = releases; text && r && *r; r++) {
        _cleanup_free_ char *esc = NULL;
        char *next;
        if (ks_strv_contains(seen, *r))
            continue;
        if (ks_strv_extend(&seen, *r) < 0 || !(esc = escape_release(*r)))
            return NULL;
        next = ks_asprintf("%s   \"^linux-.*-%s$\";\n", text, esc);
        free(text);
        text = next;
    }
    return text ? ks_asprintf("%s};\n", text) : NULL;
}

/* 1: kswap's file (its text in *ret_text), 0: none, -EEXIST: someone else's. */
static int read_ours(const ks_root *root, char **ret_text)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r = ks_root_read_file(root, KS_AUTOREMOVE_PATH, AUTOREMOVE_FILE_MAX, &text, &len);

    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    if (!ks_startswith(text, KS_AUTOREMOVE_MARKER))
        return -EEXIST;
    if (ret_text)
        *ret_text = TAKE_PTR(text);
    return 1;
}

int ks_autoremove_check(const ks_root *root)
{
    int r = read_ours(root, NULL);
    return r < 0 ? r : 0;
}

int ks_autoremove_keep(const ks_root *root, char *const *releases)
{
    _cleanup_free_ char *want = ks_autoremove_text(releases), *have = NULL;
    int r;

    if (!want)
        return -ENOMEM;
    r = read_ours(root, &have);
    if (r < 0)
        return r;
    if (r > 0 && streq(have, want))
        return 0;
    r = ks_mkdir_p(root, "etc/apt/apt.conf.d", 0755);
    if (r < 0)
        return r;
    r = ks_write_atomic(root, KS_AUTOREMOVE_PATH, want, strlen(want), 0644);
    return r < 0 ? r : 1;
}

int ks_autoremove_release(const ks_root *root)
{
    int r = read_ours(root, NULL);

    if (r <= 0)
        return r;
    r = ks_unlink_if_exists(root, KS_AUTOREMOVE_PATH);
    return r < 0 ? r : 1;
}
