/* SPDX-License-Identifier: GPL-2.0-or-later */
/* apply's step "prepare": kswap's GRUB drop-in, update-grub, the running kernel the default. */
#include "lib/basic/config.h"
#include "lib/basic/fileio.h"
#include "lib/engine/apply-steps.h"

char *ks_grub_dropin_text(bool add_panic)
{
    return ks_asprintf(
        "# Written by kswap: boot the proven kernel (saved_entry) until a new kernel has passed\n"
        "# acceptance; a trial boot is a one-shot next_entry. 'kswap rollback --purge' removes\n"
        "# what kswap installed; delete this file and run update-grub to go back to GRUB's\n"
        "# own default.\n"
        "GRUB_DEFAULT=saved\n"
        "%s",
        add_panic ? "# A trial kernel that panics must reboot by itself (into the old kernel).\n"
                    "GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} panic=10\"\n"
                  : "");
}

/* The drop-in as this apply writes it: [apply] add_panic = no leaves the command line alone (a
 * watchdog may do the job), and so does a panic= set already. */
static char *dropin_text(ks_run *x, const ks_plan *plan)
{
    bool add_panic = true;

    if (x->c->config)
        (void)ks_config_get_bool(x->c->config, "apply", "add_panic", true, &add_panic);
    return ks_grub_dropin_text(plan->panic_value == NULL && add_panic);
}

static int run_prepare(ks_run *x, ks_apply_ctx *a)
{
    const ks_plan *plan = &a->plan;
    const char *old = a->old;
    _cleanup_free_ char *text = NULL, *detail = NULL;
    ks_boot b = {0};
    int r;

    r = ks_run_begin(x, "prepare",
                     "making the running kernel GRUB's default before installing anything");
    if (r < 0)
        return ks_run_journal_error(x, r);
    text = dropin_text(x, plan);
    if (!text)
        return -ENOMEM;
    r = ks_journal_note_file(x->j, KS_GRUB_DROPIN_PATH);
    if (r < 0)
        return ks_run_journal_error(x, r);
    ks_run_trace(x, "write", "/%s", KS_GRUB_DROPIN_PATH);
    r = ks_write_atomic(x->root, KS_GRUB_DROPIN_PATH, text, strlen(text), 0644);
    if (r < 0)
        return ks_run_fail_step(x, "prepare", r, "cannot write '/%s': %s", KS_GRUB_DROPIN_PATH,
                                strerror(-r));
    r = ks_run_update_grub_and_load(x, "prepare", &b);
    if (r < 0)
        return r;
    ks_run_trace(x, "write", "/%s: saved_entry = %s's entry", KS_GRUBENV_PATH, old);
    r = ks_boot_set_default(x->root, &b, old, &detail);
    if (r >= 0) {
        ks_grub_entry_path p = {0};
        if (ks_boot_entry_path(&b, old, &p) >= 0) {
            (void)ks_journal_set(x->j, KS_JF_OLD_PATH, p.id_path);
            (void)ks_journal_set(x->j, KS_JF_OLD_TITLE_PATH, p.title_path);
            ks_grub_entry_path_done(&p);
        }
    }
    ks_boot_done(&b);
    if (r < 0)
        return ks_run_fail_step(x, "prepare", r, "cannot make %s the default: %s", old,
                                strempty(detail));
    r = ks_journal_set_state(x->j, KS_STATE_PREPARED);
    if (r >= 0)
        r = ks_run_done(x, "prepare", "every boot starts the running kernel");
    return r < 0 ? ks_run_journal_error(x, r) : 0;
}

static int describe_prepare(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    char *update_grub[] = {(char *)"update-grub", NULL};
    _cleanup_free_ char *text = dropin_text(x, &a->plan);
    int r;

    if (!text)
        return -ENOMEM;
    r = ks_dryrun_add_file(d, KS_GRUB_DROPIN_PATH, "write",
                           "GRUB_DEFAULT=saved (and panic=10 unless a panic= applies)", text,
                           strlen(text), false);
    if (r >= 0)
        r = ks_dryrun_add_program(d, "prepare", update_grub, false);
    if (r >= 0)
        r = ks_dryrun_add_step(d, "prepare", "every boot starts the running kernel");
    return r;
}

const ks_apply_step ks_step_prepare = {
    .name = "prepare",
    .reaches = KS_STATE_PREPARED,
    .run = run_prepare,
    .describe = describe_prepare,
};
