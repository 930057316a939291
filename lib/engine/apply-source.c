/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <limits.h>
#include <stdlib.h>

#include "lib/engine/apply-source.h"

char *ks_apply_source_make(const char *deb, const char *kernel, const char *package)
{
    if (deb) {
        _cleanup_free_ char *abs = realpath(deb, NULL);
        return ks_asprintf("deb:%s", abs ? abs : deb);
    }
    if (kernel)
        return ks_asprintf("kernel:%s", kernel);
    return package ? ks_asprintf("package:%s", package) : NULL;
}

char *ks_shell_quote(const char *word)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "_./:=,+@%-";
    char *q, *p;

    if (!word)
        return NULL;
    if (*word && strspn(word, safe) == strlen(word))
        return strdup(word);
    /* 'it'\''s': each quote closes, is escaped, and opens again */
    q = malloc(strlen(word) * 4 + 3);
    if (!q)
        return NULL;
    p = q;
    *p++ = '\'';
    for (const char *w = word; *w; w++) {
        if (*w == '\'') {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else
            *p++ = *w;
    }
    *p++ = '\'';
    *p = '\0';
    return q;
}

char *ks_apply_source_args(const char *source)
{
    static const struct {
        const char *prefix, *option;
    } kinds[] = {{"deb:", "--deb"}, {"kernel:", "--kernel"}, {"package:", "--package"}};

    for (size_t i = 0; source && i < ARRAY_SIZE(kinds); i++) {
        const char *v = ks_startswith(source, kinds[i].prefix);
        _cleanup_free_ char *q = NULL;

        if (!v || !*v)
            continue;
        q = ks_shell_quote(v);
        return q ? ks_asprintf("%s %s", kinds[i].option, q) : NULL;
    }
    return NULL;
}

char *ks_apply_command(const char *source, const char *extra)
{
    _cleanup_free_ char *args = ks_apply_source_args(source);

    return ks_asprintf("kswap apply%s%s%s%s", args ? " " : "", strempty(args),
                       extra && *extra ? " " : "", strempty(extra));
}
