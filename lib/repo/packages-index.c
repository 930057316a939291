/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/basic/debversion.h"
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

#define IMAGE_PREFIX "linux-image-"

/* A release as a package name may carry it: not empty, no blank, no separator of Depends. */
static char *release_of(const char *name, size_t n)
{
    size_t pl = strlen(IMAGE_PREFIX);

    if (n <= pl || strncmp(name, IMAGE_PREFIX, pl) != 0)
        return NULL;
    for (size_t i = pl; i < n; i++)
        if (isspace((unsigned char)name[i]) || strchr(",|()<>=:", name[i]))
            return NULL;
    return strndup(name + pl, n - pl);
}

char *ks_packages_depends_release(const char *depends, size_t n)
{
    size_t i = 0;

    /* "a (>= 1), b | c, linux-image-R:amd64": each name up to a blank, '(', ',', '|' or ':'. */
    while (i < n) {
        size_t start, end;
        char *r;

        while (i < n &&
               (isspace((unsigned char)depends[i]) || depends[i] == ',' || depends[i] == '|'))
            i++;
        start = i;
        while (i < n && !isspace((unsigned char)depends[i]) && !strchr(",|(:", depends[i]))
            i++;
        end = i;
        r = release_of(depends + start, end - start);
        if (r)
            return r;
        /* the rest of this alternative: a version constraint, an architecture */
        while (i < n && depends[i] != ',' && depends[i] != '|')
            i++;
    }
    return NULL;
}

/* The stanza's candidate: version and what it depends on (pointers into the text). */
typedef struct stanza {
    bool named;
    const char *version, *depends;
    size_t version_n, depends_n;
} stanza;

/* Takes the stanza when it names the package with a higher version than the one kept. */
static int take_stanza(ks_packages_index_info *info, const stanza *st, const char *package)
{
    _cleanup_free_ char *v = NULL;

    if (!st->named || !st->version)
        return 0;
    v = strndup(st->version, st->version_n);
    if (!v)
        return -ENOMEM;
    if (info->version && ks_deb_version_compare(v, info->version) <= 0)
        return 0;
    free(info->version);
    info->version = TAKE_PTR(v);
    free(info->release);
    info->release = release_of(package, strlen(package));
    if (!info->release && st->depends)
        info->release = ks_packages_depends_release(st->depends, st->depends_n);
    return 0;
}

int ks_packages_index_scan(const char *text, size_t len, const char *package,
                           ks_packages_index_info *ret)
{
    ks_packages_index_info info = {0};
    size_t pos = 0, n, vn, pn = strlen(package);
    const char *l, *v;
    bool in_stanza = false;
    stanza st = {0};
    int r;

    /* A stanza ends at an empty line; its fields may come in any order. */
    for (;;) {
        bool more = ks_next_line(text, len, &pos, &l, &n);
        if (!more || n == 0 || (n == 1 && l[0] == '\r')) {
            r = take_stanza(&info, &st, package);
            if (r < 0) {
                ks_packages_index_info_done(&info);
                return r;
            }
            st = (stanza){0};
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
                st.named = true;
                info.found = true;
            }
        } else if ((v = field_value(l, n, "Version", &vn))) {
            st.version = v;
            st.version_n = vn;
        } else if ((v = field_value(l, n, "Depends", &vn))) {
            st.depends = v;
            st.depends_n = vn;
        }
    }
    *ret = info;
    return 0;
}

void ks_packages_index_info_done(ks_packages_index_info *i)
{
    free(i->version);
    free(i->release);
    i->version = NULL;
    i->release = NULL;
}

void ks_packages_index_merge(ks_packages_index_info *into, ks_packages_index_info *from)
{
    into->n_packages += from->n_packages;
    into->found = into->found || from->found;
    if (from->version &&
        (!into->version || ks_deb_version_compare(from->version, into->version) > 0)) {
        free(into->version);
        free(into->release);
        into->version = TAKE_PTR(from->version);
        into->release = TAKE_PTR(from->release);
    }
    ks_packages_index_info_done(from);
}
