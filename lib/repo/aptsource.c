/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * apt's sources (sources.list(5)): what the one-line and deb822 parsers share, the files apt
 * reads in its order, and the archive URI match. The parsers are aptsource-list.c and
 * aptsource-deb822.c; the takeover planner is aptsource-plan.c.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "lib/basic/util.h"
#include "lib/repo/aptsource-internal.h"
#include "lib/repo/aptsource.h"

int apt_grow(void **v, size_t n, size_t size)
{
    void *p = reallocarray(*v, n + 1, size);
    if (!p)
        return -ENOMEM;
    *v = p;
    return 0;
}

void apt_source_done(ks_apt_source *e)
{
    free(e->file);
    ks_strv_free(e->types);
    ks_strv_free(e->uris);
    ks_strv_free(e->suites);
    ks_strv_free(e->components);
    free(e->signed_by);
    *e = (ks_apt_source){0};
}

void ks_apt_sources_done(ks_apt_sources *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        apt_source_done(&s->v[i]);
    for (size_t i = 0; i < s->n_bad; i++) {
        free(s->bad[i].file);
        free(s->bad[i].reason);
    }
    free(s->v);
    free(s->bad);
    *s = (ks_apt_sources){0};
}

int apt_add_problem(ks_apt_sources *s, const char *file, unsigned line, const char *fmt, ...)
{
    ks_apt_problem p = {.line = line};
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = vasprintf(&p.reason, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -ENOMEM;
    if (file) {
        p.file = strdup(file);
        if (!p.file) {
            free(p.reason);
            return -ENOMEM;
        }
    }
    if (apt_grow((void **)&s->bad, s->n_bad, sizeof(*s->bad)) < 0) {
        free(p.file);
        free(p.reason);
        return -ENOMEM;
    }
    s->bad[s->n_bad++] = p;
    return 0;
}

/* Takes over e (fields and all) on success. */
int apt_add_source(ks_apt_sources *s, ks_apt_source *e, const char *file)
{
    if (file && !e->file) {
        e->file = strdup(file);
        if (!e->file)
            return -ENOMEM;
    }
    if (apt_grow((void **)&s->v, s->n, sizeof(*s->v)) < 0)
        return -ENOMEM;
    s->v[s->n++] = *e;
    *e = (ks_apt_source){0};
    return 0;
}

bool apt_is_known_type(const char *t)
{
    return streq(t, "deb") || streq(t, "deb-src");
}

/* One word of a one-line entry: blank-separated, "..." quotes blanks (the quotes go). */
int apt_next_word(const char **p, char **ret)
{
    const char *s = *p, *start;
    _cleanup_free_ char *w = NULL;
    size_t n = 0;

    while (*s && isspace((unsigned char)*s))
        s++;
    if (!*s)
        return 0;
    start = s;
    while (*s && !isspace((unsigned char)*s)) {
        if (*s == '"') {
            const char *q = strchr(s + 1, '"');
            if (!q)
                return -EBADMSG;
            s = q;
        }
        s++;
    }
    w = malloc((size_t)(s - start) + 1);
    if (!w)
        return -ENOMEM;
    for (const char *c = start; c < s; c++)
        if (*c != '"')
            w[n++] = *c;
    w[n] = '\0';
    *p = s;
    *ret = TAKE_PTR(w);
    return 1;
}

int apt_strv_push_word(char ***l, char **w)
{
    int r = ks_strv_push(l, *w);
    if (r < 0)
        return r;
    *w = NULL;
    return 0;
}

/* apt's rule for files in sources.list.d (run-parts style names, the right extension). */
bool apt_source_part_name(const char *name, ks_apt_format *ret)
{
    if (name[0] == '.')
        return false;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != ':' && *c != '.')
            return false;
    if (ks_endswith(name, ".list") && strlen(name) > 5) {
        *ret = KS_APT_FORMAT_LIST;
        return true;
    }
    if (ks_endswith(name, ".sources") && strlen(name) > 8) {
        *ret = KS_APT_FORMAT_DEB822;
        return true;
    }
    return false;
}

void apt_source_files_free(source_file *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
}

int apt_list_source_files(const ks_root *root, source_file **ret, size_t *ret_n)
{
    _cleanup_strv_free_ char **names = NULL;
    source_file *v = NULL;
    size_t n = 0;
    struct stat st;
    int r;

    if (ks_root_stat(root, SOURCES_LIST, &st) == 0 && S_ISREG(st.st_mode)) {
        if (apt_grow((void **)&v, n, sizeof(*v)) < 0)
            return -ENOMEM;
        v[n].path = strdup(SOURCES_LIST);
        v[n].format = KS_APT_FORMAT_LIST;
        if (!v[n++].path)
            goto oom;
    }
    r = ks_root_list_dir(root, SOURCES_DIR, &names);
    if (r < 0 && r != -ENOENT && r != -ENOTDIR) {
        apt_source_files_free(v, n);
        return r;
    }
    for (char **nm = names; nm && *nm; nm++) {
        _cleanup_free_ char *p = NULL;
        ks_apt_format f;

        if (!apt_source_part_name(*nm, &f))
            continue;
        p = ks_asprintf("%s/%s", SOURCES_DIR, *nm);
        if (!p)
            goto oom;
        if (ks_root_stat(root, p, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (apt_grow((void **)&v, n, sizeof(*v)) < 0)
            goto oom;
        v[n].path = TAKE_PTR(p);
        v[n++].format = f;
    }
    *ret = v;
    *ret_n = n;
    return 0;
oom:
    apt_source_files_free(v, n);
    return -ENOMEM;
}

int apt_parse_text(const char *text, size_t len, const char *file, ks_apt_format f,
                   ks_apt_sources *s)
{
    if (f == KS_APT_FORMAT_DEB822)
        return ks_aptsource_parse_deb822(text, len, file, s);
    return ks_aptsource_parse_list(text, len, file, s);
}

int ks_aptsource_read(const ks_root *root, ks_apt_sources *ret)
{
    _cleanup_apt_sources_ ks_apt_sources s = {0};
    source_file *files = NULL;
    size_t n = 0;
    int r;

    r = apt_list_source_files(root, &files, &n);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n && r >= 0; i++) {
        _cleanup_free_ char *text = NULL;
        size_t len;

        r = ks_root_read_file(root, files[i].path, SOURCE_FILE_MAX, &text, &len);
        if (r == -ENOENT) {
            r = 0;
            continue;
        }
        if (r >= 0)
            r = apt_parse_text(text, len, files[i].path, files[i].format, &s);
    }
    apt_source_files_free(files, n);
    if (r < 0)
        return r;
    *ret = TAKE_STRUCT(s);
    return 0;
}

/*
 * [scheme, host, path) of a URI for comparison: scheme http and https count as one, an apt
 * transport prefix ("tor+") is dropped, trailing slashes are dropped.
 */
static bool uri_split(const char *uri, const char **scheme, size_t *scheme_n, const char **host,
                      size_t *host_n, const char **path, size_t *path_n)
{
    const char *sep = strstr(uri, "://"), *h, *p, *plus;
    size_t pn;

    if (!sep)
        return false;
    *scheme = uri;
    plus = memchr(uri, '+', (size_t)(sep - uri));
    if (plus)
        *scheme = plus + 1;
    *scheme_n = (size_t)(sep - *scheme);
    h = sep + 3;
    p = h + strcspn(h, "/");
    *host = h;
    *host_n = (size_t)(p - h);
    pn = strlen(p);
    while (pn > 0 && p[pn - 1] == '/')
        pn--;
    *path = p;
    *path_n = pn;
    return *host_n > 0;
}

static bool scheme_is_http(const char *s, size_t n)
{
    return (n == 4 && strncasecmp(s, "http", 4) == 0) ||
           (n == 5 && strncasecmp(s, "https", 5) == 0);
}

/* Length of s without its trailing slashes. */
static size_t trimmed_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '/')
        n--;
    return n;
}

static bool uri_same(const char *a, const char *b)
{
    const char *as, *ah, *ap, *bs, *bh, *bp;
    size_t asn, ahn, apn, bsn, bhn, bpn;

    /* file:/srv/repo and copy:/x have no host: the same text, trailing slashes aside. */
    if (!strstr(a, "://") || !strstr(b, "://"))
        return trimmed_len(a) == trimmed_len(b) && memcmp(a, b, trimmed_len(a)) == 0;
    if (!uri_split(a, &as, &asn, &ah, &ahn, &ap, &apn) ||
        !uri_split(b, &bs, &bsn, &bh, &bhn, &bp, &bpn))
        return false;
    if (!(scheme_is_http(as, asn) && scheme_is_http(bs, bsn)) &&
        !(asn == bsn && strncasecmp(as, bs, asn) == 0))
        return false;
    return ahn == bhn && strncasecmp(ah, bh, ahn) == 0 && apn == bpn && memcmp(ap, bp, apn) == 0;
}

bool ks_apt_uri_matches(const char *uri, char *const *archive_uris)
{
    static char *const dflt[] = {(char *)KS_APT_XANMOD_URI, NULL};
    if (!uri)
        return false;
    for (char *const *a = archive_uris ? archive_uris : dflt; *a; a++)
        if (uri_same(uri, *a))
            return true;
    return false;
}

bool ks_apt_source_is_archive(const ks_apt_source *s, char *const *archive_uris)
{
    for (char **u = s->uris; u && *u; u++)
        if (ks_apt_uri_matches(*u, archive_uris))
            return true;
    return false;
}
