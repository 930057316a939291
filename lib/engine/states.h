/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/util.h"

/*
 * The swap's state machine as data, in the manner of systemd-bless-boot's tables: the states
 * of the journal (lib/engine/journal.h), the outcomes of a trial, and the transitions between
 * states that kswap makes. ks_journal_set_state() (and the journal's resets, the one other way
 * a state changes) refuses a transition that is not in the table: a bug that fails loudly in
 * tests (an assertion) and returns -EINVAL where assertions are off. docs/design.md, "Flow and
 * states", and kswap(8), STATES, print the same table.
 */

typedef enum ks_state {
    KS_STATE_IDLE,
    KS_STATE_PREPARED,
    KS_STATE_INSTALLED,
    KS_STATE_VERIFIED,
    KS_STATE_ARMED,
    KS_STATE_TRIAL_BOOTED,
    KS_STATE_PINNED,
    KS_STATE_FAILED,
    KS_STATE_ROLLED_BACK,
    _KS_STATE_MAX,
    _KS_STATE_INVALID = -EINVAL,
} ks_state;

typedef enum ks_outcome {
    KS_OUTCOME_NONE, /* not judged yet; null in JSON */
    KS_OUTCOME_TRIAL_OK,
    KS_OUTCOME_HEALTH_FAILED,
    KS_OUTCOME_FELL_BACK,
    KS_OUTCOME_NO_REBOOT,
    KS_OUTCOME_TRIAL_HUNG, /* another kernel runs after the trial boot's deadline fired */
    _KS_OUTCOME_MAX,
    _KS_OUTCOME_INVALID = -EINVAL,
} ks_outcome;

/*
 * The exit codes of the stable contract (docs/design.md, "Command line and JSON") that a state
 * or a verdict answers with; cmd/cmd.h's KS_EXIT_* are these numbers.
 */
typedef enum ks_code {
    KS_CODE_OK = 0,      /* done, or may proceed */
    KS_CODE_ERROR = 1,   /* could not evaluate or act */
    KS_CODE_REFUSED = 2, /* refused or blocked by a finding */
    KS_CODE_FAILED = 3,  /* acceptance failed, a swap failed */
    KS_CODE_NOTHING = 4, /* nothing to judge yet */
} ks_code;

/* The journal's steps, by name (lib/engine/journal.h; apply's table: lib/engine/apply-steps.h). */
#define KS_STEP_REPOSITORY "repository"
#define KS_STEP_PREPARE "prepare"
#define KS_STEP_INSTALL "install"
#define KS_STEP_VERIFY "verify"
#define KS_STEP_ARM "arm"
#define KS_STEP_REBOOT "reboot"
#define KS_STEP_PIN "pin"
#define KS_STEP_ROLLBACK "rollback"
#define KS_STEP_PURGE "purge"
#define KS_STEP_ACKNOWLEDGE "acknowledge"

typedef struct ks_state_info {
    const char *name;
    /* A swap is under way: apply changed the system and the swap has not ended. */
    bool in_flight;
    /* An apply stopped here (killed, a step failed to save): apply again goes on from here,
     * with the same source and the same old kernel. */
    bool resumable;
    /* A trial is armed or runs: kswap's entries are in grub.cfg, the trial flag is set. */
    bool trial;
    /* The swap has ended; a new apply starts a new one. */
    bool terminal;
    /* The position on apply's path (prepared 1 ... armed 4); 0 off it. A resumed apply never
     * moves the journal back along it (lib/engine/swap-run.h, ks_run_reach). */
    unsigned order;
} ks_state_info;

typedef struct ks_outcome_info {
    const char *name; /* NULL for KS_OUTCOME_NONE */
    /* The trial failed: the node is back on (or goes back to) the old kernel. */
    bool failed;
    /* A verdict: status --wait stops waiting, accept acts no more. */
    bool final;
    /* accept's exit code for it, and status --wait's. */
    ks_code exit_code;
} ks_outcome_info;

typedef struct ks_transition {
    ks_state from, to;
    const char *by; /* the command and the moment that make it, for people */
} ks_transition;

/* NULL for a value that is no state (outcome). */
const ks_state_info *ks_state_info_get(ks_state s);
const ks_outcome_info *ks_outcome_info_get(ks_outcome o);

/* State and outcome names, as in the JSON and docs/design.md. */
const char *ks_state_to_string(ks_state s);
ks_state ks_state_from_string(const char *s);
const char *ks_outcome_to_string(ks_outcome o); /* NULL for KS_OUTCOME_NONE */
ks_outcome ks_outcome_from_string(const char *s);

/* The table of transitions (a state to itself is always legal and not listed). */
const ks_transition *ks_transitions(size_t *ret_n);
/* Whether from -> to is legal; the entry that makes it when ret is not NULL (NULL for a state
 * to itself). */
bool ks_state_transition_ok(ks_state from, ks_state to, const ks_transition **ret);

static inline bool ks_outcome_failed(ks_outcome o)
{
    const ks_outcome_info *i = ks_outcome_info_get(o);
    return i && i->failed;
}
