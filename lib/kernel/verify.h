/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/config.h"
#include "lib/kernel/deb.h"
#include "lib/basic/findings.h"
#include "lib/kernel/modverify.h"
#include "lib/basic/root.h"

/*
 * kswap verify: does a kernel, installed (lib/modules/RELEASE inside the root) or as a package
 * (a .deb on the running machine), have the required modules with their dependencies, the
 * configured BBR version, the root device's drivers in its initramfs (installed only), and the
 * modules the running workload uses? Prints nothing; `kswap plan` calls it too.
 */
typedef enum ks_verify_source {
    KS_VERIFY_TREE,
    KS_VERIFY_DEB,
    _KS_VERIFY_SOURCE_MAX,
    _KS_VERIFY_SOURCE_INVALID = -EINVAL,
} ks_verify_source;

const char *ks_verify_source_to_string(ks_verify_source s); /* "tree", "deb" */

typedef struct ks_verify_opts {
    const char *release;  /* --kernel RELEASE: lib/modules/RELEASE inside the root */
    const char *deb_path; /* --deb FILE: a path on the running machine (exactly one of both) */
    bool skip_initrd;     /* leave out the initramfs check */
    bool skip_workload;   /* leave out proc/modules */
    char **error;         /* optional: why ks_verify_run failed, for people */
} ks_verify_opts;

typedef struct ks_verify_result {
    char *release;
    ks_verify_source source;
    ks_module_report *modules; /* the required set, in configured order */
    size_t n_modules;
    int bbr_version;         /* MODULE_VERSION of tcp_bbr (no version: 1), -1 without tcp_bbr */
    char **workload_missing; /* loaded now, absent from the new kernel */
    char **initrd_missing;   /* root device drivers / fs module neither built in nor in initrd */
    ks_findings findings;    /* modules.missing, bbr.not-v3, initrd.missing-driver, ... */
    ks_deb_stats deb_stats;  /* KS_VERIFY_DEB only */
} ks_verify_result;

/* 0 with a verdict in ret (see ks_findings_worst), or negative errno when the tree or package
 * cannot be read (a truncated .deb is an error, not a verdict). */
int ks_verify_run(const ks_root *root, const ks_config *cfg, const ks_verify_opts *opts,
                  ks_verify_result *ret);
void ks_verify_result_done(ks_verify_result *r);
