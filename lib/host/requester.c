/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/basic/util.h"
#include "lib/host/requester.h"

/* Real passwd and cgroup files are small; anything larger is not read. */
#define SMALL_FILE_MAX (1u << 20)

char *ks_passwd_name(const char *text, size_t len, unsigned long uid)
{
    const char *line;
    size_t pos = 0, n;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        /* name:password:uid:... */
        const char *c1 = memchr(line, ':', n), *c2, *c3;
        _cleanup_free_ char *field = NULL;
        unsigned long long v;

        if (!c1 || c1 == line)
            continue;
        c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line));
        if (!c2)
            continue;
        c3 = memchr(c2 + 1, ':', n - (size_t)(c2 + 1 - line));
        if (!c3)
            continue;
        field = strndup(c2 + 1, (size_t)(c3 - c2 - 1));
        if (!field)
            return NULL;
        if (ks_safe_atou64(field, &v) < 0 || v != uid)
            continue;
        return strndup(line, (size_t)(c1 - line));
    }
    return NULL;
}

char *ks_cgroup_unit(const char *text, size_t len)
{
    const char *line;
    size_t pos = 0, n;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        /* "0::/system.slice/kswap-accept.service" (v2) or "1:name=systemd:/..." (v1) */
        const char *end = line + n, *c1 = memchr(line, ':', n), *c2, *comp, *found = NULL;
        size_t found_len = 0;

        if (!c1)
            continue;
        c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
        if (!c2 || !(c2 == c1 + 1 || ((size_t)(c2 - c1 - 1) == strlen("name=systemd") &&
                                      memcmp(c1 + 1, "name=systemd", 12) == 0)))
            continue;
        /* The innermost component that is a service. */
        for (comp = c2 + 1; comp < end;) {
            const char *slash = memchr(comp, '/', (size_t)(end - comp));
            size_t l = (size_t)((slash ? slash : end) - comp);
            if (l > 8 && memcmp(comp + l - 8, ".service", 8) == 0) {
                found = comp;
                found_len = l;
            }
            comp += l + 1;
        }
        if (found)
            return strndup(found, found_len);
    }
    return NULL;
}

static char *uid_name(const ks_root *root, unsigned long uid)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    char *name = NULL;

    if (ks_root_read_file(root, "etc/passwd", SMALL_FILE_MAX, &text, &len) >= 0)
        name = ks_passwd_name(text, len, uid);
    return name ? name : ks_asprintf("uid %lu", uid);
}

int ks_requester(const ks_root *root, char **ret)
{
    _cleanup_free_ char *line = NULL, *text = NULL;
    const char *s = getenv("SUDO_USER");
    unsigned long long uid;
    size_t len = 0;
    char *name;

    assert(root);
    assert(ret);
    if (s && *s) {
        name = strdup(s);
        goto out;
    }
    if (ks_root_read_line(root, "proc/self/loginuid", &line) >= 0 &&
        ks_safe_atou64(ks_strstrip(line), &uid) >= 0 && uid < 4294967295ULL) {
        name = uid_name(root, (unsigned long)uid);
        goto out;
    }
    s = getenv("INVOCATION_ID");
    if (s && *s && ks_root_read_file(root, "proc/self/cgroup", SMALL_FILE_MAX, &text, &len) >= 0) {
        name = ks_cgroup_unit(text, len);
        if (name)
            goto out;
    }
    name = uid_name(root, (unsigned long)geteuid());
out:
    if (!name)
        return -ENOMEM;
    *ret = name;
    return 0;
}
