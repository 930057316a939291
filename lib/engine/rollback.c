/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rollback: the trial disarmed, the old kernel the default again (--purge: purge.c). */
#include <assert.h>

#include "lib/engine/bootpeek.h"
#include "lib/engine/swap-run.h"
#include "lib/engine/trial.h"

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
    x->r->status = KS_SWAP_REFUSED;
    x->r->error = ks_asprintf("not rolling back to %s: its files are damaged (see the findings), "
                              "and the reboot into it would leave the node at GRUB's prompt or in "
                              "a kernel that cannot start, out of reach; nothing was changed; "
                              "repair them first",
                              old);
    return x->r->error ? 0 : -ENOMEM;
}

int ks_rollback(const ks_root *root, const ks_swap_common *c, bool do_purge, bool reboot,
                ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL, *detail = NULL, *err = NULL;
    char *update[] = {(char *)"update-grub", NULL};
    const char *old;
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
        r = ks_run_load_journal(&x);
    if (r < 0)
        goto out;
    old = ks_journal_get(x.j, KS_JF_OLD_KERNEL);
    if (!old) {
        ret->status = KS_SWAP_ALREADY;
        ret->error = strdup("nothing to roll back: the journal names no old kernel");
        goto out;
    }
    r = ks_run_running_kernel(root, ret, &running);
    if (r < 0)
        goto out;
    if (!streq(running, old)) {
        r = old_files_before_rollback(&x, old, reboot);
        if (r < 0 || ret->status == KS_SWAP_REFUSED)
            goto out;
    }
    r = ks_run_begin(&x, "rollback", "making the old kernel the default again");
    if (r < 0) {
        ks_run_journal_error(&x, r);
        goto out;
    }
    r = ks_run_remove_trial_entries(&x, "rollback");
    if (r < 0)
        goto out;
    if (do_purge) {
        r = ks_run_purge(&x, old, running);
        if (r >= 0)
            r = ks_run_program(&x, "rollback", update,
                               ks_run_timeout_ms(&x, "update_grub_timeout", 300), false);
        if (r < 0)
            goto out;
    }
    r = ks_boot_load(root, &b, &err);
    if (r < 0) {
        ks_run_fail_step(&x, "rollback", r,
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
            &x, "rollback", r,
            "cannot make %s the default again: %s; fix that and run 'kswap rollback' again", old,
            detail ? detail : strerror(-r));
        goto out;
    }
    r = ks_journal_set_state(x.j, KS_STATE_ROLLED_BACK);
    if (r >= 0)
        r = ks_run_done(&x, "rollback", old);
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
            &x, "reboot", &(ks_reboot_expect){.old = old, .then = "then 'kswap rollback --reboot'"},
            "the rollback is done: every boot starts the old kernel");
out:
    return ks_run_end(&x, r);
}
