/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdarg.h>
#include <stddef.h>

#include "lib/basic/util.h"

/* Ordered from best to worst: the verdict is the worst severity present. */
typedef enum ks_severity {
    KS_SEV_OK,
    KS_SEV_WARN,
    KS_SEV_BLOCK,
    _KS_SEV_MAX,
    _KS_SEV_INVALID = -EINVAL,
} ks_severity;

typedef struct ks_finding {
    char *id; /* stable id, documented in kswap(8), e.g. "virt.container" */
    ks_severity severity;
    char *message; /* what is the case, lower-case start, no full stop */
    char *remedy;  /* what to do about it; NULL when nothing needs doing */
} ks_finding;

typedef struct ks_findings {
    ks_finding *v;
    size_t n, cap;
} ks_findings;

/* Adds a finding; message is a printf format. Returns 0 or -ENOMEM. */
int ks_findings_add(ks_findings *f, const char *id, ks_severity severity, const char *remedy,
                    const char *fmt, ...) _printf_(5, 6);
/* The same with a va_list, for wrappers that add their own bookkeeping. */
int ks_findings_addv(ks_findings *f, const char *id, ks_severity severity, const char *remedy,
                     const char *fmt, va_list ap) _printf_(5, 0);
void ks_findings_clear(ks_findings *f);
ks_severity ks_findings_worst(const ks_findings *f);
const ks_finding *ks_findings_get(const ks_findings *f, const char *id);

const char *ks_severity_to_string(ks_severity s); /* "ok", "warn", "block" */
/* The verdict word of a worst severity: "ok", "warn", "blocked". */
const char *ks_verdict_to_string(ks_severity worst);
