/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pin: a kernel that passed acceptance (or one named with --force) the default on every boot. */
#include <assert.h>

#include "lib/engine/history.h"
#include "lib/engine/swap-run.h"
#include "lib/engine/tcp-report.h"
#include "lib/engine/trial.h"
#include "lib/engine/trialboot.h"
#include "lib/host/bootfiles.h"

/*
 * The trial's GRUB entries go when the trial is settled: the script out of /etc/grub.d
 * (recorded in the journal first), then update-grub. 1: removed, 0: there was none.
 */
int ks_run_remove_trial_entries(ks_run *x, const char *step)
{
    char *update[] = {(char *)"update-grub", NULL};
    const char *what = NULL;
    int r;

    if (!ks_trial_grubd_exists(x->root))
        return 0;
    r = ks_journal_note_file(x->j, KS_TRIAL_GRUBD_PATH);
    if (r < 0)
        return ks_run_journal_error(x, r);
    ks_run_progress(x, step, "removing the trial's entries from grub.cfg: update-grub");
    r = ks_trial_grubd_remove(x->root);
    if (r < 0)
        return ks_run_fail_step(x, step, r, "cannot remove '/%s': %s", KS_TRIAL_GRUBD_PATH,
                                strerror(-r));
    r = ks_run_program(x, step, update, ks_run_timeout_ms(x, "update_grub_timeout", 300), false);
    if (r < 0)
        return r;
    /* The grubenv write that follows must never reach the disk before this grub.cfg. */
    r = ks_grub_cfg_sync(x->root, &what);
    if (r < 0)
        return ks_run_fail_step(x, step, r,
                                "update-grub rewrote /%s but it cannot be written to the disk: %s",
                                what, strerror(-r));
    return 1;
}

/* Nothing to do: the journal says pinned, every boot starts the kernel, no trial entries. */
static bool pinned_already(ks_run *x, const ks_boot *b, const char *target)
{
    return ks_journal_state(x->j) == KS_STATE_PINNED &&
           streq_ptr(ks_journal_get(x->j, KS_JF_NEW_KERNEL), target) &&
           !ks_trial_grubd_exists(x->root) && (!b->env || !ks_grubenv_get(b->env, "next_entry")) &&
           ks_boot_every_boot_starts(b, target);
}

/*
 * Everything pin judges before its first change; a refusal writes nothing. docs/design.md,
 * invariant 5: only a kernel that runs and passed acceptance becomes the default (--force is
 * the operator's override). 1: pin goes ahead; 0: the result holds a verdict.
 */
static int judge_pin(ks_run *x, const char *target, const char *running, bool force, ks_boot *b)
{
    const char *new = ks_journal_get(x->j, KS_JF_NEW_KERNEL);
    const ks_state_info *s = ks_state_info_get(ks_journal_state(x->j));
    _cleanup_free_ char *err = NULL, *detail = NULL;
    int r;

    if (!force && !streq(running, target)) {
        /* Acceptance passed, but the trial boot ended before the pin (a power cut): say so. */
        if (ks_journal_outcome(x->j) == KS_OUTCOME_TRIAL_OK && streq_ptr(new, target))
            return ks_run_refuse(x,
                                 "%s passed acceptance, but the machine restarted before it was "
                                 "pinned and %s runs; 'kswap apply' tries %s again, 'kswap pin "
                                 "%s --force' makes it the default without another trial",
                                 target, running, target, target);
        return ks_run_refuse(x,
                             "%s is not the running kernel (%s runs); pin it after it passed "
                             "acceptance, or use --force",
                             target, running);
    }
    if (!force && ks_journal_outcome(x->j) != KS_OUTCOME_TRIAL_OK)
        return ks_run_refuse(x,
                             "acceptance has not passed on %s in this boot ('kswap accept'); "
                             "'kswap pin %s --force' pins anyway",
                             target, target);
    /* A swap under way to another kernel ends first: its trial would stay armed. */
    if (s->in_flight && !streq_ptr(new, target))
        return ks_run_refuse(x,
                             "a swap to %s is under way (%s): 'kswap rollback' ends it before "
                             "%s is pinned; nothing was changed",
                             strempty(new), s->name, target);
    r = ks_boot_load(x->root, b, &err);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_PIN, r,
                                "cannot read GRUB's state: %s; nothing was changed, fix it and run "
                                "'kswap pin' again",
                                err ? err : strerror(-r));
    if (pinned_already(x, b, target)) {
        x->r->status = KS_SWAP_ALREADY;
        x->r->error = ks_asprintf("%s is pinned already: every boot starts it", target);
        return x->r->error ? 0 : -ENOMEM;
    }
    /* GRUB must start it on every boot once saved_entry names it: asked before any change. */
    r = ks_run_refuse_unless_default(x, b, target);
    return r < 0 ? r : 1;
}

/*
 * A pin of another kernel than the journal's (pin RELEASE --force with no swap, or after one
 * ended) is a swap of its own: the one it replaces goes into the history, the journal starts
 * again from the running kernel to the pinned one.
 */
static int start_pin_swap(ks_run *x, const char *target, const char *running)
{
    int r = ks_history_note_finding(x->root, x->j, &x->r->findings);

    if (r < 0)
        return r;
    ks_run_changes(x);
    r = ks_journal_reset(x->j);
    if (r >= 0)
        r = ks_journal_set(x->j, KS_JF_OLD_KERNEL, running);
    if (r >= 0)
        r = ks_journal_set(x->j, KS_JF_NEW_KERNEL, target);
    return r < 0 ? ks_run_journal_error(x, r) : 0;
}

int ks_pin(const ks_root *root, const ks_swap_common *c, const char *release, bool force,
           ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL, *detail = NULL, *err = NULL, *target = NULL, *what = NULL;
    ks_boot b = {0};
    ks_run x;
    int r;

    assert(root);
    assert(c);
    assert(ret);
    r = ks_run_start_locked(&x, root, c, ret, &lock);
    if (r < 0)
        goto out;
    if (!release && !ks_journal_get(x.j, KS_JF_NEW_KERNEL)) {
        r = ks_run_refuse(&x, "no trial kernel in the journal; name the kernel: kswap pin RELEASE");
        goto out;
    }
    target = strdup(release ? release : ks_journal_get(x.j, KS_JF_NEW_KERNEL));
    if (!target) {
        r = -ENOMEM;
        goto out;
    }
    r = ks_run_running_kernel(root, ret, &running);
    if (r < 0)
        goto out;
    r = judge_pin(&x, target, running, force, &b);
    if (r <= 0)
        goto out;
    if (!streq_ptr(ks_journal_get(x.j, KS_JF_NEW_KERNEL), target) ||
        ks_journal_state(x.j) == KS_STATE_IDLE) {
        r = start_pin_swap(&x, target, running);
        if (r < 0)
            goto out;
    }
    what = ks_asprintf("making %s the default on every boot", target);
    r = ks_run_begin(&x, KS_STEP_PIN, what ? what : "making the kernel the default on every boot");
    if (r < 0) {
        ks_run_journal_error(&x, r);
        goto out;
    }
    /* GRUB first (next_entry unset, the kernel the default), then the trial's entries: a pin
     * cut between the two never leaves next_entry naming an entry update-grub removed. */
    r = ks_journal_note_file(x.j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_set_default(root, &b, target, &detail);
    if (r < 0) {
        ks_run_fail_step(&x, KS_STEP_PIN, r, "cannot make %s the default: %s", target,
                         strempty(detail));
        goto out;
    }
    r = ks_run_remove_trial_entries(&x, KS_STEP_PIN);
    if (r < 0)
        goto out;
    if (r > 0) {
        /* update-grub rewrote grub.cfg: GRUB's state as it is now */
        ks_boot_done(&b);
        r = ks_boot_load(root, &b, &err);
        if (r < 0) {
            ks_run_fail_step(&x, KS_STEP_PIN, r, "%s", strempty(err));
            goto out;
        }
    }
    /* once more on the grub.cfg update-grub wrote, unless it keeps the promise already */
    free(detail);
    detail = NULL;
    r = ks_boot_every_boot_starts(&b, target) ? 0 : ks_boot_set_default(root, &b, target, &detail);
    if (r < 0) {
        ks_run_fail_step(&x, KS_STEP_PIN, r, "cannot make %s the default: %s", target,
                         strempty(detail));
        goto out;
    }
    /* The node's TCP health on the new kernel at its pin: where report's window after starts. */
    if (streq(running, target) && streq_ptr(ks_journal_get(x.j, KS_JF_NEW_KERNEL), target))
        (void)ks_tcp_record(root, x.j, KS_TCP_PINNED, NULL);
    r = ks_journal_set_state(x.j, KS_STATE_PINNED);
    if (r >= 0)
        r = ks_journal_step_end(x.j, KS_STEP_PIN, KS_STEP_DONE, target);
    /* The trial is settled: no acceptance at the next boots, no status line at login. */
    if (r >= 0) {
        (void)ks_trial_flag_clear(root);
        (void)ks_motd_clear(root);
    }
    if (r < 0) {
        ks_run_journal_error(&x, r);
        goto out;
    }
    ret->status = KS_SWAP_DONE;
out:
    ks_boot_done(&b);
    return ks_run_end(&x, r);
}
