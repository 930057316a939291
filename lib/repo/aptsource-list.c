/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one-line format of sources.list and *.list (sources.list(5), "ONE-LINE-STYLE FORMAT"). */
#include <ctype.h>

#include "lib/basic/util.h"
#include "lib/repo/aptsource-internal.h"
#include "lib/repo/aptsource.h"

/* Parses one line (NUL-terminated, comment already cut); 0, or a problem is recorded. */
static int parse_list_entry(const char *line, const char *file, unsigned lineno, ks_apt_sources *s)
{
    _cleanup_(apt_source_done) ks_apt_source e = {
        .format = KS_APT_FORMAT_LIST, .line_first = lineno, .line_last = lineno, .enabled = true};
    _cleanup_free_ char *type = NULL, *uri = NULL, *suite = NULL, *w = NULL;
    const char *p = line;
    int r;

    r = apt_next_word(&p, &type);
    if (r <= 0)
        return r == -ENOMEM ? r : apt_add_problem(s, file, lineno, "malformed entry (type)");
    if (!apt_is_known_type(type))
        return apt_add_problem(s, file, lineno, "type '%s' is not known", type);
    if (ks_strv_extend(&e.types, type) < 0)
        return -ENOMEM;

    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p == '[') {
        const char *end = strchr(p, ']');
        _cleanup_strv_free_ char **opts = NULL;
        _cleanup_free_ char *inner = NULL;

        if (!end)
            return apt_add_problem(s, file, lineno, "malformed entry ([option] unparsable)");
        inner = strndup(p + 1, (size_t)(end - p - 1));
        if (!inner)
            return -ENOMEM;
        if (ks_strv_split(inner, " \t\r", &opts) < 0)
            return -ENOMEM;
        for (char **o = opts; o && *o; o++) {
            char *eq = strchr(*o, '=');
            if (!eq)
                return apt_add_problem(s, file, lineno,
                                       "malformed entry ([option] not assignment)");
            if (eq == *o)
                return apt_add_problem(s, file, lineno, "malformed entry ([option] no key)");
            if (!eq[1])
                return apt_add_problem(s, file, lineno, "malformed entry ([option] no value)");
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

    r = apt_next_word(&p, &uri);
    if (r < 0 && r != -EBADMSG)
        return r;
    if (r <= 0)
        return apt_add_problem(s, file, lineno, "malformed entry (URI)");
    if (!strchr(uri, ':'))
        return apt_add_problem(s, file, lineno, "malformed entry (URI parse)");
    r = apt_next_word(&p, &suite);
    if (r < 0 && r != -EBADMSG)
        return r;
    if (r <= 0)
        return apt_add_problem(s, file, lineno, "malformed entry (Suite)");
    if (apt_strv_push_word(&e.uris, &uri) < 0)
        return -ENOMEM;
    while ((r = apt_next_word(&p, &w)) > 0)
        if (apt_strv_push_word(&e.components, &w) < 0)
            return -ENOMEM;
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return apt_add_problem(s, file, lineno, "malformed entry (Component)");
    /* An exact path ("./") takes no component; a suite needs at least one. */
    if (ks_endswith(suite, "/") && e.components)
        return apt_add_problem(s, file, lineno, "malformed entry (absolute Suite Component)");
    if (!ks_endswith(suite, "/") && !e.components)
        return apt_add_problem(s, file, lineno, "malformed entry (Component)");
    if (apt_strv_push_word(&e.suites, &suite) < 0)
        return -ENOMEM;
    return apt_add_source(s, &e, file);
}

int ks_aptsource_parse_list(const char *text, size_t len, const char *file, ks_apt_sources *sources)
{
    size_t pos = 0, n;
    const char *l;
    unsigned lineno = 0;
    int r;

    while (ks_next_line(text, len, &pos, &l, &n)) {
        _cleanup_free_ char *buf = NULL;
        char *c;

        lineno++;
        buf = strndup(l, n);
        if (!buf)
            return -ENOMEM;
        if (strlen(buf) != n) {
            r = apt_add_problem(sources, file, lineno, "NUL byte in line");
            if (r < 0)
                return r;
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
        r = parse_list_entry(buf, file, lineno, sources);
        if (r < 0)
            return r;
    }
    return 0;
}
