/* SPDX-License-Identifier: GPL-2.0-or-later */
/* apply's step "install": apt-get installs the new kernel; the autoremove guard keeps both. */
#include <limits.h>

#include "lib/basic/fileio.h"
#include "lib/engine/apply-steps.h"
#include "lib/host/dpkg.h"
#include "lib/host/kernels.h"
#include "lib/repo/autoremove.h"

/*
 * apt-get install failed (/boot full, a postinst that failed): the error keeps apt's and
 * dpkg's words, says that nothing is armed, and names what cleans up, from what dpkg's status
 * says it left behind (lib/host/dpkg.h).
 */
static int install_failed(ks_run *x, int err)
{
    _cleanup_(ks_dpkg_unfinished_list_done) ks_dpkg_unfinished_list l = {0};
    _cleanup_free_ char *names = NULL, *dpkg = ks_dpkg_error_from_output(x->r->output), *msg = NULL;
    const char *todo = "'kswap rollback --purge' removes what was installed";
    bool reinstall = false;

    (void)ks_dpkg_read_unfinished(x->root, &l);
    for (size_t i = 0; i < l.n; i++) {
        char *n = ks_asprintf("%s%s%s (%s%s)", strempty(names), names ? ", " : "", l.v[i].package,
                              l.v[i].state, l.v[i].reinstreq ? ", reinstreq" : "");
        free(names);
        names = n;
        if (!ks_dpkg_unfinished_is_configurable(&l.v[i]))
            reinstall = true;
    }
    if (names && !reinstall)
        todo = "free space in /boot ('df -h /boot'), then 'dpkg --configure -a' finishes it and "
               "'kswap apply' goes on, or 'kswap rollback --purge' removes it";
    else if (names)
        todo = "free space in /boot ('df -h /boot'), then 'apt-get install --reinstall' of it "
               "(dpkg removes a half-installed package only after a reinstall), then 'kswap "
               "apply' again or 'kswap rollback --purge'";
    /* "apt's error (dpkg's error); nothing is armed, ...; dpkg left PKG (STATE): what to do" */
    msg = ks_asprintf("%s%s%s%s; nothing is armed, every boot starts the old kernel%s%s",
                      strempty(x->r->error), dpkg ? " (" : "", dpkg ? dpkg : "", dpkg ? ")" : "",
                      names ? "; dpkg left " : "", names ? names : "");
    if (msg) {
        char *full = ks_asprintf("%s%s%s", msg, names ? ": " : "; ", todo);
        if (full) {
            free(x->r->error);
            x->r->error = full;
            (void)ks_journal_set(x->j, KS_JF_REASON, full);
            (void)ks_journal_save(x->j);
        }
    }
    return err;
}

static int install(ks_run *x, const ks_apply_opts *o, const ks_plan *plan, char **ret_release)
{
    _cleanup_strv_free_ char **before = NULL, **after = NULL;
    _cleanup_free_ char *deb_abs = NULL, *release = NULL;
    const char *pkg;
    int r;

    r = ks_run_begin(x, "install", "installing the new kernel");
    if (r < 0)
        return ks_run_journal_error(x, r);

    if (o->kernel && ks_kernels_find(&plan->kernels, o->kernel)) {
        /* Installed already: nothing for apt, but the journal must name the trial kernel
         * (accept judges against it), as after an install. */
        r = ks_journal_set(x->j, KS_JF_NEW_KERNEL, o->kernel);
        if (r >= 0)
            r = ks_journal_set_state(x->j, KS_STATE_INSTALLED);
        if (r >= 0)
            r = ks_journal_step_end(x->j, "install", KS_STEP_SKIPPED, "installed already");
        if (r < 0)
            return ks_run_journal_error(x, r);
        *ret_release = strdup(o->kernel);
        return *ret_release ? 0 : -ENOMEM;
    }
    if (o->kernel)
        return ks_run_fail_step(
            x, "install", -ENOENT,
            "kernel %s is not installed (no /boot/vmlinuz-%s); give --deb FILE or "
            "--package NAME",
            o->kernel, o->kernel);

    r = ks_run_releases_now(x->root, &before);
    if (r < 0)
        return ks_run_fail_step(x, "install", r, "cannot list the kernels in /boot: %s",
                                strerror(-r));

    if (o->deb) {
        deb_abs = realpath(o->deb, NULL);
        if (!deb_abs)
            return ks_run_fail_step(x, "install", -errno, "cannot open '%s': %m", o->deb);
        pkg = deb_abs;
    } else {
        char *update[] = {KS_APT_UPDATE_ARGV, NULL};
        pkg = o->package ? o->package : plan->target_package;
        ks_run_progress(x, "install", "apt-get update (%s %s only)", plan->repo_uri,
                        plan->xanmod_suite);
        r = ks_run_program(x, "install", update, ks_run_timeout_ms(x, "apt_timeout", 1800), true);
        if (r < 0)
            return r;
    }
    {
        /* Recorded before apt runs, so that an interrupted install can still be purged. A
         * local kernel package is named after the release plan read from it. */
        _cleanup_free_ char *image = o->deb && plan->target_release
                                         ? ks_asprintf("linux-image-%s", plan->target_release)
                                         : NULL;
        r = ks_journal_note_package(x->j, image ? image : pkg, NULL);
        if (r < 0)
            return ks_run_journal_error(x, r);
    }
    {
        char *install[] = {KS_APT_INSTALL_ARGV, (char *)pkg, NULL};
        r = ks_run_wait_for_dpkg(x, "install");
        if (r < 0)
            return r;
        ks_run_progress(x, "install", "apt-get install %s", pkg);
        r = ks_run_program(x, "install", install, ks_run_timeout_ms(x, "apt_timeout", 1800), true);
        if (r < 0)
            return install_failed(x, r);
    }

    /* The release comes from what the package put on disk, never from apt's words. */
    r = ks_run_releases_now(x->root, &after);
    if (r < 0)
        return ks_run_fail_step(x, "install", r, "cannot list the kernels in /boot: %s",
                                strerror(-r));
    for (char **a = after; *a; a++)
        if (!ks_strv_contains(before, *a) && (!release || strstr(*a, "xanmod"))) {
            free(release);
            release = strdup(*a);
        }
    /* Installed before (apt had nothing to do, or a run was killed after the install): the
     * release plan expected is the one, if it is on disk now. */
    if (!release && plan->target_release && ks_strv_contains(after, plan->target_release))
        release = strdup(plan->target_release);
    if (!release)
        return ks_run_fail_step(x, "install", -ENOENT,
                                "the install brought no new kernel into /boot (boot/vmlinuz-*)");
    if (!o->deb) {
        _cleanup_free_ char *image = ks_asprintf("linux-image-%s", release);
        bool installed = false;
        if (image && ks_dpkg_is_installed(x->root, image, &installed) >= 0 && installed)
            (void)ks_journal_note_package(x->j, image, NULL);
    }
    r = ks_journal_set(x->j, KS_JF_NEW_KERNEL, release);
    if (r >= 0)
        r = ks_journal_set_state(x->j, KS_STATE_INSTALLED);
    if (r >= 0)
        r = ks_run_done(x, "install", release);
    if (r < 0)
        return ks_run_journal_error(x, r);
    *ret_release = TAKE_PTR(release);
    return 0;
}

int ks_apply_autoremove_error(ks_run *x, const char *step, int r)
{
    if (r == -EEXIST)
        return ks_run_fail_step(x, step, r,
                                "'/%s' exists and kswap did not write it: move it away, then run "
                                "'kswap apply' again",
                                KS_AUTOREMOVE_PATH);
    return ks_run_fail_step(x, step, r, "cannot %s '/%s': %s", step ? "write" : "read",
                            KS_AUTOREMOVE_PATH, ks_strerror(r));
}

/* From here on the swap relies on both kernels: apt autoremove must leave them (rewritten on a
 * resumed run, replaced by the next swap's pair, removed by rollback --purge). */
static int keep_kernels(ks_run *x, const char *old, const char *new)
{
    char *releases[] = {(char *)old, (char *)new, NULL};
    int r = ks_autoremove_keep(x->root, releases);

    if (r < 0)
        return ks_apply_autoremove_error(x, "install", r);
    if (r > 0)
        ks_run_progress(x, "install",
                        "%s and %s kept from apt autoremove while the swap needs them (/%s)", old,
                        new, KS_AUTOREMOVE_PATH);
    return 0;
}

static int run_install(ks_run *x, ks_apply_ctx *a)
{
    const ks_journal_step *s = ks_journal_step_find(x->j, "install");
    const char *known = ks_journal_get(x->j, KS_JF_NEW_KERNEL);
    int r = 0;

    /* Resuming after the install finished: the kernel is on disk, apt need not run again. */
    if (s && s->status == KS_STEP_DONE && known && ks_kernels_find(&a->plan.kernels, known)) {
        a->new = strdup(known);
        if (!a->new)
            return -ENOMEM;
    } else
        r = install(x, a->o, &a->plan, &a->new);
    if (r >= 0 && streq_ptr(a->new, a->old))
        r = ks_run_fail_step(x, "install", -EINVAL,
                             "the new kernel %s is the running kernel: %s brought nothing newer; "
                             "nothing is armed",
                             a->old, a->o->deb ? "the package" : "the repository");
    if (r >= 0)
        r = keep_kernels(x, a->old, a->new);
    return r;
}

static int describe_install(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    const ks_apply_opts *o = a->o;
    const ks_plan *plan = &a->plan;
    _cleanup_free_ char *deb_abs = NULL;
    const char *pkg = NULL;
    int r;

    if (a->repository) {
        pkg = o->package ? o->package : plan->target_package;
        d->source_kind = strdup("repository");
        d->source = ks_asprintf("%s %s", plan->repo_uri, plan->xanmod_suite);
        for (char **c = plan->repo_components; d->source && c && *c; c++) {
            char *n = ks_asprintf("%s %s", d->source, *c);
            free(d->source);
            d->source = n;
        }
    } else if (o->deb) {
        deb_abs = realpath(o->deb, NULL);
        if (!deb_abs)
            return ks_run_fail_step(x, "install", -errno, "cannot open '%s': %m", o->deb);
        pkg = deb_abs;
        d->source_kind = strdup("deb");
        d->source = strdup(deb_abs);
    } else {
        d->source_kind = strdup("installed");
        d->source = strdup(o->kernel);
    }
    if (!d->source_kind || !d->source)
        return -ENOMEM;

    if (pkg) {
        char *update[] = {KS_APT_UPDATE_ARGV, NULL};
        char *install_argv[] = {KS_APT_INSTALL_ARGV, (char *)pkg, NULL};

        /* A local package by the name the journal records for it (linux-image-RELEASE). */
        d->package = o->deb && plan->target_release
                         ? ks_asprintf("linux-image-%s", plan->target_release)
                         : strdup(pkg);
        if (!d->package)
            return -ENOMEM;
        r = a->repository ? ks_dryrun_add_program(d, "install", update, false) : 0;
        if (r >= 0)
            r = ks_dryrun_add_program(d, "install", install_argv, false);
        if (r >= 0)
            r = ks_dryrun_add_step(d, "install", pkg);
    } else
        r = ks_dryrun_add_step(d, "install", "skipped: installed already");
    if (r < 0)
        return r;
    if (a->installed)
        d->new_kernel = strdup(o->kernel);
    else if (plan->target_release)
        d->new_kernel = strdup(plan->target_release);
    if (d->new_kernel) {
        char *releases[] = {(char *)a->old, d->new_kernel, NULL};
        _cleanup_free_ char *guard = ks_autoremove_text(releases);
        if (!guard)
            return -ENOMEM;
        r = ks_dryrun_add_file(d, KS_AUTOREMOVE_PATH, "write",
                               "the old and the new kernel kept from apt autoremove", guard,
                               strlen(guard), false);
    }
    return r;
}

const ks_apply_step ks_step_install = {
    .name = "install",
    .reaches = KS_STATE_INSTALLED,
    .run = run_install,
    .describe = describe_install,
};
