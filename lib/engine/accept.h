/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "checks/check.h"
#include "checks/snapshot.h"
#include "lib/basic/config.h"
#include "lib/engine/journal.h"
#include "lib/basic/root.h"
#include "lib/engine/swap.h"

/*
 * The verdict after the trial reboot and what follows from it, recorded in the state journal:
 *   no-reboot      the boot id is the one of arming: nothing happens;
 *   fell-back      a trial was armed but another kernel runs: disarm, no reboot;
 *   trial-hung     the same, and the trial boot's deadline fired (var/lib/kswap/trial-stages
 *                  says so, with the furthest stage it reached): disarm, no reboot;
 *   health-failed  the trial kernel runs but a required check failed at the deadline: disarm
 *                  (the old kernel stays the default) and, with on_failure = reboot, claim the
 *                  one reboot of this trial (ks_journal_claim_reboot);
 *   trial-ok       every required check passed: with auto_pin, pin as `kswap pin` does.
 * An outcome judged in an earlier run is reported again, never judged twice.
 */
#define KS_ACCEPT_DEFAULT_TIMEOUT_S 300
#define KS_HOOKS_DIR "etc/kswap/hooks.d"

typedef struct ks_accept_opts {
    const ks_config *config;
    int timeout_s; /* < 0: [accept] timeout (default 300) */
    bool no_pin;
    bool no_reboot;
    ks_progress_fn progress; /* one line per step, for stderr; optional */
    void (*check_progress)(void *userdata, const ks_check *chk);
    void *userdata;
    /* The command line, for the command log (lib/engine/command-log.h): a verdict recorded by
     * this run writes an entry; NULL: "accept". */
    const char *command;
} ks_accept_opts;

typedef struct ks_accept_result {
    ks_outcome outcome; /* KS_OUTCOME_NONE: no trial armed */
    bool recorded;      /* judged by an earlier run; only reported again */
    char *kernel;       /* running release */
    char *expected_kernel;
    char *old_kernel;
    char *summary; /* one line for people, as in the motd */
    ks_checklist checks;
    bool pinned;
    bool pin_lost;       /* trial-ok, not pinned, another kernel runs: not done */
    bool reboot_claimed; /* ours is the one reboot of this trial: call ks_accept_reboot() */
    bool reboot_refused; /* a reboot was due but this trial had its reboot already */
    /* a reboot was due, but the last look at the old kernel's boots found them damaged or not
     * what kswap set up (lib/engine/rebootcheck.h): why, for people; the trial kernel stays */
    char *reboot_unsafe;
    char *error;         /* an action that failed (disarm, pin, journal), for people */
    char *metrics_error; /* kswap.prom could not be written (lib/engine/metrics-file.h) */
    char *history_error; /* the swap history: damaged (moved aside) or not written */
    char *previous_boot; /* fell-back: warnings of the previous boot (journalctl -b -1) */
    /* fell-back: 0 when the journal's previous boot is the arming boot, so the trial boot
     * never reached the journal (it died in the kernel or initramfs); 1 when it is another
     * boot; -1 unknown (no persistent journal, no journalctl) */
    int trial_boot_logged;
    ks_journal *journal; /* the journal as it ended */
    /* The snapshot of what ran on the old kernel (checks with from_snapshot are its items):
     * whether there was one, what is running now that was not then, what was not snapshotted,
     * the established connections then and now (reported, never required), and now per port
     * (the connections checks have those of arming; have_conns_now: the snapshot at the
     * verdict could be taken). */
    bool have_snapshot;
    char **new_items;
    char **not_snapshotted;
    unsigned established_before, established_now;
    bool have_conns_now;
    ks_port_conns *conns_now;
    size_t n_conns_now;
} ks_accept_result;

/*
 * The diff of the result's checklist with the snapshot, as JSON: {"back", "missing", "new",
 * "not_snapshotted", "established": {"before", "now"}, "connections": [{"port", "before",
 * "now", "back", "required"}, ...]}; NULL without a snapshot, or when out of memory.
 */
json_object *ks_accept_diff_json(const ks_accept_result *r);
/* A connections check's count at the verdict; -1 when not known (or chk is another check). */
long long ks_accept_conns_now(const ks_accept_result *r, const ks_check *chk);

/* Judges and acts. Negative errno when nothing could be judged (*ret->error says why). */
int ks_accept(const ks_root *root, const ks_accept_opts *o, ks_accept_result *ret);
void ks_accept_result_done(ks_accept_result *r);

/*
 * `systemctl reboot` (KSWAP_ROOT under a root), recorded as the journal step "reboot" and
 * counted in its reboots_requested. Right before it, the last look at the old kernel's boots
 * (lib/engine/rebootcheck.h): a problem is -EPERM with *ret_error saying what and what to do,
 * the step "reboot" failed with the same words, no reboot and nothing else changed.
 */
/*
 * A verdict that keeps the trial kernel running after a failed trial (on_failure = stay,
 * --no-reboot, a reboot refused by its last look, the one reboot spent): on the trial boot
 * (kswap.trial= on the command line), its deadline stops (systemctl stop --no-block
 * KS_TRIAL_DEADLINE_UNIT), and with it the trial's watchdog (the unit's ExecStopPost=
 * kswap-trial-watchdog release): nothing reboots the node by force into the old kernel later.
 * 1: stopped, 0: not a trial boot; negative errno with *ret_error saying why.
 */
#define KS_TRIAL_DEADLINE_UNIT "kswap-trial-deadline.service"
int ks_accept_stay(const ks_root *root, char **ret_error);
int ks_accept_reboot(const ks_root *root, ks_accept_result *r, char **ret_error);

/*
 * Runs the executables of etc/kswap/hooks.d/<which>/ in name order with json on stdin, each
 * with timeout_ms. A failing hook never changes the verdict: *ret_failures (may be NULL) lists
 * "NAME: why" for the caller to log.
 */
int ks_accept_run_hooks(const ks_root *root, const char *which, const char *json,
                        unsigned timeout_ms, char ***ret_failures);

/* The one-line status (motd) for a judged journal; NULL when there is nothing to say. */
char *ks_accept_motd_line(const ks_journal *j, const char *running);

/*
 * kswap check: the whole checklist of accept now, on the running kernel, one round, judging
 * nothing and changing nothing: the configured checks, the reachability floor (required as
 * accept would require it of a trial armed now: where the node has a default route or a
 * management listener now), and the items of a snapshot of what runs now (each must be
 * checkable on this node).
 */
typedef struct ks_check_now_result {
    char *kernel;
    ks_checklist checks;
    char **items;  /* the snapshot of what runs now (sorted) */
    char **wanted; /* ... and what it reports but does not require */
    unsigned n_items, established;
    char **not_snapshotted;
    bool passed; /* every required check passed */
    char *error;
} ks_check_now_result;

int ks_check_now(const ks_root *root, const ks_config *cfg, ks_check_now_result *ret);
/*
 * The same as apply runs it before its first change: the configured checks and the floor, the
 * floor required only where the snapshot arming would take has it (a node without a default
 * route today is not asked for one after the trial either), as accept will judge the trial.
 * The snapshot's own items are not judged: they are what runs now.
 */
int ks_check_before_apply(const ks_root *root, const ks_config *cfg, ks_check_now_result *ret);
void ks_check_now_result_done(ks_check_now_result *r);
