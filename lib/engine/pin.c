/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pin: a kernel that passed acceptance (or one named with --force) the default on every boot. */
#include <assert.h>

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

int ks_pin(const ks_root *root, const ks_swap_common *c, const char *release, bool force,
           ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL, *detail = NULL, *err = NULL;
    const char *target;
    ks_boot b = {0};
    ks_run x;
    int r;

    assert(root);
    assert(c);
    assert(ret);
    r = ks_run_start_locked(&x, root, c, ret, &lock);
    if (r < 0)
        goto out;
    target = release ? release : ks_journal_get(x.j, KS_JF_NEW_KERNEL);
    if (!target) {
        ret->status = KS_SWAP_REFUSED;
        ret->error = strdup("no trial kernel in the journal; name the kernel: kswap pin RELEASE");
        goto out;
    }
    r = ks_run_running_kernel(root, ret, &running);
    if (r < 0)
        goto out;
    /* docs/design.md, invariant 5: only a kernel that runs and passed acceptance becomes the
     * default. */
    if (!force && !streq(running, target)) {
        ret->status = KS_SWAP_REFUSED;
        /* Acceptance passed, but the trial boot ended before the pin (a power cut): say so. */
        if (ks_journal_outcome(x.j) == KS_OUTCOME_TRIAL_OK &&
            streq_ptr(ks_journal_get(x.j, KS_JF_NEW_KERNEL), target))
            ret->error = ks_asprintf("%s passed acceptance, but the machine restarted before it "
                                     "was pinned and %s runs; 'kswap apply' tries %s again, "
                                     "'kswap pin --force' makes it the default without another "
                                     "trial",
                                     target, running, target);
        else
            ret->error = ks_asprintf("%s is not the running kernel (%s runs); pin it after it "
                                     "passed acceptance, or use --force",
                                     target, running);
        goto out;
    }
    if (!force && ks_journal_outcome(x.j) != KS_OUTCOME_TRIAL_OK) {
        ret->status = KS_SWAP_REFUSED;
        ret->error = ks_asprintf("acceptance has not passed on %s in this boot ('kswap accept'); "
                                 "--force pins anyway",
                                 target);
        goto out;
    }
    ks_run_progress(&x, "pin", "making %s the default on every boot", target);
    r = ks_journal_step_begin(x.j, "pin");
    if (r < 0) {
        ks_run_journal_error(&x, r);
        goto out;
    }
    r = ks_run_remove_trial_entries(&x, "pin");
    if (r < 0)
        goto out;
    r = ks_boot_load(root, &b, &err);
    if (r < 0) {
        ks_run_fail_step(&x, "pin", r, "%s", strempty(err));
        goto out;
    }
    r = ks_journal_note_file(x.j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_set_default(root, &b, target, &detail);
    ks_boot_done(&b);
    if (r < 0) {
        ks_run_fail_step(&x, "pin", r, "cannot make %s the default: %s", target, strempty(detail));
        goto out;
    }
    /* The node's TCP health on the new kernel at its pin: where report's window after starts. */
    if (streq(running, target) && streq_ptr(ks_journal_get(x.j, KS_JF_NEW_KERNEL), target))
        (void)ks_tcp_record(root, x.j, KS_TCP_PINNED, NULL);
    r = ks_journal_set_state(x.j, KS_STATE_PINNED);
    if (r >= 0)
        r = ks_journal_step_end(x.j, "pin", KS_STEP_DONE, target);
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
    return ks_run_end(&x, r);
}
