/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status --ack: the operator has seen the outcome. */
#include <assert.h>

#include "lib/engine/next-step.h"
#include "lib/engine/swap-run.h"
#include "lib/engine/trial.h"

/* A trial armed or running that has no verdict yet: its flag must stay (accept runs at boot). */
static bool trial_pending(const ks_journal *j)
{
    const ks_outcome_info *o = ks_outcome_info_get(ks_journal_outcome(j));
    return !o->final && ks_journal_armed_boot_id(j) &&
           ks_state_info_get(ks_journal_state(j))->trial;
}

/* A swap that failed (a step, or its trial) and is not closed yet. */
static bool failed_open(const ks_journal *j)
{
    return (ks_journal_state(j) == KS_STATE_FAILED || ks_outcome_failed(ks_journal_outcome(j))) &&
           ks_journal_state(j) != KS_STATE_PINNED && !ks_swap_closed(j);
}

int ks_acknowledge(const ks_root *root, const ks_swap_common *c, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    bool motd, flag, close;
    ks_run x;
    int r;

    assert(root);
    assert(c);
    assert(ret);
    r = ks_run_start_locked(&x, root, c, ret, &lock);
    if (r < 0)
        goto out;
    motd = ks_root_exists(root, KS_MOTD_PATH);
    flag = ks_root_exists(root, KS_TRIAL_FLAG_PATH) && !trial_pending(x.j);
    close = failed_open(x.j);
    if (!motd && !flag && !close) {
        ret->status = KS_SWAP_ALREADY;
        ret->error = strdup("nothing to acknowledge");
        r = ret->error ? 0 : -ENOMEM;
        goto out;
    }
    ks_run_changes(&x);
    /* The login line, and, once judged, the flag that makes kswap-accept.service write it again
     * at every boot. */
    if (motd && (r = ks_motd_clear(root)) < 0) {
        ks_run_fail_step(&x, NULL, r, "cannot remove '/%s': %s", KS_MOTD_PATH, strerror(-r));
        goto out;
    }
    if (flag && (r = ks_trial_flag_clear(root)) < 0) {
        ks_run_fail_step(&x, NULL, r, "cannot remove '/%s': %s", KS_TRIAL_FLAG_PATH, strerror(-r));
        goto out;
    }
    /* A failed swap is closed: status exits 0 from now on (lib/engine/next-step.h). */
    if (close) {
        r = ks_journal_step_begin(x.j, KS_STEP_ACKNOWLEDGE);
        if (r >= 0)
            r = ks_journal_step_end(x.j, KS_STEP_ACKNOWLEDGE, KS_STEP_DONE, "the failure was read");
        if (r < 0) {
            ks_run_journal_error(&x, r);
            goto out;
        }
    }
    ret->status = KS_SWAP_DONE;
out:
    return ks_run_end(&x, r);
}
