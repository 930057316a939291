/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/config.h"
#include "lib/basic/root.h"

/*
 * Acceptance checks: each one looks at what runs (never at what the configuration says) and
 * says pass or fail with a short detail. The runner retries them until every required check
 * passed or the time is up, keeping each check's last result and how often it ran.
 */
typedef enum ks_check_status {
    KS_CHECK_SKIP, /* not run (yet, or not applicable) */
    KS_CHECK_PASS,
    KS_CHECK_FAIL,
    _KS_CHECK_STATUS_MAX,
    _KS_CHECK_STATUS_INVALID = -EINVAL,
} ks_check_status;

/* What every check may use. */
typedef struct ks_check_ctx {
    const ks_root *root;
    const char *root_abs;        /* KSWAP_ROOT for programs; NULL on this machine */
    const char *kernel;          /* the running release */
    unsigned program_timeout_ms; /* systemctl, tc, nft; 0: 30 s */
    unsigned script_timeout_ms;  /* custom checks; 0: 60 s */
    /* The swap's TCP baseline, taken at arming (lib/host/tcpsample.h); NULL: none. */
    const struct ks_tcp_sample *tcp_baseline;
    /* Judging a trial boot (accept; kswap check with kswap.trial= on the command line): every
     * connection there was opened on the trial kernel (checks/check-cc.c). */
    bool trial;
} ks_check_ctx;

typedef struct ks_check ks_check;

/*
 * Runs one check: 1 pass, 0 fail, negative errno when it could not be evaluated (a failure
 * too). Sets chk->detail (and chk->output for programs), freeing what was there.
 */
typedef int (*ks_check_fn)(const ks_check_ctx *c, ks_check *chk);

struct ks_check {
    char *id;  /* "service:xray.service", "listen:tcp:443", "script:required/10-x", ... */
    char *arg; /* the configured item: "xray.service", "tcp:443", a script's path */
    bool required;
    bool from_snapshot; /* an item of what ran before the trial (checks/snapshot.h) */
    bool final;         /* the last failure cannot heal by waiting (set by the check) */
    ks_check_fn run;
    ks_check_status status; /* the last result */
    char *detail;
    char *output; /* a custom check's output (bounded), NULL otherwise */
    unsigned attempts;
    unsigned baseline; /* connections: how many came in at arming (checks/snapshot.h) */
};

typedef struct ks_checklist {
    ks_check *v;
    size_t n, cap;
} ks_checklist;

const char *ks_check_status_to_string(ks_check_status s);

/* Appends a check with id "kind:arg" (or "kind" when arg is NULL). */
int ks_checklist_add(ks_checklist *l, const char *kind, const char *arg, bool required,
                     ks_check_fn fn);
void ks_checklist_done(ks_checklist *l);
ks_check *ks_checklist_find(const ks_checklist *l, const char *id);
/* Sets a check's result by hand (the kernel and boot checks of the verdict). */
int ks_check_set(ks_check *chk, ks_check_status status, const char *detail);

/*
 * The configured checks: the [accept] keys (services, interfaces, listen, sysctl, modules,
 * bbr_version, qdisc, nft_tables, established_min, reach), all required, then the executables in
 * etc/kswap/checks.d/required/ and wanted/ inside the root, in name order. -EINVAL with
 * *ret_error for a malformed item.
 */
int ks_checklist_from_config(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                             char **ret_error);

/*
 * The reachability floor (checks/floor.c): "floor:default-route" (the interface of a default
 * route is up with an address) and "floor:management" (a TCP socket listens on [accept]
 * management, default 22). Each is required when snapshot_items (what ran at arming) has a
 * default route or a listener on that port, else reported (a trial cannot lose what the node
 * never had); with have_snapshot false (a trial armed by an older kswap) always required.
 */
int ks_checklist_add_floor(ks_checklist *l, const ks_config *cfg, char *const *snapshot_items,
                           bool have_snapshot);
int ks_check_default_route(const ks_check_ctx *c, ks_check *chk);
int ks_check_management(const ks_check_ctx *c, ks_check *chk);
/* "default:IF" and "default6:IF" of proc/net/route and ipv6_route (checks/snapshot.c). */
int ks_default_routes(const ks_root *root, char ***ret);

/* The built-in checks (checks/check-*.c). */
int ks_check_service(const ks_check_ctx *c, ks_check *chk);
int ks_check_interface(const ks_check_ctx *c, ks_check *chk);
int ks_check_listen(const ks_check_ctx *c, ks_check *chk);
int ks_check_sysctl(const ks_check_ctx *c, ks_check *chk);
int ks_check_module(const ks_check_ctx *c, ks_check *chk);
int ks_check_bbr_version(const ks_check_ctx *c, ks_check *chk);
int ks_check_qdisc(const ks_check_ctx *c, ks_check *chk);
int ks_check_nft_table(const ks_check_ctx *c, ks_check *chk);
int ks_check_established(const ks_check_ctx *c, ks_check *chk);
int ks_check_reach(const ks_check_ctx *c, ks_check *chk);
int ks_check_script(const ks_check_ctx *c, ks_check *chk);
/* congestion-control:NAME (checks/check-cc.c): the established connections run NAME; on a
 * trial boot (c->trial) required once there are some (it sets chk->required), else reported. */
int ks_check_cc(const ks_check_ctx *c, ks_check *chk);
/* Adds congestion-control:NAME for [accept] congestion_control (auto: bbr when the node
 * configures bbr; no: none). -EINVAL with *ret_error for a value that is not a name. */
int ks_checklist_add_cc(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                        char **ret_error);
/* retransmissions (checks/check-retrans.c): the trial's retransmission ratio since its boot
 * against ctx->tcp_baseline; judged once both sent [accept] retrans_min_segments, required
 * then only with retrans_required (it sets chk->required). */
int ks_check_retrans(const ks_check_ctx *c, ks_check *chk);
/* Adds it when [accept] retrans_max_increase is set (not 0). */
int ks_checklist_add_retrans(const ks_config *cfg, ks_checklist *l);

/*
 * Runs a program for a check through lib/spawn (KSWAP_ROOT under a root). Under a root that is
 * not this machine, programs from the system directories are refused (-EPERM): they would
 * look at this machine. 0 when it ran (see the result), negative errno otherwise.
 */
struct ks_spawn_result;
int ks_check_spawn(const ks_check_ctx *c, char *const argv[], unsigned timeout_ms,
                   struct ks_spawn_result *ret);

typedef struct ks_runner_opts {
    unsigned timeout_ms;  /* until the deadline; 0: one round */
    unsigned interval_ms; /* between rounds; 0: 5 s */
    /* The clock (tests); NULL: CLOCK_MONOTONIC and nanosleep. */
    long long (*now_ms)(void *userdata);
    void (*sleep_ms)(void *userdata, unsigned ms);
    /* Called after each attempt of a check (progress lines); optional. */
    void (*progress)(void *userdata, const ks_check *chk);
    void *userdata;
} ks_runner_opts;

/*
 * Runs every check of l that has not passed, round after round, until all required checks
 * passed (returns 1), a required check failed finally (chk->final: a failed unit, a module the
 * running kernel does not have; returns 0 at once) or the deadline passed (returns 0). Checks
 * that passed are not run again.
 * Returns negative errno only for -ENOMEM.
 */
int ks_checks_run(ks_checklist *l, const ks_check_ctx *c, const ks_runner_opts *o);
