/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/basic/alloc-util.h"
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

/* One stanza's fields of interest, pointing into the text (not NUL-terminated). */
typedef struct stanza {
    const char *package, *version, *depends;
    size_t package_n, version_n, depends_n;
} stanza;

typedef int (*stanza_fn)(void *userdata, const stanza *s);

/*
 * Calls fn for every stanza with a Package: field, in file order. A stanza ends at an empty
 * line; its fields may come in any order; continuation lines (Description) are skipped.
 */
static int for_each_stanza(const char *text, size_t len, stanza_fn fn, void *userdata)
{
    stanza s = {0};
    size_t pos = 0, n, vn;
    const char *l, *v;
    int r;

    for (;;) {
        bool more = ks_next_line(text, len, &pos, &l, &n);
        if (!more || n == 0 || (n == 1 && l[0] == '\r')) {
            if (s.package) {
                r = fn(userdata, &s);
                if (r < 0)
                    return r;
            }
            s = (stanza){0};
            if (!more)
                return 0;
            continue;
        }
        if (l[0] == ' ' || l[0] == '\t')
            continue;
        if ((v = field_value(l, n, "Package", &vn)))
            s.package = v, s.package_n = vn;
        else if ((v = field_value(l, n, "Version", &vn)))
            s.version = v, s.version_n = vn;
        else if ((v = field_value(l, n, "Depends", &vn)))
            s.depends = v, s.depends_n = vn;
    }
}

static bool names(const stanza *s, const char *package)
{
    size_t pn = strlen(package);
    return s->package_n == pn && memcmp(s->package, package, pn) == 0;
}

typedef struct scan_ctx {
    const char *package;
    ks_packages_index_info *info;
} scan_ctx;

static int scan_one(void *userdata, const stanza *s)
{
    scan_ctx *c = userdata;

    c->info->n_packages++;
    if (!names(s, c->package))
        return 0;
    c->info->found = true;
    if (s->version) {
        char *v = strndup(s->version, s->version_n);
        if (!v)
            return -ENOMEM;
        free(c->info->version);
        c->info->version = v;
    }
    return 0;
}

int ks_packages_index_scan(const char *text, size_t len, const char *package,
                           ks_packages_index_info *ret)
{
    ks_packages_index_info info = {0};
    scan_ctx c = {.package = package, .info = &info};
    int r;

    r = for_each_stanza(text, len, scan_one, &c);
    if (r < 0) {
        ks_packages_index_info_done(&info);
        return r;
    }
    *ret = info;
    return 0;
}

void ks_packages_index_info_done(ks_packages_index_info *i)
{
    free(i->version);
    i->version = NULL;
}

typedef struct find_ctx {
    const char *package;
    ks_packages_stanzas *list;
} find_ctx;

static int find_one(void *userdata, const stanza *s)
{
    find_ctx *c = userdata;
    ks_packages_stanza *x;

    if (!names(s, c->package) || !s->version)
        return 0;
    if (!GREEDY_REALLOC0(c->list->v, c->list->cap, c->list->n + 1))
        return -ENOMEM;
    x = &c->list->v[c->list->n];
    x->version = strndup(s->version, s->version_n);
    x->depends = s->depends ? strndup(s->depends, s->depends_n) : NULL;
    if (!x->version || (s->depends && !x->depends)) {
        free(x->version);
        free(x->depends);
        *x = (ks_packages_stanza){0};
        return -ENOMEM;
    }
    c->list->n++;
    return 0;
}

int ks_packages_index_find(const char *text, size_t len, const char *package,
                           ks_packages_stanzas *list)
{
    find_ctx c = {.package = package, .list = list};

    assert(text || len == 0);
    assert(package);
    assert(list);
    return for_each_stanza(text, len, find_one, &c);
}

void ks_packages_stanzas_done(ks_packages_stanzas *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].version);
        free(l->v[i].depends);
    }
    free(l->v);
    *l = (ks_packages_stanzas){0};
}

int ks_packages_depends_image(const char *depends, char **ret_release)
{
    const char *p = depends;

    assert(ret_release);
    /* "a (>= 1), b | c, linux-image-R (= V)": each comma-separated relation, each of its
     * alternatives; the first name that is a kernel image counts. */
    while (p && *p) {
        size_t n;
        const char *name, *rel;

        while (*p == ' ' || *p == '\t' || *p == ',' || *p == '|')
            p++;
        name = p;
        n = strcspn(p, " \t,|(");
        p += n;
        /* skip a version constraint and an architecture qualifier */
        while (*p && *p != ',' && *p != '|')
            p++;
        rel =
            n > strlen("linux-image-") && strncmp(name, "linux-image-", 12) == 0 ? name + 12 : NULL;
        if (!rel)
            continue;
        n -= 12;
        if (memchr(rel, ':', n))
            n = (size_t)((const char *)memchr(rel, ':', n) - rel); /* "linux-image-R:amd64" */
        if (n == 0)
            continue;
        *ret_release = strndup(rel, n);
        return *ret_release ? 1 : -ENOMEM;
    }
    return 0;
}

/* apt's QuoteString with URItoFileName's set of bad characters, '/' turned into '_'; o has
 * room for three bytes per byte of s. Returns the end of what it wrote. */
static char *quote_into(char *o, const char *s)
{
    static const char bad[] = "\\|{}[]<>\"^~_=!@#$%^&*", hex[] = "0123456789abcdef";

    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || strchr(bad, *p)) {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 0xf];
        } else
            *o++ = *p == '/' ? '_' : (char)*p;
    return o;
}

char *ks_apt_lists_prefix(const char *uri, const char *suite)
{
    const char *rest = uri, *colon, *at, *slash;
    bool flat = ks_endswith(suite, "/");
    char *buf, *o;

    assert(uri);
    assert(suite);
    /* The scheme goes ("http:", "file:"), then "//" and a "user:password@" before the host. */
    colon = strchr(uri, ':');
    if (colon && strcspn(uri, "/") > (size_t)(colon - uri))
        rest = colon + 1;
    if (ks_startswith(rest, "//")) {
        rest += 2;
        slash = rest + strcspn(rest, "/");
        at = memchr(rest, '@', (size_t)(slash - rest));
        if (at)
            rest = at + 1;
    }
    /* built in memory, not through stdio: nothing here is printed */
    buf = malloc(3 * (strlen(rest) + strlen(suite)) + sizeof("_dists__"));
    if (!buf)
        return NULL;
    o = quote_into(buf, rest);
    if (!ks_endswith(rest, "/"))
        *o++ = '_';
    if (!flat)
        o = stpcpy(o, "dists_");
    o = quote_into(o, suite);
    if (!flat)
        *o++ = '_';
    *o = '\0';
    return buf;
}
