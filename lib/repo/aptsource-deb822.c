/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The deb822 stanzas of *.sources (sources.list(5), "DEB822-STYLE FORMAT"). */
#include <ctype.h>
#include <strings.h>

#include "lib/basic/util.h"
#include "lib/repo/aptsource-internal.h"
#include "lib/repo/aptsource.h"

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
    _cleanup_(apt_source_done) ks_apt_source e = {.format = KS_APT_FORMAT_DEB822};
    const char *v;
    int r;

    if (st->n == 0 && !st->error)
        return 0;
    if (st->error) {
        r = apt_add_problem(s, file, st->error_line, "%s", st->error);
        stanza_reset(st);
        return r;
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
            if (!apt_is_known_type(*t))
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
            r = apt_add_problem(s, file, st->first, "%s", why);
            stanza_reset(st);
            return r;
        }
    }
    stanza_reset(st);
    return apt_add_source(s, &e, file);
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
    int r = 0;

    while (r >= 0 && ks_next_line(text, len, &pos, &l, &n)) {
        const char *colon;
        size_t m = n;

        lineno++;
        while (m > 0 && (l[m - 1] == '\r' || l[m - 1] == ' ' || l[m - 1] == '\t'))
            m--;
        if (memchr(l, '\0', n)) {
            r = stanza_error(&st, lineno, "NUL byte in line");
            st.first = st.first ? st.first : lineno;
            continue;
        }
        if (m > 0 && l[0] == '#')
            continue;
        if (m == 0) {
            r = finish_stanza(&st, file, sources);
            continue;
        }
        if (l[0] == ' ' || l[0] == '\t') {
            field *f;
            size_t a = 0, old;
            char *nv;

            if (st.n == 0) {
                r = stanza_error(&st, lineno, "continuation line without a field");
                st.first = st.first ? st.first : lineno;
                continue;
            }
            while (a < m && (l[a] == ' ' || l[a] == '\t'))
                a++;
            f = &st.f[st.n - 1];
            old = strlen(f->value);
            nv = realloc(f->value, old + 1 + (m - a) + 1);
            if (!nv) {
                r = -ENOMEM;
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
            r = stanza_error(&st, lineno, "line is neither a field nor a comment");
            st.first = st.first ? st.first : lineno;
            continue;
        }
        if (apt_grow((void **)&st.f, st.n, sizeof(*st.f)) < 0) {
            r = -ENOMEM;
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
                r = -ENOMEM;
                break;
            }
            st.n++;
        }
        if (!st.first)
            st.first = lineno;
        st.last = lineno;
    }
    if (r >= 0)
        r = finish_stanza(&st, file, sources);
    stanza_reset(&st);
    return r < 0 ? r : 0;
}
