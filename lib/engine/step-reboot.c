/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The reboot of apply --reboot and rollback --reboot, after the last look. */
#include "lib/engine/apply-steps.h"
#include "lib/engine/rebootcheck.h"

static bool findings_name_way_back(const ks_findings *f)
{
    return ks_findings_get(f, "boot.old-kernel-damaged") ||
           ks_findings_get(f, "boot.old-initrd-damaged");
}

/*
 * The reboot of apply --reboot and rollback --reboot. Right before systemctl reboot comes the
 * last look at what the next boots load (lib/engine/rebootcheck.h). A problem refuses the
 * reboot (its findings, exit 2) and changes nothing but the journal's step "reboot" (failed,
 * with why): the swap stays as the command left it, armed or rolled back, and the node keeps
 * running the kernel it runs. Rebooting instead would end in one of these:
 *   - the trial's own files damaged after arming: GRUB's fallback or panic= bring the old kernel
 *     back by themselves (whole-VM scenario trial-bad-kernel), so the reboot would only cost
 *     a boot and end as fell-back; the trial stays armed, since a reboot that happens anyway
 *     still comes back the same way;
 *   - the old kernel's files damaged: the way back of a failed trial and the default of every
 *     later boot; GRUB would stop at "Press any key" (no fallback outside the trial) or the
 *     kernel would panic again and again: a node nobody can reach. Nothing may reboot it before
 *     the repair, and the error says so;
 *   - grubenv or grub.cfg changed by someone else since kswap set them up: the next boot is not
 *     the one kswap promised (invariant 1), whatever it is.
 * systemctl failing leaves the state as it is too (exit 1).
 */
int ks_run_reboot_now(ks_run *x, const char *step, const ks_reboot_expect *expect,
                      const char *stays)
{
    char *argv[] = {(char *)"systemctl", (char *)"reboot", NULL};
    int r;

    x->state_stays = true;
    r = ks_run_begin(x, step, "checking what the next boot loads, then rebooting");
    if (r < 0)
        return ks_run_journal_error(x, r);
    r = ks_reboot_check(x->root, expect, &x->r->findings);
    if (r < 0)
        return ks_run_fail_step(x, step, r, "cannot look at what the next boot loads: %s",
                                strerror(-r));
    if (r > 0) {
        if (findings_name_way_back(&x->r->findings))
            r = ks_run_fail_step(
                x, step, -EPERM,
                "not rebooting: the way back to %s is damaged (see the findings), and a "
                "node that reboots now could end at GRUB's prompt or in a kernel that "
                "cannot start, out of reach; %s; do not reboot before it is repaired",
                expect->old, stays);
        else
            r = ks_run_fail_step(
                x, step, -EPERM,
                "not rebooting: the next boots are not what kswap set up, or their "
                "files are damaged (see the findings); %s",
                stays);
        x->r->status = KS_SWAP_REFUSED;
        return r;
    }
    /* Counted when asked and saved before: a reboot that succeeds may leave no later save. */
    ks_journal_count_reboot(x->j);
    r = ks_journal_save(x->j);
    if (r < 0)
        return ks_run_journal_error(x, r);
    r = ks_run_program(x, step, argv, ks_run_timeout_ms(x, "systemctl_timeout", 60), false);
    if (r < 0)
        return r;
    x->r->rebooting = true;
    r = ks_run_done(x, step, "systemctl reboot");
    return r < 0 ? ks_run_journal_error(x, r) : 0;
}

static bool wanted_reboot(const ks_apply_ctx *a)
{
    return a->o->reboot;
}

static int run_reboot(ks_run *x, ks_apply_ctx *a)
{
    return ks_run_reboot_now(
        x, "reboot",
        &(ks_reboot_expect){
            .trial = a->new, .old = a->old, .then = "then 'kswap apply --reboot' again"},
        "the trial stays armed ('kswap rollback' cancels it), nothing else changed");
}

static int describe_reboot(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    char *reboot[] = {(char *)"systemctl", (char *)"reboot", NULL};
    int r;

    (void)x;
    (void)a;
    r = ks_dryrun_add_program(d, "reboot", reboot, false);
    if (r >= 0)
        r = ks_dryrun_add_step(d, "reboot", "systemctl reboot");
    return r;
}

const ks_apply_step ks_step_reboot = {
    .name = "reboot",
    .reaches = _KS_STATE_INVALID, /* the trial stays armed whatever the reboot's fate */
    .wanted = wanted_reboot,
    .run = run_reboot,
    .describe = describe_reboot,
};
