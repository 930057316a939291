/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rollback: the trial disarmed, the old kernel the default again (--purge: purge.c). */
#include <assert.h>

#include "lib/basic/fileio.h"
#include "lib/engine/bootpeek.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/orphan.h"
#include "lib/engine/swap-run.h"
#include "lib/engine/trial.h"
#include "lib/engine/trialboot.h"

/*
 * Back to an old kernel that is not running: its files first, by the cheap look (the files its
 * own entry loads, which the rollback makes every boot start). Damaged, with --reboot: refused
 * before anything changes (a reboot would leave the node at GRUB's prompt or in a kernel that
 * cannot start); without it: the rollback goes on and the findings warn before the operator's
 * own reboot.
 */
static int old_files_before_rollback(ks_run *x, const char *old, bool reboot)
{
    _cleanup_free_ char *err = NULL;
    ks_boot b = {0};
    int r;

    r = ks_boot_load(x->root, &b, &err);
    if (r < 0)
        return r == -ENOMEM ? r : 0; /* the rollback itself says what is wrong with GRUB */
    r = ks_boot_peek_kernel(x->root, b.cfg,
                            &(ks_boot_peek){.release = old,
                                            .old = true,
                                            .whose = "of the old kernel, which the rollback makes "
                                                     "the default,",
                                            .then = reboot ? "then 'kswap rollback --reboot'"
                                                           : "before the next reboot",
                                            .severity = reboot ? KS_SEV_BLOCK : KS_SEV_WARN},
                            &x->r->findings);
    ks_boot_done(&b);
    if (r <= 0 || !reboot)
        return r < 0 ? r : 0;
    return ks_run_refuse(x,
                         "not rolling back to %s: its files are damaged (see the findings), and "
                         "the reboot into it would leave the node at GRUB's prompt or in a "
                         "kernel that cannot start, out of reach; nothing was changed; repair "
                         "them first",
                         old);
}

/* The journal cannot be read: rollback starts from an empty one and moves the damaged one
 * aside once it acts (its bytes stay for the operator). */
static int load_or_start_over(ks_run *x, char **ret_damaged)
{
    _cleanup_free_ char *err = NULL;
    int r;

    r = ks_run_load_journal(x);
    if (r != -EBADMSG && r != -EPROTONOSUPPORT)
        return r;
    err = x->r->error ? strdup(x->r->error) : NULL;
    free(x->r->error);
    x->r->error = NULL;
    x->r->status = KS_SWAP_DONE;
    r = ks_journal_new(x->root, &x->j);
    if (r >= 0)
        r = ks_metrics_attach(x->j, x->root, x->c->config);
    if (r < 0)
        return r;
    *ret_damaged = err ? TAKE_PTR(err) : strdup("it cannot be read");
    return *ret_damaged ? 0 : -ENOMEM;
}

/* Nothing left to do: rolled back by a rollback already, the old kernel on every boot, no
 * trial armed or in grub.cfg. */
static bool rolled_back_already(ks_run *x, const ks_boot *b, const char *old)
{
    const ks_journal_step *s = ks_journal_step_find(x->j, KS_STEP_ROLLBACK);

    return ks_journal_state(x->j) == KS_STATE_ROLLED_BACK && s && s->status == KS_STEP_DONE &&
           !ks_trial_grubd_exists(x->root) && (!b->env || !ks_grubenv_get(b->env, "next_entry")) &&
           ks_boot_every_boot_starts(b, old);
}

/*
 * What rollback judges before its first change; a refusal writes nothing. The old kernel is the
 * journal's, or, for a trial the journal lost (lib/engine/orphan.h), the way-back entry's (else
 * the running kernel). 1: rollback goes ahead with *ret_old; 0: the result holds a verdict.
 */
static int judge_rollback(ks_run *x, const ks_boot *b, const char *running, bool purge, bool reboot,
                          const char *damaged, ks_orphan_trial *orphan, const char **ret_old)
{
    const char *old = ks_journal_get(x->j, KS_JF_OLD_KERNEL);
    const char *new = ks_journal_get(x->j, KS_JF_NEW_KERNEL);
    _cleanup_free_ char *detail = NULL;
    int r;

    if (!old) {
        r = ks_orphan_trial_find(x->root, b, x->j, orphan);
        if (r < 0)
            return r;
        if (r == 0 && !damaged) {
            x->r->status = KS_SWAP_ALREADY;
            x->r->error = strdup("nothing to roll back: the journal names no old kernel and GRUB "
                                 "holds no kswap trial");
            return x->r->error ? 0 : -ENOMEM;
        }
        old = orphan->old ? orphan->old : running;
        new = orphan->new;
    }
    if (purge && new &&streq(new, running))
        return ks_run_refuse(x,
                             "%s is running: boot the old kernel first ('kswap rollback "
                             "--reboot'), then purge; nothing was changed",
                             new);
    if (!streq(running, old)) {
        r = old_files_before_rollback(x, old, reboot);
        if (r < 0)
            return r;
    }
    if (!damaged && !orphan->armed && !orphan->entries && !purge &&
        (!reboot || streq(running, old)) && rolled_back_already(x, b, old)) {
        x->r->status = KS_SWAP_ALREADY;
        x->r->error = ks_asprintf("rolled back already: every boot starts %s", old);
        return x->r->error ? 0 : -ENOMEM;
    }
    /* GRUB must start it on every boot once saved_entry names it: asked before any change. The
     * trial's entries (entry 0 its way back) go first; the old kernel's own entry stays. */
    r = ks_run_refuse_unless_default(x, b, old);
    if (r < 0)
        return r;
    *ret_old = old;
    return 1;
}

/* A journal lost or damaged: what rollback found and does goes into the new one first. */
static int record_recovery(ks_run *x, const char *old, const char *damaged,
                           const ks_orphan_trial *orphan)
{
    _cleanup_free_ char *reason = NULL;
    int r = 0;

    if (damaged) {
        r = ks_rename_durable(x->root, KS_JOURNAL_PATH, KS_JOURNAL_DAMAGED_NAME);
        if (r < 0 && r != -ENOENT)
            return ks_run_fail_step(x, NULL, r, "cannot move the damaged journal '/%s' aside: %s",
                                    KS_JOURNAL_PATH, strerror(-r));
    }
    reason = ks_asprintf("%s%s%s%s%s%s%s", damaged ? "the state journal was damaged (" : "",
                         strempty(damaged), damaged ? "; moved to /" : "",
                         damaged ? KS_JOURNAL_DAMAGED_PATH : "", damaged ? ")" : "",
                         damaged && (orphan->armed || orphan->entries) ? "; " : "",
                         orphan->armed || orphan->entries
                             ? "a kswap trial the journal did not know was still in GRUB's setup"
                             : "");
    if (!reason)
        return -ENOMEM;
    r = ks_journal_set(x->j, KS_JF_OLD_KERNEL, old);
    if (r >= 0 && orphan->new)
        r = ks_journal_set(x->j, KS_JF_NEW_KERNEL, orphan->new);
    if (r >= 0)
        r = ks_journal_set(x->j, KS_JF_REASON, reason);
    return r < 0 ? ks_run_journal_error(x, r) : 0;
}

/* next_entry unset and the old kernel the default, in the grub.cfg there is now. */
static int make_old_default(ks_run *x, const char *old)
{
    _cleanup_free_ char *err = NULL, *detail = NULL;
    ks_boot b = {0};
    int r;

    r = ks_boot_load(x->root, &b, &err);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ROLLBACK, r,
                                "cannot read GRUB's state: %s; fix it and run 'kswap rollback' "
                                "again",
                                err ? err : strerror(-r));
    r = ks_journal_note_file(x->j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_disarm(x->root, &b, NULL, &detail);
    if (r >= 0)
        r = ks_boot_set_default(x->root, &b, old, &detail);
    ks_boot_done(&b);
    if (r < 0)
        return ks_run_fail_step(
            x, KS_STEP_ROLLBACK, r,
            "cannot make %s the default again: %s; fix that and run 'kswap rollback' again", old,
            detail ? detail : strerror(-r));
    return 0;
}

int ks_rollback(const ks_root *root, const ks_swap_common *c, bool do_purge, bool reboot,
                ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL, *detail = NULL, *err = NULL, *damaged = NULL, *old = NULL;
    _cleanup_(ks_orphan_trial_done) ks_orphan_trial orphan = {0};
    char *update[] = {(char *)"update-grub", NULL};
    const char *judged_old = NULL;
    ks_boot b = {0};
    ks_run x;
    int r;

    assert(root);
    assert(c);
    assert(ret);
    r = ks_run_init(&x, root, c, ret);
    /* --purge runs apt-get: dpkg's lock must be free before anything changes on disk. */
    if (r >= 0 && do_purge)
        r = ks_run_wait_for_dpkg(&x, NULL);
    if (r >= 0)
        r = ks_run_lock(&x, &lock);
    if (r >= 0)
        r = load_or_start_over(&x, &damaged);
    if (r >= 0)
        r = ks_run_running_kernel(root, ret, &running);
    if (r < 0)
        goto out;
    r = ks_boot_load(root, &b, &err);
    if (r < 0) {
        ks_run_fail_step(&x, NULL, r,
                         "cannot read GRUB's state: %s; nothing was changed, fix it and run "
                         "'kswap rollback' again",
                         err ? err : strerror(-r));
        goto out;
    }
    r = judge_rollback(&x, &b, running, do_purge, reboot, damaged, &orphan, &judged_old);
    ks_boot_done(&b);
    if (r <= 0)
        goto out;
    old = strdup(judged_old);
    if (!old) {
        r = -ENOMEM;
        goto out;
    }
    ks_run_changes(&x);
    if (damaged || orphan.armed || orphan.entries) {
        r = record_recovery(&x, old, damaged, &orphan);
        if (r < 0)
            goto out;
    }
    r = ks_run_begin(&x, KS_STEP_ROLLBACK, "making the old kernel the default again");
    if (r < 0) {
        ks_run_journal_error(&x, r);
        goto out;
    }
    /* GRUB first, then the trial's entries: a rollback cut between the two (a power cut, a
     * kill) never leaves next_entry naming an entry update-grub removed, which GRUB would
     * answer with entry 0, the newest kernel (found by test/test-model.py). */
    r = make_old_default(&x, old);
    if (r < 0)
        goto out;
    r = ks_run_remove_trial_entries(&x, KS_STEP_ROLLBACK);
    if (r < 0)
        goto out;
    if (do_purge) {
        r = ks_run_purge(&x, old, running);
        if (r >= 0)
            r = ks_run_program(&x, KS_STEP_ROLLBACK, update,
                               ks_run_timeout_ms(&x, "update_grub_timeout", 300), false);
        if (r < 0)
            goto out;
    }
    r = ks_boot_load(root, &b, &err);
    if (r < 0) {
        ks_run_fail_step(&x, KS_STEP_ROLLBACK, r,
                         "cannot read GRUB's state: %s; fix it and run 'kswap rollback' again",
                         err ? err : strerror(-r));
        goto out;
    }
    r = ks_journal_note_file(x.j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_disarm(root, &b, NULL, &detail);
    if (r >= 0)
        r = ks_boot_set_default(root, &b, old, &detail);
    if (r == -EPROTO && ks_run_dropin_removed(ret)) {
        /* Without kswap's GRUB_DEFAULT=saved GRUB would not boot the old kernel: the drop-in
         * stays (docs/design.md, invariant 1). */
        ks_boot_done(&b);
        r = ks_run_keep_dropin(&x, &b);
        if (r >= 0)
            r = ks_boot_set_default(root, &b, old, &detail);
    }
    ks_boot_done(&b);
    if (r < 0) {
        /* Never an empty reason: the step that failed may have said nothing itself. */
        ks_run_fail_step(
            &x, KS_STEP_ROLLBACK, r,
            "cannot make %s the default again: %s; fix that and run 'kswap rollback' again", old,
            detail ? detail : strerror(-r));
        goto out;
    }
    r = ks_journal_set_state(x.j, KS_STATE_ROLLED_BACK);
    if (r >= 0)
        r = ks_run_done(&x, KS_STEP_ROLLBACK, old);
    if (r >= 0) {
        (void)ks_trial_flag_clear(root);
        (void)ks_motd_clear(root);
    }
    if (r < 0) {
        ks_run_journal_error(&x, r);
        goto out;
    }
    ret->status = KS_SWAP_DONE;
    if (reboot && !streq(running, old))
        r = ks_run_reboot_now(
            &x, KS_STEP_REBOOT,
            &(ks_reboot_expect){.old = old, .then = "then 'kswap rollback --reboot'"},
            "the rollback is done: every boot starts the old kernel");
out:
    ks_boot_done(&b);
    return ks_run_end(&x, r);
}
