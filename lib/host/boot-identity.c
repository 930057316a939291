/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>

#include "lib/basic/util.h"
#include "lib/host/boot-identity.h"

int ks_boot_id_parse(const char *text, size_t len, char **ret)
{
    char *id;

    assert(text || len == 0);
    assert(ret);
    if (len > 0 && text[len - 1] == '\n')
        len--;
    if (len != 36)
        return -EBADMSG;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? text[i] != '-' : !isxdigit((unsigned char)text[i]))
            return -EBADMSG;
    }
    id = strndup(text, len);
    if (!id)
        return -ENOMEM;
    for (char *s = id; *s; s++)
        *s = (char)tolower((unsigned char)*s);
    *ret = id;
    return 0;
}

int ks_btime_parse(const char *text, size_t len, uint64_t *ret)
{
    const char *line;
    size_t pos = 0, n;

    assert(text || len == 0);
    assert(ret);
    while (ks_next_line(text, len, &pos, &line, &n)) {
        char buf[32];
        unsigned long long v;
        size_t i = 5;

        if (n < 6 || memcmp(line, "btime", 5) != 0 || (line[5] != ' ' && line[5] != '\t'))
            continue;
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        while (n > i && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
            n--;
        if (n - i == 0 || n - i >= sizeof(buf))
            return -EBADMSG;
        memcpy(buf, line + i, n - i);
        buf[n - i] = '\0';
        if (ks_safe_atou64(buf, &v) < 0)
            return -EBADMSG;
        *ret = v;
        return 0;
    }
    return -EBADMSG;
}

int ks_read_boot_id(const ks_root *root, char **ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    assert(root);
    assert(ret);
    r = ks_root_read_file(root, "proc/sys/kernel/random/boot_id", 4096, &text, &len);
    if (r < 0)
        return r;
    return ks_boot_id_parse(text, len, ret);
}

int ks_read_btime(const ks_root *root, uint64_t *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    assert(root);
    assert(ret);
    /* proc/stat grows with the CPU count; a few MiB covers thousands of CPUs. */
    r = ks_root_read_file(root, "proc/stat", 8u << 20, &text, &len);
    if (r < 0)
        return r;
    return ks_btime_parse(text, len, ret);
}
