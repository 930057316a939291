/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * apply and apply --dry-run: the judgement before the first change (plan, dpkg's and kswap's
 * lock, the journal, accept's checklist on the running kernel), then the steps of the table
 * (lib/engine/apply-steps.h): run by apply, described by the dry run.
 */
#include <assert.h>

#include "lib/basic/fileio.h"
#include "lib/engine/accept.h"
#include "lib/engine/apply-steps.h"
#include "lib/engine/history.h"
#include "lib/host/boot-identity.h"
#include "lib/host/kernels.h"
#include "lib/repo/autoremove.h"

static int step_plan(ks_run *x, const ks_apply_opts *o, ks_plan *plan)
{
    ks_plan_opts po = {
        .kernel = o->kernel, .deb = o->deb, .branch = o->branch, .config = o->common.config};
    int r;

    ks_run_progress(x, "plan", "checking the host");
    r = ks_plan_run(x->root, &po, plan);
    if (r < 0) {
        x->r->status = KS_SWAP_FAILED;
        x->r->error = plan->error_detail
                          ? ks_asprintf("cannot assess the host: %s", plan->error_detail)
                          : ks_asprintf("cannot assess the host: cannot read '%s': %s",
                                        strempty(plan->error_file), strerror(-r));
        return r;
    }
    /* Passed checks stay in the plan; the result carries what an operator must read. */
    for (size_t i = 0; i < plan->findings.n; i++) {
        const ks_finding *f = &plan->findings.v[i];
        if (f->severity == KS_SEV_OK)
            continue;
        /* apply itself fixes these two before anything is installed */
        if (streq(f->id, "grub.default-not-saved") || streq(f->id, "kernel.no-panic-reboot"))
            continue;
        r = ks_findings_add(&x->r->findings, f->id, f->severity, f->remedy, "%s", f->message);
        if (r < 0)
            return r;
    }
    if (ks_findings_worst(&x->r->findings) == KS_SEV_BLOCK) {
        x->r->status = KS_SWAP_REFUSED;
        x->r->error = strdup("the plan has blocking findings; nothing was changed");
        return -EPERM;
    }
    return 0;
}

/*
 * accept's checklist on the old kernel, before the first change (kswap check, judged as accept
 * will judge the trial): a new kernel cannot be expected to pass what the old one fails.
 */
static int step_checklist(ks_run *x, const ks_apply_opts *o)
{
    ks_check_now_result cr = {0};
    size_t failed = 0;
    int r;

    ks_run_progress(x, "check", "running accept's checklist on the running kernel");
    r = ks_check_before_apply(x->root, o->common.config, &cr);
    if (r < 0) {
        x->r->status = KS_SWAP_FAILED;
        x->r->error = ks_asprintf("cannot run accept's checklist: %s; nothing was changed",
                                  cr.error ? cr.error : strerror(-r));
        ks_check_now_result_done(&cr);
        return r;
    }
    for (size_t i = 0; i < cr.checks.n && r >= 0; i++) {
        const ks_check *c = &cr.checks.v[i];
        if (!c->required || c->status == KS_CHECK_PASS)
            continue;
        failed++;
        r = ks_findings_add(&x->r->findings, "accept.fails-now", KS_SEV_BLOCK,
                            "fix it on this kernel first ('kswap check' shows the checklist), "
                            "or leave it out of the checklist ([accept] ignore)",
                            "%s fails on the running kernel %s: %s", c->id, strempty(cr.kernel),
                            strempty(c->detail));
    }
    if (r >= 0 && !cr.passed) {
        x->r->status = KS_SWAP_REFUSED;
        x->r->error = ks_asprintf(
            "accept's checklist fails on the running kernel (%zu required check%s): a new kernel "
            "cannot be expected to pass what this one fails; nothing was changed",
            failed, failed == 1 ? "" : "s");
        r = -EPERM;
    } else if (r >= 0)
        ks_run_progress(x, "check", "%zu checks pass on %s", cr.checks.n, strempty(cr.kernel));
    for (char **i = cr.items; r >= 0 && i && *i; i++)
        r = ks_strv_extend(&x->items_before, *i);
    ks_check_now_result_done(&cr);
    return r;
}

/* The live sysctls acceptance will judge ([accept] sysctl = KEY=VALUE ...), for comparison
 * later. */
static char **snapshot_sysctls(const ks_config *cfg)
{
    _cleanup_strv_free_ char **items = NULL;
    char **keys = NULL;

    if (!cfg || ks_config_get_strv(cfg, "accept", "sysctl", NULL, &items) < 0 || !items)
        return NULL;
    for (char **i = items; *i; i++)
        if (ks_strv_push(&keys, strndup(*i, strcspn(*i, "="))) < 0)
            return ks_strv_free(keys);
    return keys;
}

/* What apply and apply --dry-run say of a trial armed already. */
static char *armed_already(const ks_journal *j)
{
    return ks_asprintf("a trial of %s is armed already; reboot to try it ('kswap apply --reboot' "
                       "looks at what the next boots load first), or 'kswap rollback' to cancel",
                       strempty(ks_journal_get(j, KS_JF_NEW_KERNEL)));
}

/*
 * A new apply: the journal starts again, but a swap that did not end pinned (failed, rolled
 * back) goes on, and what its earlier applies installed stays recorded for rollback --purge.
 * An idle journal that was saved is an apply killed before its prepare step ended (the
 * repository step runs while the journal is idle): the same swap starts over, keeping the
 * files it recorded and its identity (lib/engine/history.h: a swap is one record).
 */
static void reset_for_new_apply(ks_journal *j)
{
    ks_state s = ks_journal_state(j);

    if (s == KS_STATE_IDLE)
        ks_journal_restart(j);
    else if (s == KS_STATE_FAILED || s == KS_STATE_ROLLED_BACK)
        ks_journal_reset_keep_changes(j);
    else
        ks_journal_reset(j);
}

static bool resumable(ks_state s)
{
    return s == KS_STATE_PREPARED || s == KS_STATE_INSTALLED || s == KS_STATE_VERIFIED;
}

/*
 * An apply with nothing to swap changes nothing. The trial's kernel runs and waits for its
 * verdict, or the kernel --deb or --kernel names runs already (a bootstrap run again after
 * the node came back on NEW): the journal would start over and end failed, "the new kernel
 * is the running kernel", losing a pinned swap's record (the power-cut matrix's apply cut
 * after the trial was armed). The repository's kernel is known only once apt ran (a newer one
 * may come), so there this looks at the trial alone. Returns true when apply stops here,
 * ret filled in; nothing was written.
 */
static bool nothing_to_swap(const ks_journal *j, const ks_apply_opts *o, const ks_plan *plan,
                            ks_swap_result *ret)
{
    const char *running = plan->running_kernel;
    const char *journal_new = ks_journal_get(j, KS_JF_NEW_KERNEL);
    ks_state s = ks_journal_state(j);

    if (s == KS_STATE_TRIAL_BOOTED && streq_ptr(journal_new, running)) {
        const char *verdict = ks_outcome_to_string(ks_journal_outcome(j));

        ret->status = KS_SWAP_REFUSED;
        /* A verdict already (a pin that failed, a reboot back to come): status says what next. */
        ret->error = verdict ? ks_asprintf("the trial of %s runs, judged %s and not pinned: "
                                           "'kswap status' says what comes next; nothing was "
                                           "changed",
                                           running, verdict)
                             : ks_asprintf("the trial of %s runs and is not pinned yet: 'kswap "
                                           "status --wait' waits for acceptance and the pin; "
                                           "nothing was changed",
                                           running);
        return true;
    }
    /* Day two, the repository path on a node that runs its pinned kernel: apt's lists know the
     * branch's newest release and it is that kernel (lib/engine/update.h). */
    if (!o->deb && !o->kernel && !o->package && s == KS_STATE_PINNED &&
        streq_ptr(journal_new, running) && plan->update.current && !plan->update.newest &&
        plan->update.listed) {
        ret->status = KS_SWAP_ALREADY;
        ret->error = ks_asprintf("%s runs, is pinned and is the newest release of %s in apt's "
                                 "lists (%s); nothing was changed ('apt-get update' refreshes "
                                 "the lists)",
                                 running, strempty(plan->update.package), plan->update.listed);
        return true;
    }
    if (!(o->deb || o->kernel) || !streq_ptr(plan->target_release, running))
        return false;
    if (s == KS_STATE_PINNED && streq_ptr(journal_new, running)) {
        ret->status = KS_SWAP_ALREADY;
        ret->error = ks_asprintf("%s runs and is pinned already", running);
        return true;
    }
    ret->status = KS_SWAP_REFUSED;
    ret->error = ks_asprintf("%s is the running kernel already: there is nothing to swap to; "
                             "nothing was changed",
                             running);
    return true;
}

/* The steps of apply, in order (lib/engine/apply-steps.h). */
static const ks_apply_step *const apply_steps[] = {
    &ks_step_repository, &ks_step_prepare, &ks_step_install,
    &ks_step_verify,     &ks_step_arm,     &ks_step_reboot,
};

static bool step_wanted(const ks_apply_step *s, const ks_apply_ctx *a)
{
    return !s->wanted || s->wanted(a);
}

/* apply: every step this apply needs, in order; the first failure ends the walk. */
static int run_steps(ks_run *x, ks_apply_ctx *a)
{
    for (size_t i = 0; i < ARRAY_SIZE(apply_steps); i++) {
        const ks_apply_step *s = apply_steps[i];
        int r;

        if (!step_wanted(s, a))
            continue;
        r = s->run(x, a);
        if (r < 0)
            return r;
        /* A step that is done leaves the journal in the state the table says. */
        assert(s->reaches == _KS_STATE_INVALID || ks_journal_state(x->j) == s->reaches);
    }
    return 0;
}

/* apply --dry-run: what every step this apply needs would do. */
static int describe_steps(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    for (size_t i = 0; i < ARRAY_SIZE(apply_steps); i++) {
        const ks_apply_step *s = apply_steps[i];
        int r;

        if (!step_wanted(s, a))
            continue;
        r = s->describe(x, a, d);
        if (r < 0)
            return r;
    }
    return 0;
}

static void apply_ctx_init(ks_apply_ctx *a, const ks_apply_opts *o)
{
    *a = (ks_apply_ctx){.o = o};
}

/* Once the plan is known: where the kernel comes from. */
static void apply_ctx_source(ks_apply_ctx *a)
{
    a->installed = a->o->kernel && ks_kernels_find(&a->plan.kernels, a->o->kernel);
    a->repository = !a->o->deb && !a->installed;
}

static void apply_ctx_done(ks_apply_ctx *a)
{
    ks_plan_done(&a->plan);
    free(a->new);
    a->new = NULL;
}

int ks_apply(const ks_root *root, const ks_apply_opts *o, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL;
    ks_apply_ctx a;
    ks_run x;
    int r;

    assert(root);
    assert(o);
    assert(ret);
    apply_ctx_init(&a, o);
    r = ks_run_init(&x, root, &o->common, ret);
    if (r < 0)
        return r;
    r = step_plan(&x, o, &a.plan);
    if (r < 0) {
        /* Nothing changed: the journal is shown as it is, read without the lock. */
        _cleanup_free_ char *ignored = NULL;
        (void)ks_journal_load(root, &x.j, &ignored);
        goto out;
    }
    apply_ctx_source(&a);
    /* apt-get will run: wait for dpkg's lock before anything changes on disk. */
    if (!a.installed) {
        r = ks_run_wait_for_dpkg(&x, NULL);
        if (r < 0)
            goto out;
    }
    r = ks_run_lock(&x, &lock);
    if (r < 0)
        goto out;
    r = ks_run_load_journal(&x);
    if (r < 0)
        goto out;
    running = strdup(a.plan.running_kernel);
    /* An input the install step needs, checked before the first write. */
    r = ks_autoremove_check(root);
    if (r < 0) {
        r = ks_apply_autoremove_error(&x, NULL, r);
        goto out;
    }

    if (ks_journal_state(x.j) == KS_STATE_ARMED) {
        _cleanup_free_ char *boot_id = NULL;
        const char *armed = ks_journal_armed_boot_id(x.j);

        ret->status = KS_SWAP_ALREADY;
        /* apply --reboot again, in the boot that armed it: the same last look, then reboot. */
        if (o->reboot && armed && ks_read_boot_id(root, &boot_id) >= 0 && streq(armed, boot_id)) {
            ks_run_progress(&x, "apply", "a trial of %s is armed already in this boot",
                            strempty(ks_journal_get(x.j, KS_JF_NEW_KERNEL)));
            r = ks_run_reboot_now(
                &x, "reboot",
                &(ks_reboot_expect){.trial = ks_journal_get(x.j, KS_JF_NEW_KERNEL),
                                    .old = strempty(ks_journal_get(x.j, KS_JF_OLD_KERNEL)),
                                    .then = "then 'kswap apply --reboot' again"},
                "nothing was changed, the trial stays armed ('kswap rollback' cancels it)");
            goto out;
        }
        ret->error = armed_already(x.j);
        goto out;
    }
    if (nothing_to_swap(x.j, o, &a.plan, ret))
        goto out;
    if (resumable(ks_journal_state(x.j))) {
        /* An interrupted apply: the same old kernel must still be running. */
        const char *old = ks_journal_get(x.j, KS_JF_OLD_KERNEL);
        if (!streq_ptr(old, running)) {
            r = ks_run_fail_step(&x, NULL, -ESTALE,
                                 "an interrupted apply started on %s, but %s is running; run "
                                 "'kswap rollback' first",
                                 strempty(old), running);
            goto out;
        }
        ks_run_progress(&x, "apply", "resuming an interrupted apply (state %s)",
                        ks_state_to_string(ks_journal_state(x.j)));
    } else {
        r = step_checklist(&x, o);
        if (r < 0)
            goto out;
        /* The swap this one replaces is in the history first (a no-op when it is already). */
        r = ks_history_note_finding(root, x.j, &ret->findings);
        if (r < 0)
            goto out;
        reset_for_new_apply(x.j);
        r = ks_journal_set(x.j, KS_JF_OLD_KERNEL, running);
        if (r >= 0) {
            _cleanup_strv_free_ char **sysctls = snapshot_sysctls(o->common.config);
            r = ks_journal_take_snapshot(x.j, KS_GRUBENV_PATH, KS_GRUB_DROPIN_PATH, sysctls);
        }
        if (r >= 0)
            r = ks_journal_save(x.j);
        if (r < 0) {
            ks_run_journal_error(&x, r);
            goto out;
        }
    }
    a.old = ks_journal_get(x.j, KS_JF_OLD_KERNEL);
    r = run_steps(&x, &a);
out:
    apply_ctx_done(&a);
    return ks_run_end(&x, r);
}

int ks_apply_dry_run(const ks_root *root, const ks_apply_opts *o, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *jerr = NULL;
    ks_journal *j = NULL;
    ks_apply_ctx a;
    pid_t holder = 0;
    ks_run x;
    int r;

    assert(root);
    assert(o);
    assert(ret);
    apply_ctx_init(&a, o);
    r = ks_run_init(&x, root, &o->common, ret);
    if (r < 0)
        return r;
    /* x.j stays NULL: ks_run_fail_step() then records nothing, the journal is only read. */
    ret->dry = calloc(1, sizeof(*ret->dry));
    if (!ret->dry) {
        r = -ENOMEM;
        goto out;
    }
    r = step_plan(&x, o, &a.plan);
    if (r < 0)
        goto out;
    apply_ctx_source(&a);
    r = ks_lock_acquire_shared(
        root, ks_run_timeout_ms(&x, "lock_timeout", KS_LOCK_TIMEOUT_MS_DEFAULT / 1000), &lock,
        &holder);
    if (r == -EBUSY) {
        ret->status = KS_SWAP_BUSY;
        ret->lock_holder = holder;
        ret->error = holder > 0 ? ks_asprintf("another kswap (pid %d) is changing this system; "
                                              "wait for it or check 'kswap status'",
                                              (int)holder)
                                : strdup("another kswap is changing this system; wait for it");
        goto out;
    }
    if (r < 0) {
        ret->status = KS_SWAP_FAILED;
        ret->error = ks_asprintf("cannot take the lock '/%s': %s", KS_LOCK_PATH, ks_strerror(r));
        goto out;
    }
    ret->dry->locked = lock != NULL;
    r = ks_journal_load(root, &j, &jerr);
    if (r < 0) {
        ret->status = KS_SWAP_FAILED;
        ret->error = ks_asprintf("cannot use the state journal '/%s': %s; move it away only "
                                 "after reading it",
                                 KS_JOURNAL_PATH, jerr ? jerr : strerror(-r));
        goto out;
    }
    if (ks_journal_state(j) == KS_STATE_ARMED) {
        ret->status = KS_SWAP_ALREADY;
        ret->error = armed_already(j);
        goto out;
    }
    if (nothing_to_swap(j, o, &a.plan, ret))
        goto out;
    if (resumable(ks_journal_state(j))) {
        a.old = ks_journal_get(j, KS_JF_OLD_KERNEL);
        if (!streq_ptr(a.old, a.plan.running_kernel)) {
            r = ks_run_fail_step(&x, NULL, -ESTALE,
                                 "an interrupted apply started on %s, but %s is running; run "
                                 "'kswap rollback' first",
                                 strempty(a.old), a.plan.running_kernel);
            goto out;
        }
        ret->dry->resume = true;
        ret->dry->resume_state = strdup(ks_state_to_string(ks_journal_state(j)));
    } else {
        r = step_checklist(&x, o);
        if (r < 0)
            goto out;
        r = ks_dryrun_add_step(ret->dry, "check",
                               "accept's checklist passes on the running kernel");
        if (r < 0)
            goto out;
        a.old = a.plan.running_kernel;
    }
    ret->dry->old_kernel = strdup(a.old);
    if (!ret->dry->old_kernel) {
        r = -ENOMEM;
        goto out;
    }
    r = describe_steps(&x, &a, ret->dry);
    if (r >= 0)
        ret->status = KS_SWAP_DONE;
out:
    apply_ctx_done(&a);
    if (!j) {
        _cleanup_free_ char *ignored = NULL;
        (void)ks_journal_load(root, &j, &ignored);
    }
    r = ks_run_end(&x, r);
    ret->journal = j;
    return r;
}
