/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * apt's sources (sources.list(5)): the one-line format of sources.list and *.list, and the
 * deb822 stanzas of *.sources; and the takeover of one archive's sources by the deb822 source
 * and binary keyring kswap writes, so that apt never sees two Signed-By values for it.
 */
#include <ctype.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>

#include "lib/repo/aptsource.h"
#include "lib/basic/string-table.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

#define SOURCES_LIST "etc/apt/sources.list"
#define SOURCES_DIR "etc/apt/sources.list.d"
#define SOURCE_FILE_MAX (16 * 1024 * 1024)

static int grow(void **v, size_t n, size_t size)
{
    void *p = reallocarray(*v, n + 1, size);
    if (!p)
        return -ENOMEM;
    *v = p;
    return 0;
}

static void source_done(ks_apt_source *e)
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
        source_done(&s->v[i]);
    for (size_t i = 0; i < s->n_bad; i++) {
        free(s->bad[i].file);
        free(s->bad[i].reason);
    }
    free(s->v);
    free(s->bad);
    *s = (ks_apt_sources){0};
}

static int add_problem(ks_apt_sources *s, const char *file, unsigned line, const char *fmt, ...)
    _printf_(4, 5);
static int add_problem(ks_apt_sources *s, const char *file, unsigned line, const char *fmt, ...)
{
    ks_apt_problem p = {.line = line};
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vasprintf(&p.reason, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -ENOMEM;
    if (file) {
        p.file = strdup(file);
        if (!p.file) {
            free(p.reason);
            return -ENOMEM;
        }
    }
    if (grow((void **)&s->bad, s->n_bad, sizeof(*s->bad)) < 0) {
        free(p.file);
        free(p.reason);
        return -ENOMEM;
    }
    s->bad[s->n_bad++] = p;
    return 0;
}

/* Takes over e (fields and all) on success. */
static int add_source(ks_apt_sources *s, ks_apt_source *e, const char *file)
{
    if (file && !e->file) {
        e->file = strdup(file);
        if (!e->file)
            return -ENOMEM;
    }
    if (grow((void **)&s->v, s->n, sizeof(*s->v)) < 0)
        return -ENOMEM;
    s->v[s->n++] = *e;
    *e = (ks_apt_source){0};
    return 0;
}

static bool is_known_type(const char *t)
{
    return streq(t, "deb") || streq(t, "deb-src");
}

/* One word of a one-line entry: blank-separated, "..." quotes blanks (the quotes go). */
static int next_word(const char **p, char **ret)
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

static int strv_push_word(char ***l, char **w)
{
    int k = ks_strv_push(l, *w);
    if (k < 0)
        return k;
    *w = NULL;
    return 0;
}

/* Parses one line (NUL-terminated, comment already cut); 0, or a problem is recorded. */
static int parse_list_entry(const char *line, const char *file, unsigned lineno, ks_apt_sources *s)
{
    _cleanup_(source_done) ks_apt_source e = {
        .format = KS_APT_FORMAT_LIST, .line_first = lineno, .line_last = lineno, .enabled = true};
    _cleanup_free_ char *type = NULL, *uri = NULL, *suite = NULL, *w = NULL;
    const char *p = line;
    int k;

    k = next_word(&p, &type);
    if (k <= 0)
        return k == -ENOMEM ? k : add_problem(s, file, lineno, "malformed entry (type)");
    if (!is_known_type(type))
        return add_problem(s, file, lineno, "type '%s' is not known", type);
    if (ks_strv_extend(&e.types, type) < 0)
        return -ENOMEM;

    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p == '[') {
        const char *end = strchr(p, ']');
        _cleanup_strv_free_ char **opts = NULL;
        _cleanup_free_ char *inner = NULL;

        if (!end)
            return add_problem(s, file, lineno, "malformed entry ([option] unparsable)");
        inner = strndup(p + 1, (size_t)(end - p - 1));
        if (!inner)
            return -ENOMEM;
        if (ks_strv_split(inner, " \t\r", &opts) < 0)
            return -ENOMEM;
        for (char **o = opts; o && *o; o++) {
            char *eq = strchr(*o, '=');
            if (!eq)
                return add_problem(s, file, lineno, "malformed entry ([option] not assignment)");
            if (eq == *o)
                return add_problem(s, file, lineno, "malformed entry ([option] no key)");
            if (!eq[1])
                return add_problem(s, file, lineno, "malformed entry ([option] no value)");
            *eq = '\0';
            if (strcasecmp(*o, "signed-by") == 0) {
                free(e.signed_by);
                e.signed_by = strdup(eq + 1);
                if (!e.signed_by)
                    return -ENOMEM;
            }
        }
        p = end + 1;
    }

    k = next_word(&p, &uri);
    if (k < 0 && k != -EBADMSG)
        return k;
    if (k <= 0)
        return add_problem(s, file, lineno, "malformed entry (URI)");
    if (!strchr(uri, ':'))
        return add_problem(s, file, lineno, "malformed entry (URI parse)");
    k = next_word(&p, &suite);
    if (k < 0 && k != -EBADMSG)
        return k;
    if (k <= 0)
        return add_problem(s, file, lineno, "malformed entry (Suite)");
    if (strv_push_word(&e.uris, &uri) < 0)
        return -ENOMEM;
    while ((k = next_word(&p, &w)) > 0)
        if (strv_push_word(&e.components, &w) < 0)
            return -ENOMEM;
    if (k == -ENOMEM)
        return k;
    if (k < 0)
        return add_problem(s, file, lineno, "malformed entry (Component)");
    /* An exact path ("./") takes no component; a suite needs at least one. */
    if (ks_endswith(suite, "/") && e.components)
        return add_problem(s, file, lineno, "malformed entry (absolute Suite Component)");
    if (!ks_endswith(suite, "/") && !e.components)
        return add_problem(s, file, lineno, "malformed entry (Component)");
    if (strv_push_word(&e.suites, &suite) < 0)
        return -ENOMEM;
    return add_source(s, &e, file);
}

int ks_aptsource_parse_list(const char *text, size_t len, const char *file, ks_apt_sources *sources)
{
    size_t pos = 0, n;
    const char *l;
    unsigned lineno = 0;
    int k;

    while (ks_next_line(text, len, &pos, &l, &n)) {
        _cleanup_free_ char *buf = NULL;
        char *c;

        lineno++;
        buf = strndup(l, n);
        if (!buf)
            return -ENOMEM;
        if (strlen(buf) != n) {
            k = add_problem(sources, file, lineno, "NUL byte in line");
            if (k < 0)
                return k;
            continue;
        }
        /* A comment starts at '#', except inside [options] (as apt does it). */
        for (c = buf; *c && *c != '#'; c++)
            if (*c == '[') {
                char *e = strchr(c + 1, ']');
                if (!e)
                    break;
                c = e;
            }
        if (*c == '#')
            *c = '\0';
        if (!*ks_strstrip(buf))
            continue;
        k = parse_list_entry(buf, file, lineno, sources);
        if (k < 0)
            return k;
    }
    return 0;
}

/* One field of a stanza; continuation lines are joined with '\n' (" ." is an empty line). */
typedef struct field {
    char *name;
    char *value;
} field;

typedef struct stanza {
    field *f;
    size_t n;
    unsigned first, last;
    char *error; /* the first syntax problem, which makes apt refuse the file */
    unsigned error_line;
} stanza;

static void stanza_reset(stanza *st)
{
    for (size_t i = 0; i < st->n; i++) {
        free(st->f[i].name);
        free(st->f[i].value);
    }
    free(st->f);
    free(st->error);
    *st = (stanza){0};
}

static const char *stanza_get(const stanza *st, const char *name)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcasecmp(st->f[i].name, name) == 0)
            return st->f[i].value;
    return NULL;
}

/* apt's StringToBool; -1 when it is neither. */
static int parse_bool(const char *v)
{
    static const char *const yes[] = {"yes", "true", "with", "on", "enable", "1"};
    static const char *const no[] = {"no", "false", "without", "off", "disable", "0"};
    for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
    for (size_t i = 0; i < ARRAY_SIZE(no); i++)
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    return -1;
}

static int split_field(const stanza *st, const char *name, char ***ret)
{
    const char *v = stanza_get(st, name);
    *ret = NULL;
    if (!v)
        return 0;
    return ks_strv_split(v, " \t\r\n", ret);
}

static int finish_stanza(stanza *st, const char *file, ks_apt_sources *s)
{
    _cleanup_(source_done) ks_apt_source e = {.format = KS_APT_FORMAT_DEB822};
    const char *v;
    int k;

    if (st->n == 0 && !st->error)
        return 0;
    if (st->error) {
        k = add_problem(s, file, st->error_line, "%s", st->error);
        stanza_reset(st);
        return k;
    }
    e.line_first = st->first;
    e.line_last = st->last;
    v = stanza_get(st, "Enabled");
    e.enabled = !v || parse_bool(v) != 0;
    if (split_field(st, "Types", &e.types) < 0 || split_field(st, "URIs", &e.uris) < 0 ||
        split_field(st, "Suites", &e.suites) < 0 ||
        split_field(st, "Components", &e.components) < 0)
        return -ENOMEM;
    v = stanza_get(st, "Signed-By");
    if (v) {
        e.signed_by = strdup(v);
        if (!e.signed_by)
            return -ENOMEM;
    }
    /* apt skips a disabled stanza before it checks anything. */
    if (e.enabled) {
        const char *why = NULL;
        if (!e.types)
            why = "malformed stanza (type)";
        for (char **t = e.types; t && *t && !why; t++)
            if (!is_known_type(*t))
                why = "type is not known";
        if (!why && !e.uris)
            why = "malformed entry (URI)";
        for (char **u = e.uris; u && *u && !why; u++)
            if (!strchr(*u, ':'))
                why = "malformed entry (URI parse)";
        if (!why && !e.suites)
            why = "malformed entry (Suite)";
        for (char **x = e.suites; x && *x && !why; x++) {
            if (ks_endswith(*x, "/") && e.components)
                why = "malformed entry (absolute Suite Component)";
            if (!ks_endswith(*x, "/") && !e.components)
                why = "malformed entry (Component)";
        }
        if (why) {
            k = add_problem(s, file, st->first, "%s", why);
            stanza_reset(st);
            return k;
        }
    }
    stanza_reset(st);
    return add_source(s, &e, file);
}

static int stanza_error(stanza *st, unsigned line, const char *why)
{
    if (st->error)
        return 0;
    st->error = strdup(why);
    st->error_line = line;
    return st->error ? 0 : -ENOMEM;
}

int ks_aptsource_parse_deb822(const char *text, size_t len, const char *file,
                              ks_apt_sources *sources)
{
    stanza st = {0};
    size_t pos = 0, n;
    const char *l;
    unsigned lineno = 0;
    int k = 0;

    while (k >= 0 && ks_next_line(text, len, &pos, &l, &n)) {
        const char *colon;
        size_t m = n;

        lineno++;
        while (m > 0 && (l[m - 1] == '\r' || l[m - 1] == ' ' || l[m - 1] == '\t'))
            m--;
        if (memchr(l, '\0', n)) {
            k = stanza_error(&st, lineno, "NUL byte in line");
            st.first = st.first ? st.first : lineno;
            continue;
        }
        if (m > 0 && l[0] == '#')
            continue;
        if (m == 0) {
            k = finish_stanza(&st, file, sources);
            continue;
        }
        if (l[0] == ' ' || l[0] == '\t') {
            field *f;
            size_t a = 0, old;
            char *nv;

            if (st.n == 0) {
                k = stanza_error(&st, lineno, "continuation line without a field");
                st.first = st.first ? st.first : lineno;
                continue;
            }
            while (a < m && (l[a] == ' ' || l[a] == '\t'))
                a++;
            f = &st.f[st.n - 1];
            old = strlen(f->value);
            nv = realloc(f->value, old + 1 + (m - a) + 1);
            if (!nv) {
                k = -ENOMEM;
                break;
            }
            f->value = nv;
            if (m - a == 1 && l[a] == '.') /* " ." stands for an empty line */
                a = m;
            nv[old] = '\n';
            memcpy(nv + old + 1, l + a, m - a);
            nv[old + 1 + (m - a)] = '\0';
            st.last = lineno;
            continue;
        }
        colon = memchr(l, ':', m);
        if (!colon || colon == l || memchr(l, ' ', (size_t)(colon - l)) ||
            memchr(l, '\t', (size_t)(colon - l))) {
            k = stanza_error(&st, lineno, "line is neither a field nor a comment");
            st.first = st.first ? st.first : lineno;
            continue;
        }
        if (grow((void **)&st.f, st.n, sizeof(*st.f)) < 0) {
            k = -ENOMEM;
            break;
        }
        {
            const char *v = colon + 1;
            size_t vn = m - (size_t)(v - l);
            while (vn > 0 && (*v == ' ' || *v == '\t'))
                v++, vn--;
            st.f[st.n].name = strndup(l, (size_t)(colon - l));
            st.f[st.n].value = strndup(v, vn);
            if (!st.f[st.n].name || !st.f[st.n].value) {
                free(st.f[st.n].name);
                free(st.f[st.n].value);
                k = -ENOMEM;
                break;
            }
            st.n++;
        }
        if (!st.first)
            st.first = lineno;
        st.last = lineno;
    }
    if (k >= 0)
        k = finish_stanza(&st, file, sources);
    stanza_reset(&st);
    return k < 0 ? k : 0;
}

/* apt's rule for files in sources.list.d (run-parts style names, the right extension). */
static bool source_part_name(const char *name, ks_apt_format *ret)
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

/* The files apt reads, in its order, with their format. */
typedef struct source_file {
    char *path;
    ks_apt_format format;
} source_file;

static void source_files_free(source_file *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
}

static int list_source_files(const ks_root *root, source_file **ret, size_t *ret_n)
{
    _cleanup_strv_free_ char **names = NULL;
    source_file *v = NULL;
    size_t n = 0;
    struct stat st;
    int k;

    if (ks_root_stat(root, SOURCES_LIST, &st) == 0 && S_ISREG(st.st_mode)) {
        if (grow((void **)&v, n, sizeof(*v)) < 0)
            return -ENOMEM;
        v[n].path = strdup(SOURCES_LIST);
        v[n].format = KS_APT_FORMAT_LIST;
        if (!v[n++].path)
            goto oom;
    }
    k = ks_root_list_dir(root, SOURCES_DIR, &names);
    if (k < 0 && k != -ENOENT && k != -ENOTDIR) {
        source_files_free(v, n);
        return k;
    }
    for (char **nm = names; nm && *nm; nm++) {
        _cleanup_free_ char *p = NULL;
        ks_apt_format f;

        if (!source_part_name(*nm, &f))
            continue;
        p = ks_asprintf("%s/%s", SOURCES_DIR, *nm);
        if (!p)
            goto oom;
        if (ks_root_stat(root, p, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (grow((void **)&v, n, sizeof(*v)) < 0)
            goto oom;
        v[n].path = TAKE_PTR(p);
        v[n++].format = f;
    }
    *ret = v;
    *ret_n = n;
    return 0;
oom:
    source_files_free(v, n);
    return -ENOMEM;
}

static int parse_text(const char *text, size_t len, const char *file, ks_apt_format f,
                      ks_apt_sources *s)
{
    if (f == KS_APT_FORMAT_DEB822)
        return ks_aptsource_parse_deb822(text, len, file, s);
    return ks_aptsource_parse_list(text, len, file, s);
}

int ks_aptsource_read(const ks_root *root, ks_apt_sources *ret)
{
    ks_apt_sources s = {0};
    source_file *files = NULL;
    size_t n = 0;
    int k;

    k = list_source_files(root, &files, &n);
    if (k < 0)
        return k;
    for (size_t i = 0; i < n && k >= 0; i++) {
        _cleanup_free_ char *text = NULL;
        size_t len;

        k = ks_root_read_file(root, files[i].path, SOURCE_FILE_MAX, &text, &len);
        if (k == -ENOENT) {
            k = 0;
            continue;
        }
        if (k >= 0)
            k = parse_text(text, len, files[i].path, files[i].format, &s);
    }
    source_files_free(files, n);
    if (k < 0) {
        ks_apt_sources_done(&s);
        return k;
    }
    *ret = s;
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

static bool uri_same(const char *a, const char *b)
{
    const char *as, *ah, *ap, *bs, *bh, *bp;
    size_t asn, ahn, apn, bsn, bhn, bpn;

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

/* Changes. */

static void change_done(ks_apt_change *c)
{
    free(c->path);
    free(c->new_path);
    free(c->data);
    free(c->old_data);
    free(c->made_dir);
    free(c->what);
    *c = (ks_apt_change){0};
}

void ks_apt_changes_done(ks_apt_changes *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        change_done(&c->v[i]);
    free(c->v);
    *c = (ks_apt_changes){0};
}

static const char *const ks_apt_change_kind_table[_KS_APT_CHANGE_KIND_MAX] = {
    [KS_APT_CHANGE_WRITE] = "write",
    [KS_APT_CHANGE_RENAME] = "rename",
    [KS_APT_CHANGE_REMOVE] = "remove",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_apt_change_kind, ks_apt_change_kind);

static int add_change(ks_apt_changes *l, ks_apt_change *c)
{
    if (grow((void **)&l->v, l->n, sizeof(*l->v)) < 0)
        return -ENOMEM;
    l->v[l->n++] = *c;
    *c = (ks_apt_change){0};
    return 0;
}

/* Fills old_exists/old_data/old_mode from the file as it is now. */
static int snapshot_old(const ks_root *root, ks_apt_change *c)
{
    struct stat st;
    int k;

    k = ks_root_stat(root, c->path, &st);
    if (k == -ENOENT)
        return 0;
    if (k < 0)
        return k;
    if (!S_ISREG(st.st_mode))
        return -EISDIR;
    k = ks_root_read_file(root, c->path, SOURCE_FILE_MAX, &c->old_data, &c->old_len);
    if (k < 0)
        return k;
    c->old_exists = true;
    c->old_mode = st.st_mode & 07777;
    return 0;
}

/* The topmost folder of path that does not exist (NULL when its folder exists). */
static int missing_dir(const ks_root *root, const char *path, char **ret)
{
    _cleanup_free_ char *p = strdup(path);
    char *found = NULL, *slash;

    if (!p)
        return -ENOMEM;
    while ((slash = strrchr(p, '/')) && slash != p) {
        *slash = '\0';
        if (ks_root_exists(root, p))
            break;
        free(found);
        found = strdup(p);
        if (!found)
            return -ENOMEM;
    }
    *ret = found;
    return 0;
}

/* Removes the empty folders between path's folder and top (inclusive) that kswap made. */
static void remove_made_dirs(const ks_root *root, const char *path, const char *top)
{
    _cleanup_free_ char *p = strdup(path);
    char *slash;

    if (!p || !top)
        return;
    while ((slash = strrchr(p, '/')) && slash != p) {
        _cleanup_free_ char *parent = NULL, *base = NULL;
        _cleanup_close_ int dfd = -1;
        char *s2;

        *slash = '\0';
        if (!ks_startswith(p, top))
            return;
        parent = strdup(p);
        if (!parent)
            return;
        s2 = strrchr(parent, '/');
        if (s2) {
            base = strdup(s2 + 1);
            *s2 = '\0';
        } else {
            base = strdup(parent);
            strcpy(parent, ".");
        }
        if (!base)
            return;
        dfd = ks_root_open_at(root, parent, O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0 || unlinkat(dfd, base, AT_REMOVEDIR) < 0)
            return; /* not empty (someone else's files), or gone: stop */
        fsync(dfd);
        if (streq(p, top))
            return;
    }
}

/* Plans writing data to path unless it holds exactly that already. */
static int plan_write(const ks_root *root, ks_apt_changes *l, const char *path, const void *data,
                      size_t len, mode_t mode, const char *what)
{
    ks_apt_change c = {.kind = KS_APT_CHANGE_WRITE, .mode = mode};
    int k;

    c.path = strdup(path);
    c.what = strdup(what);
    c.data = malloc(len ? len : 1);
    if (!c.path || !c.what || !c.data) {
        change_done(&c);
        return -ENOMEM;
    }
    memcpy(c.data, data, len);
    c.len = len;
    k = missing_dir(root, path, &c.made_dir);
    if (k >= 0)
        k = snapshot_old(root, &c);
    if (k >= 0 && c.old_exists && c.old_len == len && memcmp(c.old_data, data, len) == 0 &&
        c.old_mode == mode) {
        change_done(&c);
        return 0;
    }
    if (k >= 0)
        k = add_change(l, &c);
    change_done(&c);
    return k;
}

static int source_text(const ks_apt_takeover *t, char **ret)
{
    const char *uri = t->uri ? t->uri : KS_APT_XANMOD_URI;
    char *s = ks_asprintf(KS_APT_SOURCE_MARKER ": the XanMod kernel archive. "
                                               "`kswap rollback --purge` removes it.\n"
                                               "Types: deb\n"
                                               "URIs: %s\n"
                                               "Suites: %s\n"
                                               "Components: %s\n"
                                               "Signed-By: /%s\n",
                          uri, t->suite, t->component ? t->component : "main", KS_APT_KEYRING_PATH);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

static bool valid_word(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (isspace((unsigned char)*s) || !isprint((unsigned char)*s))
            return false;
    return true;
}

/* Text with lines [first, last] of each range prefixed (or, when uncomment, un-prefixed). */
static int rewrite_lines(const char *text, size_t len, const bool *mark, size_t n_lines,
                         bool uncomment, char **ret, size_t *ret_len)
{
    static const char prefix[] = KS_APT_DISABLED_PREFIX;
    const size_t pn = sizeof(prefix) - 1;
    size_t pos = 0, n, out_n = 0, cap = len + n_lines * pn + 1;
    _cleanup_free_ char *out = malloc(cap);
    const char *l;
    size_t i = 0;

    if (!out)
        return -ENOMEM;
    while (ks_next_line(text, len, &pos, &l, &n)) {
        bool nl = l + n < text + len; /* the line had its '\n' */
        if (i < n_lines && mark[i]) {
            if (uncomment) {
                l += pn;
                n -= pn;
            } else {
                memcpy(out + out_n, prefix, pn);
                out_n += pn;
            }
        }
        memcpy(out + out_n, l, n);
        out_n += n;
        if (nl)
            out[out_n++] = '\n';
        i++;
    }
    out[out_n] = '\0';
    *ret_len = out_n;
    *ret = TAKE_PTR(out);
    return 0;
}

static size_t count_lines(const char *text, size_t len)
{
    size_t pos = 0, n, c = 0;
    const char *l;
    while (ks_next_line(text, len, &pos, &l, &n))
        c++;
    return c;
}

static char *disabled_name(const char *path)
{
    return ks_asprintf("%s" KS_APT_DISABLED_SUFFIX, path);
}

/* Plans the neutralisation of the enabled sources of the archive in one file. */
static int plan_neutralise(const ks_root *root, const ks_apt_takeover *t, const source_file *sf,
                           ks_apt_changes *l)
{
    _cleanup_free_ char *text = NULL, *target = NULL, *out = NULL, *what = NULL;
    _cleanup_free_ bool *mark = NULL;
    ks_apt_sources s = {0};
    size_t len, out_len = 0, n_lines, hits = 0, others = 0;
    ks_apt_change c = {0};
    int k;

    k = ks_root_read_file(root, sf->path, SOURCE_FILE_MAX, &text, &len);
    if (k == -ENOENT)
        return 0;
    if (k < 0)
        return k;
    k = parse_text(text, len, sf->path, sf->format, &s);
    if (k < 0)
        return k;
    n_lines = count_lines(text, len);
    mark = calloc(n_lines + 1, sizeof(bool));
    if (!mark) {
        ks_apt_sources_done(&s);
        return -ENOMEM;
    }
    for (size_t i = 0; i < s.n; i++) {
        if (!ks_apt_source_is_archive(&s.v[i], t->archive_uris)) {
            others++;
            continue;
        }
        if (!s.v[i].enabled) {
            others++; /* apt skips it already: leave it as the admin wrote it */
            continue;
        }
        hits++;
        for (unsigned ln = s.v[i].line_first; ln <= s.v[i].line_last && ln <= n_lines; ln++)
            mark[ln - 1] = true;
    }
    others += s.n_bad;
    ks_apt_sources_done(&s);
    if (hits == 0)
        return 0;

    target = disabled_name(sf->path);
    if (!target)
        return -ENOMEM;
    /* The main sources.list is never renamed: apt and people expect it to be there. */
    if (others == 0 && !streq(sf->path, SOURCES_LIST) && !ks_root_exists(root, target)) {
        c.kind = KS_APT_CHANGE_RENAME;
        c.path = strdup(sf->path);
        c.new_path = TAKE_PTR(target);
        c.what = ks_asprintf("disable %s (it holds only the archive's sources) by renaming it "
                             "to %s",
                             sf->path, c.new_path);
        if (!c.path || !c.what) {
            change_done(&c);
            return -ENOMEM;
        }
        k = add_change(l, &c);
        change_done(&c);
        return k;
    }
    k = rewrite_lines(text, len, mark, n_lines, false, &out, &out_len);
    if (k < 0)
        return k;
    what = ks_asprintf("comment out %zu %s of the archive in %s", hits,
                       hits == 1 ? "entry" : "entries", sf->path);
    if (!what)
        return -ENOMEM;
    {
        struct stat st;
        mode_t mode = ks_root_stat(root, sf->path, &st) == 0 ? st.st_mode & 07777 : 0644;
        return plan_write(root, l, sf->path, out, out_len, mode, what);
    }
}

int ks_aptsource_plan(const ks_root *root, const ks_apt_takeover *t, ks_apt_changes *ret)
{
    _cleanup_free_ char *src = NULL;
    ks_apt_changes l = {0};
    source_file *files = NULL;
    size_t n = 0;
    int k;

    if (!t || !valid_word(t->suite) || !t->keyring || t->keyring_len == 0 ||
        (t->uri && !valid_word(t->uri)) || (t->component && !valid_word(t->component)))
        return -EINVAL;
    k = source_text(t, &src);
    if (k < 0)
        return k;

    /* Our own file may be rewritten only when it holds nothing but the archive. */
    {
        _cleanup_free_ char *text = NULL;
        ks_apt_sources s = {0};
        size_t len;

        k = ks_root_read_file(root, KS_APT_SOURCE_PATH, SOURCE_FILE_MAX, &text, &len);
        if (k >= 0) {
            k = ks_aptsource_parse_deb822(text, len, KS_APT_SOURCE_PATH, &s);
            for (size_t i = 0; k >= 0 && i < s.n; i++)
                if (!ks_apt_source_is_archive(&s.v[i], t->archive_uris))
                    k = -EEXIST;
            ks_apt_sources_done(&s);
        } else if (k == -ENOENT)
            k = 0;
        if (k < 0)
            return k;
    }

    k = plan_write(root, &l, KS_APT_KEYRING_PATH, t->keyring, t->keyring_len, 0644,
                   "write the archive keyring " KS_APT_KEYRING_PATH);
    if (k >= 0)
        k = list_source_files(root, &files, &n);
    for (size_t i = 0; k >= 0 && i < n; i++)
        if (!streq(files[i].path, KS_APT_SOURCE_PATH))
            k = plan_neutralise(root, t, &files[i], &l);
    source_files_free(files, n);
    if (k >= 0)
        k = plan_write(root, &l, KS_APT_SOURCE_PATH, src, strlen(src), 0644,
                       "write the deb822 source " KS_APT_SOURCE_PATH);
    if (k < 0) {
        ks_apt_changes_done(&l);
        return k;
    }
    *ret = l;
    return 0;
}

/* Whether a Signed-By value names the keyring kswap writes. */
static bool signed_by_names_keyring(const char *v)
{
    _cleanup_strv_free_ char **w = NULL;
    if (!v || ks_strv_split(v, ", \t\r\n", &w) < 0)
        return false;
    for (char **p = w; p && *p; p++)
        if (streq(*p, "/" KS_APT_KEYRING_PATH))
            return true;
    return false;
}

int ks_aptsource_plan_remove(const ks_root *root, ks_apt_changes *ret)
{
    _cleanup_strv_free_ char **names = NULL;
    ks_apt_changes l = {0};
    source_file *files = NULL;
    size_t n = 0;
    bool keyring_used = false;
    int k;

    /* 1. The source kswap wrote, recognised by its first line. */
    {
        _cleanup_free_ char *text = NULL;
        size_t len;
        k = ks_root_read_file(root, KS_APT_SOURCE_PATH, SOURCE_FILE_MAX, &text, &len);
        if (k >= 0 && ks_startswith(text, KS_APT_SOURCE_MARKER)) {
            ks_apt_change c = {.kind = KS_APT_CHANGE_REMOVE};
            c.path = strdup(KS_APT_SOURCE_PATH);
            c.what = strdup("remove the deb822 source " KS_APT_SOURCE_PATH);
            k = c.path && c.what ? snapshot_old(root, &c) : -ENOMEM;
            if (k >= 0)
                k = add_change(&l, &c);
            change_done(&c);
        } else if (k >= 0 || k == -ENOENT)
            k = 0;
    }

    /* 2. Files kswap renamed, unless someone put a file of that name back meanwhile. */
    if (k >= 0) {
        k = ks_root_list_dir(root, SOURCES_DIR, &names);
        if (k == -ENOENT || k == -ENOTDIR)
            k = 0;
    }
    for (char **nm = names; k >= 0 && nm && *nm; nm++) {
        _cleanup_free_ char *from = NULL, *to = NULL, *text = NULL;
        ks_apt_change c = {.kind = KS_APT_CHANGE_RENAME};
        ks_apt_format f;
        size_t len;

        if (!ks_endswith(*nm, KS_APT_DISABLED_SUFFIX))
            continue;
        from = ks_asprintf("%s/%s", SOURCES_DIR, *nm);
        to = from ? strndup(from, strlen(from) - strlen(KS_APT_DISABLED_SUFFIX)) : NULL;
        if (!from || !to) {
            k = -ENOMEM;
            break;
        }
        if (!source_part_name(to + strlen(SOURCES_DIR) + 1, &f) || ks_root_exists(root, to))
            continue;
        /* What apt will read again decides whether the keyring is still needed. */
        if (ks_root_read_file(root, from, SOURCE_FILE_MAX, &text, &len) >= 0) {
            ks_apt_sources s = {0};
            if (parse_text(text, len, to, f, &s) >= 0)
                for (size_t i = 0; i < s.n; i++)
                    if (s.v[i].enabled && signed_by_names_keyring(s.v[i].signed_by))
                        keyring_used = true;
            ks_apt_sources_done(&s);
        }
        c.path = TAKE_PTR(from);
        c.new_path = TAKE_PTR(to);
        c.what = ks_asprintf("enable %s again (rename to %s)", c.path, c.new_path);
        k = c.what ? add_change(&l, &c) : -ENOMEM;
        change_done(&c);
    }

    /* 3. Lines kswap commented out; and whether anything left names the keyring. */
    if (k >= 0)
        k = list_source_files(root, &files, &n);
    for (size_t i = 0; k >= 0 && i < n; i++) {
        _cleanup_free_ char *text = NULL, *out = NULL, *what = NULL;
        _cleanup_free_ bool *mark = NULL;
        size_t len, out_len, n_lines, pos = 0, ln, hits = 0, m;
        const char *line;
        ks_apt_sources s = {0};
        bool removed =
            l.n > 0 && streq(l.v[0].path, files[i].path) && l.v[0].kind == KS_APT_CHANGE_REMOVE;

        if (removed)
            continue;
        k = ks_root_read_file(root, files[i].path, SOURCE_FILE_MAX, &text, &len);
        if (k == -ENOENT) {
            k = 0;
            continue;
        }
        if (k < 0)
            break;
        n_lines = count_lines(text, len);
        mark = calloc(n_lines + 1, sizeof(bool));
        if (!mark) {
            k = -ENOMEM;
            break;
        }
        for (ln = 0; ks_next_line(text, len, &pos, &line, &m); ln++)
            if (m >= strlen(KS_APT_DISABLED_PREFIX) &&
                memcmp(line, KS_APT_DISABLED_PREFIX, strlen(KS_APT_DISABLED_PREFIX)) == 0) {
                mark[ln] = true;
                hits++;
            }
        if (hits > 0)
            k = rewrite_lines(text, len, mark, n_lines, true, &out, &out_len);
        else {
            out = TAKE_PTR(text);
            out_len = len;
        }
        if (k >= 0)
            k = parse_text(out, out_len, files[i].path, files[i].format, &s);
        for (size_t j = 0; k >= 0 && j < s.n; j++)
            if (s.v[j].enabled && signed_by_names_keyring(s.v[j].signed_by))
                keyring_used = true;
        ks_apt_sources_done(&s);
        if (k < 0 || hits == 0)
            continue;
        what = ks_asprintf("enable %zu line%s disabled by kswap in %s again", hits,
                           hits == 1 ? "" : "s", files[i].path);
        if (!what) {
            k = -ENOMEM;
            break;
        }
        {
            struct stat st;
            mode_t mode = ks_root_stat(root, files[i].path, &st) == 0 ? st.st_mode & 07777 : 0644;
            k = plan_write(root, &l, files[i].path, out, out_len, mode, what);
        }
    }
    source_files_free(files, n);

    /* 4. The keyring, last, unless a source left enabled names it. */
    if (k >= 0 && !keyring_used && ks_root_exists(root, KS_APT_KEYRING_PATH)) {
        ks_apt_change c = {.kind = KS_APT_CHANGE_REMOVE};
        c.path = strdup(KS_APT_KEYRING_PATH);
        c.what = strdup("remove the archive keyring " KS_APT_KEYRING_PATH);
        k = c.path && c.what ? snapshot_old(root, &c) : -ENOMEM;
        if (k >= 0)
            k = add_change(&l, &c);
        change_done(&c);
    }
    if (k < 0) {
        ks_apt_changes_done(&l);
        return k;
    }
    *ret = l;
    return 0;
}

/* Renames inside one folder of the root without replacing anything, then syncs the folder. */
static int rename_in_root(const ks_root *root, const char *from, const char *to)
{
    _cleanup_free_ char *a = strdup(from), *b = strdup(to), *c = strdup(from);
    _cleanup_close_ int dfd = -1;
    const char *dir, *fb, *tb;

    if (!a || !b || !c)
        return -ENOMEM;
    dir = dirname(a);
    fb = basename(c);
    tb = basename(b);
    dfd = ks_root_open_at(root, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return dfd;
    if (renameat2(dfd, fb, dfd, tb, RENAME_NOREPLACE) < 0)
        return -errno;
    return fsync(dfd) < 0 ? -errno : 0;
}

static bool exists_nofollow(const ks_root *root, const char *path)
{
    struct stat st;
    return ks_root_lstat(root, path, &st) == 0;
}

static int apply_one(const ks_root *root, const ks_apt_change *c)
{
    int k;

    switch (c->kind) {
    case KS_APT_CHANGE_WRITE:
        return ks_write_atomic(root, c->path, c->data, c->len, c->mode);
    case KS_APT_CHANGE_RENAME:
        /* Done already by an interrupted run? */
        if (!exists_nofollow(root, c->path) && exists_nofollow(root, c->new_path))
            return 0;
        return rename_in_root(root, c->path, c->new_path);
    case KS_APT_CHANGE_REMOVE:
        k = ks_unlink_durable(root, c->path);
        return k == -ENOENT ? 0 : k;
    default:
        return -EINVAL;
    }
}

static int undo_one(const ks_root *root, const ks_apt_change *c)
{
    int k;

    switch (c->kind) {
    case KS_APT_CHANGE_WRITE:
    case KS_APT_CHANGE_REMOVE:
        if (c->old_exists)
            return ks_write_atomic(root, c->path, c->old_data, c->old_len, c->old_mode);
        k = ks_unlink_durable(root, c->path);
        if (k < 0 && k != -ENOENT)
            return k;
        remove_made_dirs(root, c->path, c->made_dir);
        return 0;
    case KS_APT_CHANGE_RENAME:
        if (exists_nofollow(root, c->path) && !exists_nofollow(root, c->new_path))
            return 0;
        return rename_in_root(root, c->new_path, c->path);
    default:
        return -EINVAL;
    }
}

int ks_aptsource_apply(const ks_root *root, const ks_apt_changes *c)
{
    for (size_t i = 0; i < c->n; i++) {
        int k = apply_one(root, &c->v[i]);
        if (k < 0)
            return k;
    }
    return 0;
}

int ks_aptsource_undo(const ks_root *root, const ks_apt_changes *c)
{
    int r = 0;

    /* Every step is tried, so that one failure does not leave the rest undone. */
    for (size_t i = c->n; i > 0; i--) {
        int k = undo_one(root, &c->v[i - 1]);
        if (k < 0 && r == 0)
            r = k;
    }
    return r;
}

static int plan_and_apply(const ks_root *root, int plan_k, ks_apt_changes *l,
                          ks_apt_changes *ret_changes)
{
    int k;

    if (plan_k < 0)
        return plan_k;
    k = ks_aptsource_apply(root, l);
    if (k < 0) {
        ks_aptsource_undo(root, l);
        ks_apt_changes_done(l);
        return k;
    }
    *ret_changes = *l;
    return 0;
}

int ks_aptsource_takeover(const ks_root *root, const ks_apt_takeover *t,
                          ks_apt_changes *ret_changes)
{
    ks_apt_changes l = {0};
    return plan_and_apply(root, ks_aptsource_plan(root, t, &l), &l, ret_changes);
}

int ks_aptsource_remove(const ks_root *root, ks_apt_changes *ret_changes)
{
    ks_apt_changes l = {0};
    return plan_and_apply(root, ks_aptsource_plan_remove(root, &l), &l, ret_changes);
}
