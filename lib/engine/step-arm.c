/* SPDX-License-Identifier: GPL-2.0-or-later */
/* apply's step KS_STEP_ARM: the trial's GRUB entries, its boot files read back, the one-shot. */
#include <ctype.h>

#include "lib/basic/config.h"
#include "lib/engine/apply-steps.h"
#include "lib/engine/run-snapshot.h"
#include "lib/engine/tcp-report.h"
#include "lib/engine/trial.h"
#include "lib/engine/trialboot.h"
#include "lib/host/boot-identity.h"
#include "lib/host/bootfiles.h"
#include "lib/kernel/initrd.h"

int ks_run_trial_deadline(ks_run *x, int *ret)
{
    int v = KS_TRIAL_DEADLINE_DEFAULT_S;

    if (x->c->config &&
        ks_config_get_int(x->c->config, "accept", "deadline", KS_TRIAL_DEADLINE_DEFAULT_S, &v) < 0)
        return -EINVAL;
    if (v < KS_TRIAL_DEADLINE_MIN_S || v > KS_TRIAL_DEADLINE_MAX_S)
        return -ERANGE;
    *ret = v;
    return 0;
}

/*
 * The trial's own GRUB entries (lib/engine/trialboot.h): the script in /etc/grub.d from the
 * entries update-grub just wrote, recorded in the journal first, then update-grub again.
 */
static int write_trial_entries(ks_run *x, ks_boot *b, const char *old, const char *new,
                               const char *boot_id)
{
    _cleanup_free_ char *args = NULL, *text = NULL, *detail = NULL, *id = NULL;
    ks_trial_watchdog wd;
    int deadline = 0, r;

    r = ks_run_trial_deadline(x, &deadline);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ARM, -EINVAL,
                                "[accept] deadline must be a number of seconds from %d to %d",
                                KS_TRIAL_DEADLINE_MIN_S, KS_TRIAL_DEADLINE_MAX_S);
    /* The arming boot's id, without dashes: one trial per arming boot. */
    id = calloc(1, KS_TRIAL_ID_MAX);
    if (!id)
        return -ENOMEM;
    ks_trial_id(boot_id, id);
    r = ks_trial_watchdog_pick(x->root, new, &wd);
    if (r < 0)
        return r;
    args = ks_trial_args(id, deadline, &wd);
    if (!args)
        return -ENOMEM;
    if (wd.kind == KS_TRIAL_WATCHDOG_DEVICE)
        ks_run_progress(x, KS_STEP_ARM,
                        "the trial boot arms the watchdog %s (%d s); the verdict disarms it",
                        wd.device, KS_TRIAL_WATCHDOG_SEC);
    else if (wd.kind == KS_TRIAL_WATCHDOG_SOFTDOG)
        ks_run_progress(x, KS_STEP_ARM,
                        "no watchdog device: the trial boot loads softdog and arms it (%d s); the "
                        "verdict disarms it",
                        KS_TRIAL_WATCHDOG_SEC);
    else
        ks_run_progress(x, KS_STEP_ARM,
                        "no watchdog device and %s has no softdog: the trial boot arms none", new);
    r = ks_trial_grubd_text(b->cfg, new, old, args, &text, &detail);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ARM, r, "cannot write the trial's GRUB entries: %s",
                                detail ? detail : strerror(-r));
    r = ks_journal_note_file(x->j, KS_TRIAL_GRUBD_PATH);
    if (r < 0)
        return ks_run_journal_error(x, r);
    ks_run_trace(x, "write", "/%s", KS_TRIAL_GRUBD_PATH);
    r = ks_trial_grubd_write(x->root, text);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ARM, r, "cannot write '/%s': %s", KS_TRIAL_GRUBD_PATH,
                                strerror(-r));
    ks_boot_done(b);
    return ks_run_update_grub_and_load(x, KS_STEP_ARM, b);
}

/* The host layer's initrd reader: the whole image decompressed in this process. */
static int initrd_unpacks(int fd, char **ret_why)
{
    return ks_initrd_unpacks_fd(fd, KS_INITRD_DATA_MAX, ret_why);
}

/*
 * What the trial boot loads, and what its way back (the old kernel) loads, durable and read
 * back before next_entry names the trial (lib/host/bootfiles.h): a file that fails refuses
 * the arming with its finding.
 */
static int settle_boot_files(ks_run *x, const char *old, const char *new)
{
    ks_bootfiles_want want = {
        .release = new,
        .entry_id = KS_TRIAL_ENTRY_ID,
        .old_release = old,
        .wayback_id = KS_WAYBACK_ENTRY_ID,
        .initrd_unpacks = initrd_unpacks,
    };
    ks_bootfiles_stats st = {0};
    int r = ks_bootfiles_settle(x->root, &want, &x->r->findings, &st);

    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ARM, r, "cannot check the boot files of %s: %s", new,
                                strerror(-r));
    /* The disk refused a sync (full, failing): kswap could not act, a failure (exit 1) that
     * says why, not a verdict on the kernel. */
    if (r > 0 && ks_findings_get(&x->r->findings, "boot.sync-failed"))
        return ks_run_fail_step(x, KS_STEP_ARM, -EIO,
                                "%s; nothing is armed, every boot starts the old kernel",
                                ks_findings_get(&x->r->findings, "boot.sync-failed")->message);
    if (r > 0) {
        bool way_back = ks_findings_get(&x->r->findings, "boot.old-kernel-damaged") ||
                        ks_findings_get(&x->r->findings, "boot.old-initrd-damaged") ||
                        ks_findings_get(&x->r->findings, "boot.way-back-entry-missing");
        return ks_run_block_step(
            x, KS_STEP_ARM, -EIO,
            way_back ? "the way back to %s did not read back intact (see the findings): "
                       "a trial that fails could not come back; nothing is armed, "
                       "repair it first"
                     : "the boot files of %s did not read back intact (see the "
                       "findings); nothing is armed, every boot starts the old kernel",
            way_back ? old : new);
    }
    ks_run_progress(
        x, KS_STEP_ARM,
        "kernel, initrd, module indexes and grub.cfg of %s on disk and read back, and the "
        "way back's kernel and initrd (%s, %u files) too (%u files, %u directories synced; "
        "%u initrds decompressed%s%s)",
        new, old, st.old_files, st.files_synced, st.dirs_synced, st.initrds_unpacked,
        st.initrds_magic_only ? ", others by their magic only: a compression kswap does not "
                                "decompress"
                              : "",
        st.checkpoints > 0 ? "; the journal written home for GRUB" : "");
    return 0;
}

static int run_arm(ks_run *x, ks_apply_ctx *a)
{
    const char *old = a->old, *new = a->new;
    _cleanup_free_ char *detail = NULL, *boot_id = NULL;
    ks_grub_entry_path p = {0};
    uint64_t btime = 0;
    ks_boot b = {0};
    int r;

    r = ks_run_begin(x, KS_STEP_ARM, "arming a one-shot trial boot of the new kernel");
    if (r < 0)
        return ks_run_journal_error(x, r);
    if (ks_read_boot_id(x->root, &boot_id) < 0 || ks_read_btime(x->root, &btime) < 0) {
        free(boot_id);
        boot_id = strdup("unknown");
        btime = 0;
    }
    r = ks_run_update_grub_and_load(x, KS_STEP_ARM, &b);
    if (r < 0)
        return r;
    r = write_trial_entries(x, &b, old, new, boot_id);
    if (r >= 0)
        r = settle_boot_files(x, old, new);
    if (r < 0) {
        ks_boot_done(&b);
        return r;
    }
    /* kswap-accept.service runs at boot only while this flag exists: before next_entry is. */
    if (ks_trial_flag_set(x->root, new) < 0)
        ks_run_progress(x, KS_STEP_ARM,
                        "cannot create /%s: kswap-accept.service will not run at boot",
                        KS_TRIAL_FLAG_PATH);
    /* Stage marks of an earlier trial must not be taken for this one's. */
    if (ks_trial_stages_clear(x->root) < 0)
        ks_run_progress(x, KS_STEP_ARM, "cannot remove /%s", KS_TRIAL_STAGES_PATH);
    /* update-grub may have renumbered the menu: name the old kernel's entry again first. */
    r = ks_boot_set_default(x->root, &b, old, &detail);
    ks_run_trace(x, "write", "/%s: saved_entry = %s's entry, next_entry = %s", KS_GRUBENV_PATH, old,
                 KS_TRIAL_ENTRY_ID);
    if (r >= 0)
        r = ks_boot_arm(x->root, &b, new, old, KS_TRIAL_ENTRY_ID, &detail);
    if (r >= 0 && ks_boot_entry_path(&b, new, &p) >= 0) {
        (void)ks_journal_set(x->j, KS_JF_NEW_PATH, p.id_path);
        (void)ks_journal_set(x->j, KS_JF_NEW_TITLE_PATH, p.title_path);
        ks_grub_entry_path_done(&p);
    }
    ks_boot_done(&b);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ARM, r, "cannot arm the trial of %s: %s", new,
                                strempty(detail));
    {
        /* What runs now, on the old kernel: the checklist of accept after the trial boot. */
        _cleanup_free_ char *summary = NULL;
        if (ks_record_running(x->root, x->c->config, old, x->j, x->items_before, &summary) < 0)
            ks_run_progress(
                x, KS_STEP_ARM,
                "cannot take the snapshot of what runs: accept checks only the configured list");
        else if (summary)
            ks_run_progress(x, KS_STEP_ARM, "%s", summary);
    }
    {
        /* The node's TCP health on the old kernel since its boot: kswap report's baseline. */
        _cleanup_free_ char *summary = NULL;
        if (ks_tcp_record(x->root, x->j, KS_TCP_BASELINE, &summary) < 0)
            ks_run_progress(x, "arm",
                            "cannot read the node's TCP counters: kswap report has no baseline");
        else if (summary)
            ks_run_progress(x, "arm", "%s", summary);
    }
    r = ks_journal_set_armed(x->j, boot_id, btime);
    if (r >= 0)
        r = ks_run_reach(x, KS_STATE_ARMED);
    if (r >= 0)
        r = ks_run_done(x, KS_STEP_ARM,
                        "boot 1: new kernel (one-shot trial entry), then the old kernel");
    if (r < 0)
        return ks_run_journal_error(x, r);
    /* Armed: apply is done (a reboot may follow). */
    x->r->status = KS_SWAP_DONE;
    return 0;
}

/* The trial's arguments as arming would write them now (the boot id of this boot, the
 * watchdog for new, which may not be installed yet: then only a device counts). */
static char *dry_trial_args(ks_run *x, const char *new)
{
    _cleanup_free_ char *boot_id = NULL;
    ks_trial_watchdog wd = {0};
    char id[KS_TRIAL_ID_MAX];
    int deadline = 0;

    if (ks_run_trial_deadline(x, &deadline) < 0)
        return NULL;
    if (ks_trial_watchdog_pick(x->root, new ? new : "", &wd) < 0)
        return NULL;
    (void)ks_read_boot_id(x->root, &boot_id);
    ks_trial_id(boot_id, id);
    return ks_trial_args(id, deadline, &wd);
}

static int describe_arm(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    char *update_grub[] = {(char *)"update-grub", NULL};
    _cleanup_free_ char *args = NULL, *err = NULL;
    ks_boot b = {0};
    int r;

    /* update-grub twice (the new kernel's entries, then the trial's), grubenv. */
    r = ks_dryrun_add_program(d, KS_STEP_ARM, update_grub, false);
    if (r >= 0)
        r = ks_dryrun_add_program(d, KS_STEP_ARM, update_grub, false);
    if (r < 0)
        return r;
    args = dry_trial_args(x, d->new_kernel);
    if (!args)
        return ks_run_fail_step(x, KS_STEP_ARM, -EINVAL,
                                "[accept] deadline must be a number of seconds from %d to %d",
                                KS_TRIAL_DEADLINE_MIN_S, KS_TRIAL_DEADLINE_MAX_S);
    r = ks_boot_load(x->root, &b, &err);
    if (r < 0)
        return ks_run_fail_step(x, KS_STEP_ARM, r, "%s", strempty(err));
    /* Only a kernel that is installed (and in grub.cfg) now can be forecast now. */
    r = ks_dryrun_forecast(d, x->root, &b, a->old, a->installed ? a->o->kernel : NULL, args);
    ks_boot_done(&b);
    if (r >= 0)
        r = ks_dryrun_add_file(d, KS_TRIAL_FLAG_PATH, "write",
                               "the trial flag: kswap-accept.service runs at the next boot", NULL,
                               0, false);
    if (r >= 0)
        r = ks_dryrun_add_file(d, KS_JOURNAL_PATH, "write",
                               "the state journal, saved before and after every step", NULL, 0,
                               false);
    if (r >= 0)
        r = ks_dryrun_add_step(d, KS_STEP_ARM,
                               "boot 1: new kernel (one-shot trial entry), then the old kernel");
    return r;
}

const ks_apply_step ks_step_arm = {
    .name = KS_STEP_ARM,
    .reaches = KS_STATE_ARMED,
    .run = run_arm,
    .describe = describe_arm,
};
