/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/findings.h"
#include "lib/basic/string-table.h"

int ks_findings_addv(ks_findings *f, const char *id, ks_severity severity, const char *remedy,
                     const char *fmt, va_list ap)
{
    ks_finding *x;
    int r;

    assert(f);
    assert(id);
    assert(fmt);
    if (!GREEDY_REALLOC(f->v, f->cap, f->n + 1))
        return -ENOMEM;
    x = &f->v[f->n];
    *x = (ks_finding){.severity = severity};
    r = ks_vasprintf_r(&x->message, fmt, ap);
    x->id = strdup(id);
    x->remedy = remedy ? strdup(remedy) : NULL;
    if (r < 0 || !x->id || (remedy && !x->remedy)) {
        if (r >= 0)
            free(x->message);
        free(x->id);
        free(x->remedy);
        return -ENOMEM;
    }
    f->n++;
    return 0;
}

int ks_findings_add(ks_findings *f, const char *id, ks_severity severity, const char *remedy,
                    const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_findings_addv(f, id, severity, remedy, fmt, ap);
    va_end(ap);
    return r;
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

static const char *const severity_table[_KS_SEV_MAX] = {
    [KS_SEV_OK] = "ok",
    [KS_SEV_WARN] = "warn",
    [KS_SEV_BLOCK] = "block",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(severity, ks_severity);

/* The same enum named as a verdict over all findings. */
static const char *const verdict_table[_KS_SEV_MAX] = {
    [KS_SEV_OK] = "ok",
    [KS_SEV_WARN] = "warn",
    [KS_SEV_BLOCK] = "blocked",
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(verdict, ks_severity);

const char *ks_severity_to_string(ks_severity s)
{
    return severity_to_string(s) ?: "invalid";
}

const char *ks_verdict_to_string(ks_severity worst)
{
    return verdict_to_string(worst) ?: "invalid";
}
