/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * apply and apply --dry-run: the judgement before the first change (plan, dpkg's and kswap's
 * lock, the journal, accept's checklist on the running kernel), then the steps of the table
 * (lib/engine/apply-steps.h): run by apply, described by the dry run.
 */
#include <assert.h>

#include "lib/basic/debversion.h"
#include "lib/basic/fileio.h"
#include "lib/engine/accept.h"
#include "lib/engine/apply-source.h"
#include "lib/engine/apply-steps.h"
#include "lib/engine/history.h"
#include "lib/engine/plan-newer.h"
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
    if (ks_findings_worst(&x->r->findings) == KS_SEV_BLOCK)
        return ks_run_refuse(x, "the plan has blocking findings; nothing was changed");
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
    if (r >= 0 && !cr.passed)
        r = ks_run_refuse(x,
                          "accept's checklist fails on the running kernel (%zu required check%s): "
                          "a new kernel cannot be expected to pass what this one fails; nothing "
                          "was changed",
                          failed, failed == 1 ? "" : "s");
    else if (r >= 0)
        ks_run_progress(x, "check", "%zu checks pass on %s", cr.checks.n, strempty(cr.kernel));
    for (char **i = cr.items; r >= 0 && i && *i; i++)
        r = ks_strv_extend(&x->items_before, *i);
    for (char **i = cr.wanted; r >= 0 && i && *i; i++)
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

/*
 * A new apply: the journal starts again, but a swap that did not end pinned (failed, rolled
 * back) goes on, and what its earlier applies installed stays recorded for rollback --purge.
 * An idle journal that was saved is an apply killed before its prepare step ended (the
 * repository step runs while the journal is idle): the same swap starts over, keeping the
 * files it recorded and its identity (lib/engine/history.h: a swap is one record).
 */
static int reset_for_new_apply(ks_journal *j)
{
    ks_state s = ks_journal_state(j);

    if (s == KS_STATE_IDLE)
        return ks_journal_restart(j);
    if (s == KS_STATE_FAILED || s == KS_STATE_ROLLED_BACK)
        return ks_journal_reset_keep_changes(j);
    return ks_journal_reset(j);
}

/*
 * Whether this apply is the one the journal records (its source, lib/engine/apply-source.h):
 * the same source, or the same kernel from another (a package moved, --kernel of the release
 * a package installed). A journal of a kswap before sources names none: taken as the same.
 */
static bool same_source(const ks_journal *j, const ks_apply_ctx *a)
{
    const char *source = ks_journal_get(j, KS_JF_SOURCE),
               *new = ks_journal_get(j, KS_JF_NEW_KERNEL);
    const char *target = a->o->kernel ? a->o->kernel : a->o->deb ? a->plan.target_release : NULL;

    return !source || streq_ptr(source, a->source) || (new &&streq_ptr(target, new));
}

/* A trial is armed: the same apply again changes nothing (with --reboot, in the boot that armed
 * it, it reboots after the last look); another apply is refused, naming the armed trial. */
static int judge_armed(ks_run *x, ks_apply_ctx *a, bool dry)
{
    const char *new = ks_journal_get(x->j, KS_JF_NEW_KERNEL);
    const char *armed = ks_journal_armed_boot_id(x->j);
    _cleanup_free_ char *boot_id = NULL, *cmd = NULL, *mine = NULL;

    if (!same_source(x->j, a)) {
        cmd = ks_apply_command(ks_journal_get(x->j, KS_JF_SOURCE), "--yes --reboot");
        mine = ks_apply_source_args(a->source);
        return ks_run_refuse(x,
                             "a trial of %s is armed already, not of %s: reboot into it ('%s'), "
                             "or 'kswap rollback' cancels it before another apply; nothing was "
                             "changed",
                             strempty(new), mine ? mine : "this apply's kernel", strempty(cmd));
    }
    x->r->status = KS_SWAP_ALREADY;
    /* apply --reboot again, in the boot that armed it: the same last look, then reboot. */
    if (!dry && a->o->reboot && armed && ks_read_boot_id(x->root, &boot_id) >= 0 &&
        streq(armed, boot_id)) {
        int r;

        ks_run_progress(x, "apply", "a trial of %s is armed already in this boot", strempty(new));
        r = ks_run_reboot_now(
            x, KS_STEP_REBOOT,
            &(ks_reboot_expect){.trial = new,
                                .old = strempty(ks_journal_get(x->j, KS_JF_OLD_KERNEL)),
                                .then = "then 'kswap apply --reboot' again"},
            "nothing was changed, the trial stays armed ('kswap rollback' cancels it)");
        /* It rebooted: done, not unchanged (the journal counts the reboot). */
        if (r >= 0 && x->r->rebooting)
            x->r->status = KS_SWAP_DONE;
        return r;
    }
    cmd = ks_apply_command(ks_journal_get(x->j, KS_JF_SOURCE), "--yes --reboot");
    x->r->error = ks_asprintf("a trial of %s is armed already; reboot to try it ('%s' looks at "
                              "what the next boots load first), or 'kswap rollback' to cancel",
                              strempty(new), strempty(cmd));
    return 0;
}

/*
 * An apply with nothing to swap changes nothing: the kernel it would install runs already (a
 * bootstrap or a playbook run again after the node came back on NEW, or a repository that
 * offers nothing newer than the pinned kernel). Once kswap pinned it: unchanged (exit 0),
 * the pinned swap's record stays; else a refusal. The kernel is known from the package
 * (--deb), the release (--kernel) or apt's candidate in the repository's index. 1: apply
 * stops here, the result says why; 0: there is something to swap.
 */
/* target is an older release of the running XanMod kernel's own flavour (x64v3-xanmod...). */
static bool older_in_branch(const char *target, const char *running)
{
    _cleanup_free_ char *tf = NULL, *rf = NULL;

    if (!target || !running || !strstr(target, "xanmod") || !strstr(running, "xanmod"))
        return false;
    tf = ks_kernel_flavour(target);
    rf = ks_kernel_flavour(running);
    return tf && rf && streq(tf, rf) && ks_deb_version_compare(target, running) < 0;
}

static int judge_nothing_to_swap(ks_run *x, const ks_apply_ctx *a)
{
    const char *running = a->plan.running_kernel;
    const char *target = a->o->kernel ? a->o->kernel
                         : a->o->deb  ? a->plan.target_release
                                      : a->candidate;
    const char *pinned =
        ks_journal_state(x->j) == KS_STATE_PINNED ? ks_journal_get(x->j, KS_JF_NEW_KERNEL) : NULL;
    /* The repository's newest release is older than the XanMod kernel that runs (installed by
     * hand or by an earlier --deb): apply from the repository never moves a node back. */
    bool older = a->repository && older_in_branch(target, running);

    if (!target || (!streq_ptr(target, running) && !older))
        return 0;
    if (streq_ptr(pinned, running)) {
        x->r->status = KS_SWAP_ALREADY;
        x->r->error = a->repository ? ks_asprintf("the repository offers nothing newer than %s, "
                                                  "which runs and is pinned already",
                                                  running)
                                    : ks_asprintf("%s runs and is pinned already", running);
        return x->r->error ? 1 : -ENOMEM;
    }
    if (older)
        (void)ks_run_refuse(x,
                            "the repository's newest release %s is older than the running %s: "
                            "there is nothing to swap to; nothing was changed",
                            target, running);
    else
        (void)ks_run_refuse(x,
                            "%s is the running kernel already: there is nothing to swap to; "
                            "nothing was changed",
                            running);
    return 1;
}

/*
 * Everything apply judges before its first change, apply and apply --dry-run alike: the plan,
 * dpkg's lock (apply only: nothing is installed by a dry run), kswap's lock (shared for the dry
 * run), the journal and what it holds (a trial armed, a trial running, an apply stopped half-way
 * with its source and its old kernel), the repository tried and apt's candidate, nothing to
 * swap, and accept's checklist on the running kernel. Every refusal writes nothing
 * (ks_run_refuse). 1: apply goes ahead (a->old set; a->resume for a stopped apply); 0: the
 * result holds a verdict; negative errno: the result says why not.
 */
static int judge(ks_run *x, ks_apply_ctx *a, bool dry, ks_lock **lock)
{
    const ks_apply_opts *o = a->o;
    const char *running;
    ks_state s;
    int r;

    r = step_plan(x, o, &a->plan);
    if (r < 0) {
        /* Nothing changed: the journal is shown as it is, read without the lock. */
        _cleanup_free_ char *ignored = NULL;
        (void)ks_journal_load(x->root, &x->j, &ignored);
        return r;
    }
    a->installed = o->kernel && ks_kernels_find(&a->plan.kernels, o->kernel);
    a->repository = !o->deb && !a->installed;
    a->source =
        ks_apply_source_make(o->deb, o->kernel, o->package ? o->package : a->plan.target_package);
    running = a->plan.running_kernel;
    /* apt-get will run: wait for dpkg's lock before anything changes on disk. */
    if (!dry && !a->installed) {
        r = ks_run_wait_for_dpkg(x, NULL);
        if (r < 0)
            return r;
    }
    if (dry) {
        pid_t holder = 0;
        r = ks_lock_acquire_shared(
            x->root, ks_run_timeout_ms(x, "lock_timeout", KS_LOCK_TIMEOUT_MS_DEFAULT / 1000), lock,
            &holder);
        if (r == -EBUSY)
            return ks_run_busy(x, holder);
        if (r < 0) {
            x->r->status = KS_SWAP_FAILED;
            x->r->error =
                ks_asprintf("cannot take the lock '/%s': %s", KS_LOCK_PATH, ks_strerror(r));
            return r;
        }
        x->r->dry->locked = *lock != NULL;
    } else {
        r = ks_run_lock(x, lock);
        if (r < 0)
            return r;
    }
    r = ks_run_load_journal(x);
    if (r < 0)
        return r;
    /* An input the install step needs, checked before the first write. */
    r = ks_autoremove_check(x->root);
    if (r < 0)
        return ks_apply_autoremove_error(x, NULL, r);

    s = ks_journal_state(x->j);
    if (s == KS_STATE_ARMED)
        return judge_armed(x, a, dry);
    if (s == KS_STATE_TRIAL_BOOTED && streq_ptr(ks_journal_get(x->j, KS_JF_NEW_KERNEL), running)) {
        const char *verdict = ks_outcome_to_string(ks_journal_outcome(x->j));
        /* A verdict already (a pin that failed, a reboot back to come): status says what next. */
        if (verdict)
            return ks_run_refuse(x,
                                 "the trial of %s runs, judged %s and not pinned: 'kswap status' "
                                 "says what comes next; nothing was changed",
                                 running, verdict);
        return ks_run_refuse(x,
                             "the trial of %s runs and is not pinned yet: 'kswap status --wait' "
                             "waits for acceptance and the pin; nothing was changed",
                             running);
    }
    if (ks_state_info_get(s)->resumable) {
        const char *old = ks_journal_get(x->j, KS_JF_OLD_KERNEL);
        _cleanup_free_ char *cmd = ks_apply_command(ks_journal_get(x->j, KS_JF_SOURCE), "--yes");

        if (!same_source(x->j, a))
            return ks_run_refuse(x,
                                 "an apply of another kernel stopped after '%s': '%s' resumes "
                                 "it, 'kswap rollback' undoes it; nothing was changed",
                                 ks_state_to_string(s), strempty(cmd));
        /* An interrupted apply: the same old kernel must still be running. */
        if (!streq_ptr(old, running))
            return ks_run_refuse(x,
                                 "an interrupted apply started on %s, but %s is running; run "
                                 "'kswap rollback' first; nothing was changed",
                                 strempty(old), running);
        a->resume = true;
        a->old = old;
        return 1;
    }
    if (o->kernel && !a->installed)
        return ks_run_refuse(x,
                             "kernel %s is not installed (no /boot/vmlinuz-%s); give --deb FILE "
                             "or --package NAME; nothing was changed",
                             o->kernel, o->kernel);
    /* Day two, the repository path on a node that runs its pinned kernel: apt's lists know the
     * branch's newest release and it is that kernel (lib/engine/update.h): unchanged, before
     * apt runs. */
    if (!o->deb && !o->kernel && !o->package && s == KS_STATE_PINNED &&
        streq_ptr(ks_journal_get(x->j, KS_JF_NEW_KERNEL), running) && a->plan.update.current &&
        !a->plan.update.newest && a->plan.update.listed) {
        x->r->status = KS_SWAP_ALREADY;
        x->r->error = ks_asprintf("%s runs, is pinned and is the newest release of %s in apt's "
                                  "lists (%s); nothing was changed ('apt-get update' refreshes "
                                  "the lists)",
                                  running, strempty(a->plan.update.package), a->plan.update.listed);
        return x->r->error ? 0 : -ENOMEM;
    }
    if (a->repository) {
        r = ks_apply_plan_repository(x, a);
        if (r < 0)
            return r;
    }
    r = judge_nothing_to_swap(x, a);
    if (r != 0)
        return r < 0 ? r : 0;
    r = step_checklist(x, o);
    if (r < 0)
        return r;
    a->old = running;
    return 1;
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
        /* A step that is done leaves the journal in the state the table says (a resumed apply
         * that was further along stays there: ks_run_reach). */
        assert(s->reaches == _KS_STATE_INVALID || ks_journal_state(x->j) == s->reaches ||
               ks_state_info_get(ks_journal_state(x->j))->order >
                   ks_state_info_get(s->reaches)->order);
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

static void apply_ctx_done(ks_apply_ctx *a)
{
    ks_plan_done(&a->plan);
    ks_transaction_done(&a->repo_changes);
    free(a->new);
    free(a->source);
    free(a->candidate);
    free(a->candidate_version);
    *a = (ks_apply_ctx){0};
}

/* A new swap in the journal: the one it replaces into the history, then the snapshot of the
 * old kernel's setup, the source and the old kernel, saved: the run's first change. */
static int start_swap(ks_run *x, ks_apply_ctx *a)
{
    _cleanup_strv_free_ char **sysctls = snapshot_sysctls(a->o->common.config);
    int r;

    /* The swap this one replaces is in the history first (a no-op when it is already). */
    r = ks_history_note_finding(x->root, x->j, &x->r->findings);
    if (r < 0)
        return r;
    ks_run_changes(x);
    r = reset_for_new_apply(x->j);
    if (r >= 0)
        r = ks_journal_set(x->j, KS_JF_OLD_KERNEL, a->old);
    if (r >= 0)
        r = ks_journal_set(x->j, KS_JF_SOURCE, a->source);
    if (r >= 0)
        r = ks_journal_take_snapshot(x->j, KS_GRUBENV_PATH, KS_GRUB_DROPIN_PATH, sysctls);
    if (r >= 0)
        r = ks_journal_save(x->j);
    if (r < 0)
        return ks_run_journal_error(x, r);
    /* the journal's copy: a->old pointed into the plan */
    a->old = ks_journal_get(x->j, KS_JF_OLD_KERNEL);
    return 0;
}

int ks_apply(const ks_root *root, const ks_apply_opts *o, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    ks_apply_ctx a = {.o = o};
    ks_run x;
    int r;

    assert(root);
    assert(o);
    assert(ret);
    r = ks_run_init(&x, root, &o->common, ret);
    if (r < 0)
        return r;
    r = judge(&x, &a, false, &lock);
    if (r > 0) {
        if (a.resume)
            ks_run_progress(&x, "apply", "resuming an interrupted apply (state %s)",
                            ks_state_to_string(ks_journal_state(x.j)));
        else
            r = start_swap(&x, &a);
        if (r >= 0)
            r = run_steps(&x, &a);
    }
    apply_ctx_done(&a);
    return ks_run_end(&x, r < 0 ? r : 0);
}

/* The apply the dry run describes, as a command line that runs as is: its source's options
 * (of a resumed apply: the journal's), --key, --yes and --reboot. */
static int dry_apply_command(const ks_apply_ctx *a, ks_dryrun *d)
{
    _cleanup_free_ char *key = a->o->key_path && !a->resume ? ks_shell_quote(a->o->key_path) : NULL;
    _cleanup_free_ char *extra = ks_asprintf("%s%s%s--yes%s", key ? "--key " : "", strempty(key),
                                             key ? " " : "", a->o->reboot ? " --reboot" : "");

    if (!extra)
        return -ENOMEM;
    d->apply_command = ks_apply_command(a->source, extra);
    return d->apply_command ? 0 : -ENOMEM;
}

int ks_apply_dry_run(const ks_root *root, const ks_apply_opts *o, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    ks_apply_ctx a = {.o = o};
    ks_run x;
    int r;

    assert(root);
    assert(o);
    assert(ret);
    r = ks_run_init(&x, root, &o->common, ret);
    if (r < 0)
        return r;
    ret->dry = calloc(1, sizeof(*ret->dry));
    if (!ret->dry) {
        r = -ENOMEM;
        goto out;
    }
    r = judge(&x, &a, true, &lock);
    if (r <= 0)
        goto out;
    if (a.resume) {
        ret->dry->resume = true;
        ret->dry->resume_state = strdup(ks_state_to_string(ks_journal_state(x.j)));
    } else {
        r = ks_dryrun_add_step(ret->dry, "check",
                               "accept's checklist passes on the running kernel");
        if (r < 0)
            goto out;
    }
    ret->dry->old_kernel = strdup(a.old);
    if (!ret->dry->old_kernel) {
        r = -ENOMEM;
        goto out;
    }
    r = describe_steps(&x, &a, ret->dry);
    if (r >= 0)
        r = dry_apply_command(&a, ret->dry);
    if (r >= 0)
        ret->status = KS_SWAP_DONE;
out:
    apply_ctx_done(&a);
    return ks_run_end(&x, r < 0 ? r : 0);
}
