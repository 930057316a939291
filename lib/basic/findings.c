/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/findings.h"

int ks_findings_add(ks_findings *f, const char *id, ks_severity severity, const char *remedy,
                    const char *fmt, ...)
{
    ks_finding *x;
    va_list ap;
    int k;

    assert(f);
    assert(id);
    assert(fmt);
    if (!GREEDY_REALLOC(f->v, f->cap, f->n + 1))
        return -ENOMEM;
    x = &f->v[f->n];
    *x = (ks_finding){.severity = severity};
    va_start(ap, fmt);
    k = vasprintf(&x->message, fmt, ap);
    va_end(ap);
    x->id = strdup(id);
    x->remedy = remedy ? strdup(remedy) : NULL;
    if (k < 0 || !x->id || (remedy && !x->remedy)) {
        if (k >= 0)
            free(x->message);
        free(x->id);
        free(x->remedy);
        return -ENOMEM;
    }
    f->n++;
    return 0;
}

void ks_findings_clear(ks_findings *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->v[i].id);
        free(f->v[i].message);
        free(f->v[i].remedy);
    }
    free(f->v);
    *f = (ks_findings){0};
}

ks_severity ks_findings_worst(const ks_findings *f)
{
    ks_severity w = KS_SEV_OK;
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].severity > w)
            w = f->v[i].severity;
    return w;
}

const ks_finding *ks_findings_get(const ks_findings *f, const char *id)
{
    for (size_t i = 0; i < f->n; i++)
        if (streq(f->v[i].id, id))
            return &f->v[i];
    return NULL;
}

const char *ks_severity_to_string(ks_severity s)
{
    static const char *const names[_KS_SEV_MAX] = {"ok", "warn", "block"};
    return s >= 0 && s < _KS_SEV_MAX ? names[s] : "invalid";
}

const char *ks_verdict_to_string(ks_severity worst)
{
    static const char *const names[_KS_SEV_MAX] = {"ok", "warn", "blocked"};
    return worst >= 0 && worst < _KS_SEV_MAX ? names[worst] : "invalid";
}
