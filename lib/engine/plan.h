/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/host/bootfs.h"
#include "lib/basic/findings.h"
#include "lib/host/kernels.h"
#include "lib/basic/root.h"
#include "lib/host/secureboot.h"
#include "lib/kernel/verify.h"
#include "lib/engine/update.h"

typedef enum ks_branch {
    KS_BRANCH_LTS,
    KS_BRANCH_MAIN,
    _KS_BRANCH_MAX,
    _KS_BRANCH_INVALID = -EINVAL,
} ks_branch;

typedef struct ks_plan_opts {
    const char *kernel; /* --kernel RELEASE */
    const char *deb;    /* --deb FILE (a path on the running machine) */
    ks_branch branch;
    bool branch_given;         /* --branch: the update check asks that branch, not the node's */
    const ks_config *config;   /* [verify] settings; NULL: defaults */
    const char *apply_command; /* how the operator swaps ("kswap --root DIR apply"); NULL:
                                * "kswap apply" */
} ks_plan_opts;

/* Everything `kswap plan` found; strings may be NULL where a fact is unknown. */
typedef struct ks_plan {
    /* host */
    char *os_id, *os_version_id, *os_codename, *os_pretty_name, *os_release_file;
    char *xanmod_suite; /* repository suite: [repository] suite, else XanMod's for this OS, NULL
                         * when XanMod has none */
    /* the repository apply installs from: [repository] uri (a mirror, an apt cache) or XanMod's */
    char *repo_uri;
    char **repo_components; /* NULL for a flat repository (a suite ending in '/') */
    bool repo_configured;   /* uri or suite come from kswap.conf */
    char *virt, *virt_evidence;
    int x86_64_level; /* 0..4 */
    int x86_64_level_cpuinfo;
    bool level_from_cpuid;
    unsigned n_processors;
    char *cpu_model;
    char *running_kernel;
    ks_kernels kernels;
    /* boot */
    ks_bootfs bootfs;
    bool bootfs_known;
    bool env_writable; /* GRUB can clear next_entry at boot: fs, stack and grub.cfg agree */
    ks_secureboot secureboot;
    bool grub_cfg_found;
    char *grub_default, *grub_default_file;
    int recordfail_timeout;     /* INT_MIN when none */
    int efi_recordfail_timeout; /* Ubuntu's every-EFI-boot timeout when recordfail cannot save */
    char *panic_value, *panic_source; /* the panic=N that applies and where it comes from */
    uint64_t boot_needed_bytes;
    /* BBR at run time */
    char *cc_live, *cc_config, *cc_config_file;
    char *qdisc_live, *qdisc_config, *qdisc_config_file;
    bool bbr_module, bbr_builtin, bbr_listed;
    char *bbr_listed_file;
    /* target */
    ks_branch branch;
    char *target_package, *target_release;
    bool target_installed;
    /* the target kernel's module set, when it is installed or given as a package */
    ks_verify_result verify;
    bool verified;
    /* day two: a newer release of the node's branch (lib/engine/update.h) */
    ks_update update;
    ks_findings findings;
    /* set when plan could not evaluate the host: which file and why (for the error line) */
    char *error_file;
    char *error_detail; /* what went wrong there, when more than errno can say */
} ks_plan;

/*
 * Assesses the host under root; never changes anything. Returns 0 with the findings filled in,
 * or negative errno when the host cannot be judged (ret->error_file names the file that could
 * not be read or parsed).
 */
int ks_plan_run(const ks_root *root, const ks_plan_opts *opts, ks_plan *ret);
void ks_plan_done(ks_plan *p);

const char *ks_branch_to_string(ks_branch b);
ks_branch ks_branch_from_string(const char *s);
/* The XanMod meta package for a level and branch, NULL when no build runs on that level. */
const char *ks_xanmod_package(int level, ks_branch branch);
/* The repository suite for an os-release id/version/codename, NULL when there is none. */
const char *ks_xanmod_suite(const char *os_id, const char *version_id, const char *codename,
                            bool *ret_supported);
/* Bytes /boot needs for one more kernel: the largest installed vmlinuz+initrd pair, a floor
 * for XanMod's size, and a margin. */
uint64_t ks_boot_space_needed(const ks_kernels *k);
