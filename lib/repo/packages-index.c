/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/basic/util.h"
#include "lib/repo/packages-index.h"

/* The value of "Field: value" when line is that field (case-insensitive name), else NULL. */
static const char *field_value(const char *line, size_t n, const char *field, size_t *ret_n)
{
    size_t fn = strlen(field);
    const char *v;

    if (n <= fn || strncasecmp(line, field, fn) != 0 || line[fn] != ':')
        return NULL;
    v = line + fn + 1;
    n -= fn + 1;
    while (n > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n > 0 && isspace((unsigned char)v[n - 1]))
        n--;
    *ret_n = n;
    return v;
}

int ks_packages_index_scan(const char *text, size_t len, const char *package,
                           ks_packages_index_info *ret)
{
    ks_packages_index_info info = {0};
    size_t pos = 0, n, vn, pn = strlen(package);
    const char *l, *v, *version = NULL;
    bool in_stanza = false, named = false;
    size_t version_n = 0;

    /* A stanza ends at an empty line; its fields may come in any order. */
    for (;;) {
        bool more = ks_next_line(text, len, &pos, &l, &n);
        if (!more || n == 0 || (n == 1 && l[0] == '\r')) {
            if (named && version) {
                free(info.version);
                info.version = strndup(version, version_n);
                if (!info.version)
                    return -ENOMEM;
            }
            named = false;
            version = NULL;
            in_stanza = false;
            if (!more)
                break;
            continue;
        }
        if (l[0] == ' ' || l[0] == '\t')
            continue; /* a continuation line (Description) */
        if ((v = field_value(l, n, "Package", &vn))) {
            if (!in_stanza)
                info.n_packages++;
            in_stanza = true;
            if (vn == pn && memcmp(v, package, pn) == 0) {
                named = true;
                info.found = true;
            }
        } else if ((v = field_value(l, n, "Version", &vn))) {
            version = v;
            version_n = vn;
        }
    }
    *ret = info;
    return 0;
}

void ks_packages_index_info_done(ks_packages_index_info *i)
{
    free(i->version);
    i->version = NULL;
}
