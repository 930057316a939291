/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /proc/self/mountinfo, as the kernel writes it (fs/proc_namespace.c, show_mountinfo):
 *   ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
 * Fields are separated by one space; space, tab, newline and backslash inside a field are
 * written as \ooo (seq_path/mangle), anything else (even \r) stays raw. util-linux libmount
 * (libmount/src/tab_parse.c, mnt_parse_mountinfo_line) is the reference reader.
 */
#include <assert.h>
#include <ctype.h>

#include "lib/host/bootfs.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

#define MOUNTINFO_MAX (8u * 1024 * 1024)

#define MAX_FIELDS 64

static bool is_octal(char c)
{
    return c >= '0' && c <= '7';
}

/* Undoes the kernel's \ooo escapes; an escape of NUL or a malformed one stays literal. */
static char *unescape(const char *s, size_t n)
{
    char *r = malloc(n + 1), *p = r;

    if (!r)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 3 < n && is_octal(s[i + 1]) && is_octal(s[i + 2]) &&
            is_octal(s[i + 3])) {
            unsigned v = (unsigned)(s[i + 1] - '0') * 64 + (unsigned)(s[i + 2] - '0') * 8 +
                         (unsigned)(s[i + 3] - '0');
            if (v > 0 && v <= 0xff) {
                *p++ = (char)v;
                i += 3;
                continue;
            }
        }
        *p++ = s[i];
    }
    *p = '\0';
    return r;
}

static int parse_uint(const char *s, size_t n, unsigned *ret)
{
    unsigned long v = 0;

    if (n == 0 || n > 9)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -EINVAL;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    *ret = (unsigned)v;
    return 0;
}

static void mount_done(ks_mount *m)
{
    free(m->root);
    free(m->mount_point);
    free(m->fs_type);
    free(m->source);
}

/* Parses one line; -EINVAL when it is not a mountinfo line. */
static int parse_line(const char *line, size_t len, ks_mount *ret)
{
    const char *f[MAX_FIELDS];
    size_t fl[MAX_FIELDS], nf = 0, sep = 0, i = 0;
    const char *colon;
    ks_mount m = {};
    unsigned id;

    /* Split on single spaces: an empty source stays an empty field, as the kernel wrote it. */
    while (i <= len) {
        size_t start = i;
        while (i < len && line[i] != ' ')
            i++;
        if (nf == MAX_FIELDS)
            return -EINVAL;
        f[nf] = line + start;
        fl[nf] = i - start;
        nf++;
        i++;
    }
    /* The separator is the first lone "-" after the six fixed fields. */
    for (i = 6; i < nf; i++)
        if (fl[i] == 1 && f[i][0] == '-') {
            sep = i;
            break;
        }
    if (sep == 0 || nf - sep - 1 < 3)
        return -EINVAL;
    for (i = 0; i < 6; i++)
        if (fl[i] == 0)
            return -EINVAL;
    if (fl[sep + 1] == 0)
        return -EINVAL;
    if (parse_uint(f[0], fl[0], &id) < 0 || parse_uint(f[1], fl[1], &id) < 0)
        return -EINVAL;
    colon = memchr(f[2], ':', fl[2]);
    if (!colon || parse_uint(f[2], (size_t)(colon - f[2]), &m.major) < 0 ||
        parse_uint(colon + 1, fl[2] - (size_t)(colon - f[2]) - 1, &m.minor) < 0)
        return -EINVAL;
    if (f[4][0] != '/')
        return -EINVAL;

    m.root = unescape(f[3], fl[3]);
    m.mount_point = unescape(f[4], fl[4]);
    m.fs_type = unescape(f[sep + 1], fl[sep + 1]);
    m.source = unescape(f[sep + 2], fl[sep + 2]);
    if (!m.root || !m.mount_point || !m.fs_type || !m.source) {
        mount_done(&m);
        return -ENOMEM;
    }
    *ret = m;
    return 0;
}

int ks_mountinfo_parse(const char *text, size_t len, ks_mountinfo *ret)
{
    ks_mountinfo m = {};
    size_t pos = 0, cap = 0, n;
    const char *line;
    int r;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        ks_mount one;

        r = parse_line(line, n, &one);
        if (r == -ENOMEM) {
            ks_mountinfo_done(&m);
            return r;
        }
        if (r < 0)
            continue;
        if (!GREEDY_REALLOC(m.v, cap, m.n + 1)) {
            mount_done(&one);
            ks_mountinfo_done(&m);
            return -ENOMEM;
        }
        m.v[m.n++] = one;
    }
    if (m.n == 0) {
        ks_mountinfo_done(&m);
        return -EBADMSG;
    }
    *ret = m;
    return 0;
}

void ks_mountinfo_done(ks_mountinfo *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        mount_done(&m->v[i]);
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

/* Length of mount point mp when it contains path (component-wise), else 0 (or 1 for "/"). */
static size_t covers(const char *mp, const char *path)
{
    size_t n = strlen(mp);

    while (n > 1 && mp[n - 1] == '/')
        n--;
    if (n == 1 && mp[0] == '/')
        return 1;
    if (strncmp(mp, path, n) != 0)
        return 0;
    if (path[n] != '\0' && path[n] != '/')
        return 0;
    return n;
}

const ks_mount *ks_mountinfo_find(const ks_mountinfo *m, const char *path)
{
    const ks_mount *best = NULL;
    size_t best_len = 0;

    if (!m || !path || path[0] != '/')
        return NULL;
    for (size_t i = 0; i < m->n; i++) {
        size_t l = covers(m->v[i].mount_point, path);
        /* ">=": a later mount on the same point hides the earlier one. */
        if (l > 0 && l >= best_len) {
            best = &m->v[i];
            best_len = l;
        }
    }
    return best;
}

int ks_mountinfo_read(const ks_root *root, ks_mountinfo *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r;

    assert(root);
    assert(ret);
    r = ks_root_read_file(root, "proc/self/mountinfo", MOUNTINFO_MAX, &text, &len);
    if (r < 0)
        return r;
    return ks_mountinfo_parse(text, len, ret);
}
