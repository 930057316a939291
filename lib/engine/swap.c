/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <time.h>

#include "lib/repo/apt-status.h"
#include "lib/repo/aptsource.h"
#include "lib/repo/autoremove.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/config.h"
#include "lib/engine/accept.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/bootpeek.h"
#include "lib/engine/dpkgwait.h"
#include "lib/engine/history.h"
#include "lib/host/boot-identity.h"
#include "lib/host/bootfiles.h"
#include "lib/host/dpkg.h"
#include "lib/basic/fileio.h"
#include "lib/host/kernels.h"
#include "lib/repo/keyring.h"
#include "lib/repo/probe.h"
#include "lib/engine/lock.h"
#include "lib/basic/spawn.h"
#include "lib/engine/run-snapshot.h"
#include "lib/engine/swap.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/rebootcheck.h"
#include "lib/engine/trial.h"
#include "lib/engine/trialboot.h"
#include "lib/kernel/initrd.h"
#include "lib/kernel/verify.h"

#include "build-config.h" /* KSWAP_DATADIR */

#define MIN_MS 60000u

/* apt speaks English to kswap whatever the operator's locale: its phases (the Status-Fd
 * messages, "Preparing %s") and the repository check's errors are read by their words. LANGUAGE
 * empty, since gettext would prefer it to the locale. */
#define APT_ENV_LC_ALL "LC_ALL=C.UTF-8"
#define APT_ENV_LANGUAGE "LANGUAGE="

/* apt-get as apply's install step runs it (apply --dry-run lists the same argv). */
#define APT_UPDATE_ARGV                                                                            \
    (char *)"apt-get", (char *)"-q", (char *)"-o",                                                 \
        (char *)"Dir::Etc::sourcelist=sources.list.d/xanmod.sources", (char *)"-o",                \
        (char *)"Dir::Etc::sourceparts=-", (char *)"-o", (char *)"APT::Get::List-Cleanup=0",       \
        (char *)"update"
#define APT_INSTALL_ARGV                                                                           \
    (char *)"apt-get", (char *)"-q", (char *)"-y", (char *)"--no-install-recommends",              \
        (char *)"-o", (char *)"Dpkg::Options::=--force-confdef", (char *)"-o",                     \
        (char *)"Dpkg::Options::=--force-confold", (char *)"install"

/* One run of an engine command: the root, the options, the journal and the result. */
typedef struct run {
    const ks_root *root;
    const ks_swap_common *c;
    ks_journal *j;
    ks_swap_result *r;
    char *root_abs;      /* KSWAP_ROOT for the programs; NULL on the running system */
    char **items_before; /* the snapshot's items when this apply began (its check step) */
    bool locked;         /* kswap's lock is held: the swap history may be written */
    bool state_stays;    /* a failure now (the reboot) records its step, never the state */
    char *dropin_purged; /* rollback --purge: the drop-in's text it replaced or removed */
} run;

void ks_swap_result_done(ks_swap_result *r)
{
    ks_findings_clear(&r->findings);
    free(r->error);
    free(r->output);
    ks_journal_free(r->journal);
    ks_dryrun_free(r->dry);
    for (size_t i = 0; i < r->n_removed; i++) {
        free(r->removed[i].kind);
        free(r->removed[i].name);
        free(r->removed[i].what);
    }
    free(r->removed);
    *r = (ks_swap_result){0};
}

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

void ks_vprogressf(ks_progress_fn fn, void *userdata, const char *step, const char *fmt, va_list ap)
{
    _cleanup_free_ char *msg = NULL;

    if (!fn)
        return;
    (void)ks_vasprintf_r(&msg, fmt, ap);
    fn(userdata, step, msg ? msg : step);
}

/* The running release; on failure the result says which file could not be read. */
static int running_kernel(const ks_root *root, ks_swap_result *ret, char **running)
{
    int r = ks_running_kernel(root, running);

    if (r < 0) {
        ret->status = KS_SWAP_FAILED;
        ret->error = ks_asprintf("cannot read the running kernel from "
                                 "'/proc/sys/kernel/osrelease': %s",
                                 strerror(-r));
    }
    return r;
}

static void ks_vprogressf_live(run *x, const char *step, const char *fmt, ...) _printf_(3, 4);
static void ks_vprogressf_live(run *x, const char *step, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(x->c->live, x->c->userdata, step, fmt, ap);
    va_end(ap);
}

static void progress(run *x, const char *step, const char *fmt, ...) _printf_(3, 4);
static void progress(run *x, const char *step, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(x->c->progress, x->c->userdata, step, fmt, ap);
    va_end(ap);
}

/* Records why a step failed: in the result for people, in the journal for later runs. */
static int fail_step(run *x, const char *step, int err, const char *fmt, ...) _printf_(4, 5);
static int fail_step(run *x, const char *step, int err, const char *fmt, ...)
{
    _cleanup_free_ char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    (void)ks_vasprintf_r(&msg, fmt, ap);
    va_end(ap);
    free(x->r->error);
    x->r->error = msg ? strdup(msg) : NULL;
    x->r->status = KS_SWAP_FAILED;
    if (x->j) {
        if (step)
            (void)ks_journal_step_end(x->j, step, KS_STEP_FAILED, msg);
        /* The reboot after an apply or a rollback that is done: what they left stays as it
         * is (armed, rolled back), only the reboot's step says why it did not happen. */
        if (!x->state_stays) {
            (void)ks_journal_set(x->j, KS_JF_REASON, msg);
            (void)ks_journal_set_state(x->j, KS_STATE_FAILED);
        }
        (void)ks_journal_save(x->j);
    }
    return err < 0 ? err : -EIO;
}

static unsigned timeout_ms(run *x, const char *key, unsigned def_s)
{
    int v = (int)def_s;
    if (x->c->config)
        (void)ks_config_get_int(x->c->config, "apply", key, (int)def_s, &v);
    return v > 0 ? (unsigned)v * 1000u : def_s * 1000u;
}

/*
 * Under a root that is not this machine, the system's own apt-get or update-grub would act on
 * this machine, not on the root: only programs outside the system directories (wrappers, the
 * tests' fakes) may run then.
 */
static int check_program(run *x, const char *name, char **ret_path)
{
    static const char *const system_dirs[] = {"/usr/", "/bin/", "/sbin/"};
    _cleanup_free_ char *path = NULL;
    int r;

    r = ks_find_program(name, &path);
    if (r < 0)
        return r;
    if (x->root_abs)
        for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
            if (ks_startswith(path, system_dirs[i]))
                return -EPERM;
    *ret_path = TAKE_PTR(path);
    return 0;
}

static void trace(run *x, const char *what, const char *fmt, ...) _printf_(3, 4);
static void trace(run *x, const char *what, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(x->c->trace, x->c->userdata, what, fmt, ap);
    va_end(ap);
}

static void trace_argv(run *x, char *const *argv)
{
    _cleanup_free_ char *line = NULL;

    if (!x->c->trace)
        return;
    for (char *const *a = argv; *a; a++) {
        char *n = ks_asprintf("%s%s%s", strempty(line), line ? " " : "", *a);
        free(line);
        line = n;
        if (!line)
            return;
    }
    trace(x, "run", "%s", line);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* apt's Status-Fd lines while it runs: a progress line per phase, the live percent between. */
typedef struct apt_watch {
    run *x;
    const char *step;
    ks_apt_status_stream stream;
    ks_apt_phase phase;
    double start, phase_start;
    double took[_KS_APT_PHASE_MAX];
    bool seen[_KS_APT_PHASE_MAX];
} apt_watch;

#define APT_STATUS_FD 3

static void apt_phase_end(apt_watch *w, double now)
{
    if (w->phase >= 0)
        w->took[w->phase] += now - w->phase_start;
}

static void apt_status_line(void *userdata, const ks_apt_status *s)
{
    apt_watch *w = userdata;
    double now = mono_s();

    if (s->kind == KS_APT_STATUS_PMERROR) {
        progress(w->x, w->step, "apt: dpkg failed on %s: %s", s->subject, s->message);
        return;
    }
    if (s->phase == KS_APT_PHASE_NONE)
        return;
    if (s->phase != w->phase) {
        apt_phase_end(w, now);
        w->phase = s->phase;
        w->phase_start = now;
        w->seen[s->phase] = true;
        progress(w->x, w->step, "apt %s: %s", ks_apt_phase_to_string(s->phase), s->message);
    } else
        ks_vprogressf_live(w->x, w->step, "apt %s %.0f%%: %s", ks_apt_phase_to_string(s->phase),
                           s->percent, s->message);
}

static void apt_status_bytes(void *userdata, const char *data, size_t n)
{
    apt_watch *w = userdata;
    (void)ks_apt_status_feed(&w->stream, data, n, apt_status_line, w);
}

/* One line when apt is done: where the time went, phase by phase. */
static void apt_summary(apt_watch *w)
{
    _cleanup_free_ char *text = NULL;

    apt_phase_end(w, mono_s());
    for (int i = 0; i < _KS_APT_PHASE_MAX; i++) {
        char *n;
        if (!w->seen[i])
            continue;
        n = ks_asprintf("%s%s%s %.1f s", strempty(text), text ? ", " : "",
                        ks_apt_phase_to_string(i), w->took[i]);
        free(text);
        text = n;
        if (!text)
            return;
    }
    if (text)
        progress(w->x, w->step, "apt took %.1f s: %s", mono_s() - w->start, text);
}

/* Runs a program for a step; a failure fills the result with its exit and last output line. */
static int run_program(run *x, const char *step, char **argv, unsigned tmo_ms, bool apt)
{
    _cleanup_free_ char *path = NULL, *root_env = NULL, *last = NULL;
    char *env[8];
    size_t n = 0;
    ks_spawn_result res = {0};
    int r;

    r = check_program(x, argv[0], &path);
    if (r == -EPERM)
        return fail_step(x, step, r,
                         "refusing to run this machine's '%s' for the root '%s': put a program "
                         "that works on that root first on PATH",
                         argv[0], x->root_abs);
    if (r < 0)
        return fail_step(x, step, r, "cannot find '%s' on PATH", argv[0]);
    if (x->root_abs) {
        root_env = ks_asprintf("KSWAP_ROOT=%s", x->root_abs);
        env[n++] = root_env;
    }
    if (apt) {
        env[n++] = (char *)"DEBIAN_FRONTEND=noninteractive";
        env[n++] = (char *)"APT_LISTCHANGES_FRONTEND=none";
        env[n++] = (char *)APT_ENV_LC_ALL;
        env[n++] = (char *)APT_ENV_LANGUAGE;
    }
    env[n] = NULL;
    argv[0] = path;
    if (apt) {
        /* apt reports its phases on a status fd (APT::Status-Fd): kswap reads them and shows a
         * line per phase with the time, live on a terminal; apt's own output is kept for
         * errors. */
        size_t m = ks_strv_length(argv);
        _cleanup_free_ char **full = calloc(m + 3, sizeof(char *));
        apt_watch w = {.x = x, .step = step, .phase = KS_APT_PHASE_NONE, .start = mono_s()};

        if (!full)
            return -ENOMEM;
        full[0] = argv[0];
        full[1] = (char *)"-o";
        full[2] = (char *)"APT::Status-Fd=3"; /* APT_STATUS_FD */
        for (size_t i = 1; i < m; i++)
            full[i + 2] = argv[i];
        trace_argv(x, full);
        r = ks_spawn(full,
                     KS_SPAWN_OPTS(.timeout_ms = tmo_ms, .env = env, .status_fd = APT_STATUS_FD,
                                   .on_status = apt_status_bytes, .status_userdata = &w),
                     &res);
        if (r >= 0)
            apt_summary(&w);
    } else {
        trace_argv(x, argv);
        r = ks_spawn(argv, KS_SPAWN_OPTS(.timeout_ms = tmo_ms, .env = env), &res);
    }
    if (r < 0)
        return fail_step(x, step, r, "cannot run '%s': %s", path, strerror(-r));
    if (ks_spawn_succeeded(&res)) {
        ks_spawn_result_done(&res);
        return 0;
    }
    /* apt's "Could not get lock ... held by process N (NAME)" says more than its last line. */
    last = apt ? ks_apt_lock_error_line(res.output) : NULL;
    if (!last)
        last = ks_spawn_last_line(&res);
    free(x->r->output);
    x->r->output = TAKE_PTR(res.output);
    r = fail_step(x, step, -EIO, "'%s' %s: %s", path,
                  res.timed_out     ? "did not finish in time and was stopped"
                  : res.term_signal ? "was killed by a signal"
                                    : "failed",
                  last && *last ? last : "(no output)");
    ks_spawn_result_done(&res);
    return r;
}

/*
 * Before apt-get installs or purges: nobody else may hold dpkg's lock (unattended-upgrades,
 * another apt); kswap waits for it up to [apply] apt_timeout (lib/engine/dpkgwait.h).
 */
static int wait_for_dpkg(run *x, const char *step)
{
    _cleanup_(ks_dpkg_lock_holder_done) ks_dpkg_lock_holder h = {0};
    unsigned tmo = timeout_ms(x, "apt_timeout", 1800);
    int r = ks_dpkg_lock_wait(x->root, tmo, x->c->progress, x->c->userdata, &h);

    if (r == -ETIMEDOUT) {
        _cleanup_free_ char *who = ks_dpkg_lock_holder_describe(&h),
                            *todo = ks_dpkg_lock_remedy(&h);
        return fail_step(x, step, -EBUSY,
                         "'/%s' is still held by %s after %u s ([apply] apt_timeout); %s, then run "
                         "kswap again",
                         h.lock, strempty(who), tmo / 1000, strempty(todo));
    }
    if (r < 0)
        return fail_step(x, step, r, "cannot check dpkg's lock: %s", strerror(-r));
    return 0;
}

static int begin(run *x, const char *step, const char *what)
{
    progress(x, step, "%s", what);
    return ks_journal_step_begin(x->j, step);
}

static int done(run *x, const char *step, const char *detail)
{
    return ks_journal_step_end(x->j, step, KS_STEP_DONE, detail);
}

static int journal_error(run *x, int r)
{
    free(x->r->error);
    x->r->error =
        ks_asprintf("cannot write the state journal '/%s': %s", KS_JOURNAL_PATH, strerror(-r));
    x->r->status = KS_SWAP_FAILED;
    return r;
}

static int lock_or_busy(run *x, ks_lock **ret)
{
    pid_t holder = 0;
    int r;

    if (x->c->lock_handover && *x->c->lock_handover) {
        *ret = TAKE_PTR(*x->c->lock_handover);
        x->locked = true;
        return 0;
    }
    r = ks_lock_acquire(x->root,
                        x->c->lock_timeout_ms
                            ? x->c->lock_timeout_ms
                            : timeout_ms(x, "lock_timeout", KS_LOCK_TIMEOUT_MS_DEFAULT / 1000),
                        ret, &holder);
    if (r == -EBUSY) {
        x->r->status = KS_SWAP_BUSY;
        x->r->lock_holder = holder;
        x->r->error = holder > 0 ? ks_asprintf("another kswap (pid %d) is changing this system; "
                                               "wait for it or check 'kswap status'",
                                               (int)holder)
                                 : strdup("another kswap is changing this system; wait for it");
        return r;
    }
    if (r < 0) {
        x->r->status = KS_SWAP_FAILED;
        x->r->error = ks_asprintf("cannot take the lock '/var/lib/kswap/lock': %s", strerror(-r));
    }
    x->locked = r >= 0;
    return r;
}

static int load_journal(run *x)
{
    _cleanup_free_ char *err = NULL;
    int r;

    trace(x, "read", "/%s (saved again at every step)", KS_JOURNAL_PATH);
    r = ks_journal_load(x->root, &x->j, &err);
    /* node_exporter's kswap.prom follows every save from here on (lib/engine/metrics-file.h). */
    if (r >= 0)
        r = ks_metrics_attach(x->j, x->root, x->c->config);
    if (r < 0) {
        x->r->status = KS_SWAP_FAILED;
        x->r->error = ks_asprintf("cannot use the state journal '/%s': %s; move it away only "
                                  "after reading it",
                                  KS_JOURNAL_PATH, err ? err : strerror(-r));
    }
    return r;
}

static int init_run(run *x, const ks_root *root, const ks_swap_common *c, ks_swap_result *r)
{
    *x = (run){.root = root, .c = c, .r = r};
    *r = (ks_swap_result){0};
    if (!ks_root_is_host(root)) {
        x->root_abs = realpath(ks_root_path(root), NULL);
        if (!x->root_abs) {
            r->status = KS_SWAP_FAILED;
            r->error = ks_asprintf("cannot resolve the root '%s': %m", ks_root_path(root));
            return -errno;
        }
    }
    return 0;
}

/* The start every command that changes something shares: the lock, then the journal. */
static int start_locked(run *x, const ks_root *root, const ks_swap_common *c, ks_swap_result *res,
                        ks_lock **lock)
{
    int r = init_run(x, root, c, res);
    if (r >= 0)
        r = lock_or_busy(x, lock);
    if (r >= 0)
        r = load_journal(x);
    return r;
}

/*
 * Hands the journal to the result and applies the rule of swap.h: a negative errno exactly when
 * the call could not evaluate or act (KS_SWAP_FAILED), 0 for every verdict in the result. An
 * error without a status of its own (out of memory on the way) is a failure, never "done".
 */
static int end_run(run *x, int r)
{
    /* Metrics that could not be written are a warning, never a reason to fail. */
    if (x->j && ks_metrics_add_finding(x->j, &x->r->findings) < 0 && r >= 0)
        r = -ENOMEM;
    /* A swap that ended goes into the history; a damaged history is a warning. */
    if (x->j && x->locked && ks_history_note_finding(x->root, x->j, &x->r->findings) < 0 && r >= 0)
        r = -ENOMEM;
    x->r->journal = TAKE_PTR(x->j);
    free(x->root_abs);
    x->root_abs = NULL;
    x->items_before = ks_strv_free(x->items_before);
    free(x->dropin_purged);
    x->dropin_purged = NULL;
    if (r < 0 && (x->r->status == KS_SWAP_DONE || x->r->status == KS_SWAP_ALREADY))
        x->r->status = KS_SWAP_FAILED;
    if (x->r->status == KS_SWAP_FAILED)
        return r < 0 ? r : -EIO;
    return 0;
}

/* Releases installed under the root, as a strv. */
static int releases_now(const ks_root *root, char ***ret)
{
    ks_kernels ks = {0};
    int r = ks_kernels_list(root, &ks);
    if (r < 0 && r != -ENOENT)
        return r;
    *ret = calloc(1, sizeof(char *));
    if (!*ret) {
        ks_kernels_done(&ks);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ks.n && r >= 0; i++)
        r = ks_strv_extend(ret, ks.v[i].release);
    ks_kernels_done(&ks);
    return r < 0 ? r : 0;
}

/* ---- apply ---- */

static int step_plan(run *x, const ks_apply_opts *o, ks_plan *plan)
{
    ks_plan_opts po = {
        .kernel = o->kernel, .deb = o->deb, .branch = o->branch, .config = o->common.config};
    int r;

    progress(x, "plan", "checking the host");
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
static int step_checklist(run *x, const ks_apply_opts *o)
{
    ks_check_now_result cr = {0};
    size_t failed = 0;
    int r;

    progress(x, "check", "running accept's checklist on the running kernel");
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
        progress(x, "check", "%zu checks pass on %s", cr.checks.n, strempty(cr.kernel));
    for (char **i = cr.items; r >= 0 && i && *i; i++)
        r = ks_strv_extend(&x->items_before, *i);
    ks_check_now_result_done(&cr);
    return r;
}

/*
 * update-grub, then the new grub.cfg with grubenv and what GRUB can write at boot; grubenv's
 * bytes go into the journal before anything changes them.
 */
static int update_grub_and_load(run *x, const char *step, ks_boot *b)
{
    _cleanup_free_ char *err = NULL;
    char *argv[] = {(char *)"update-grub", NULL};
    int r;

    r = run_program(x, step, argv, timeout_ms(x, "update_grub_timeout", 300), false);
    if (r < 0)
        return r;
    trace(x, "read", "/%s, /%s", KS_GRUB_CFG_PATH, KS_GRUBENV_PATH);
    r = ks_boot_load(x->root, b, &err);
    if (r < 0)
        return fail_step(x, step, r, "%s", strempty(err));
    r = ks_journal_note_file(x->j, KS_GRUBENV_PATH);
    if (r < 0) {
        ks_boot_done(b);
        /* Mostly the grubenv itself (a FIFO, too large): say so, not "the journal". */
        return fail_step(x, step, r, "cannot record '/%s' before changing it: %s", KS_GRUBENV_PATH,
                         ks_strerror(r));
    }
    return 0;
}

static int step_prepare(run *x, const ks_plan *plan, const char *old)
{
    _cleanup_free_ char *text = NULL, *detail = NULL;
    ks_boot b = {0};
    int r;

    r = begin(x, "prepare", "making the running kernel GRUB's default before installing anything");
    if (r < 0)
        return journal_error(x, r);
    {
        /* [apply] add_panic = no leaves the command line alone (a watchdog may do the job). */
        bool add_panic = true;
        if (x->c->config)
            (void)ks_config_get_bool(x->c->config, "apply", "add_panic", true, &add_panic);
        text = ks_grub_dropin_text(plan->panic_value == NULL && add_panic);
    }
    if (!text)
        return -ENOMEM;
    r = ks_journal_note_file(x->j, KS_GRUB_DROPIN_PATH);
    if (r < 0)
        return journal_error(x, r);
    trace(x, "write", "/%s", KS_GRUB_DROPIN_PATH);
    r = ks_write_atomic(x->root, KS_GRUB_DROPIN_PATH, text, strlen(text), 0644);
    if (r < 0)
        return fail_step(x, "prepare", r, "cannot write '/%s': %s", KS_GRUB_DROPIN_PATH,
                         strerror(-r));
    r = update_grub_and_load(x, "prepare", &b);
    if (r < 0)
        return r;
    trace(x, "write", "/%s: saved_entry = %s's entry", KS_GRUBENV_PATH, old);
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
        return fail_step(x, "prepare", r, "cannot make %s the default: %s", old, strempty(detail));
    r = ks_journal_set_state(x->j, KS_STATE_PREPARED);
    if (r >= 0)
        r = done(x, "prepare", "every boot starts the running kernel");
    return r < 0 ? journal_error(x, r) : 0;
}

static const char *key_path(const ks_apply_opts *o)
{
    const char *p = o->key_path;
    if (!p && o->common.config)
        p = ks_config_get_string(o->common.config, "repository", "key", NULL);
    return p ? p : KSWAP_DATADIR "/keys/xanmod-archive-keyring.asc";
}

/*
 * Tries the repository before anything changes (lib/repo/probe.h): apt-get update into a
 * private folder with the source and keyring kswap is about to write, and the index must name
 * the package. A refusal is a failed step with apt's words; nothing was written.
 */
static int probe_repository(run *x, const ks_apt_takeover *source, const char *package)
{
    _cleanup_free_ char *path = NULL, *root_env = NULL;
    char *env[6] = {(char *)"DEBIAN_FRONTEND=noninteractive",
                    (char *)APT_ENV_LC_ALL,
                    (char *)APT_ENV_LANGUAGE,
                    NULL,
                    NULL,
                    NULL};
    ks_repo_probe_result pr = {0};
    apt_watch w = {.x = x, .step = "repository", .phase = KS_APT_PHASE_NONE, .start = mono_s()};
    bool refused;
    int r;

    if (!package)
        return fail_step(x, "repository", -ENOENT,
                         "no XanMod package fits this CPU (see 'kswap plan'); nothing to install");
    r = check_program(x, "apt-get", &path);
    if (r == -EPERM)
        return fail_step(x, "repository", r,
                         "refusing to run this machine's 'apt-get' for the root '%s': put a "
                         "program that works on that root first on PATH",
                         x->root_abs);
    if (r < 0)
        return fail_step(x, "repository", r, "cannot find 'apt-get' on PATH");
    if (x->root_abs) {
        root_env = ks_asprintf("KSWAP_ROOT=%s", x->root_abs);
        if (!root_env)
            return -ENOMEM;
        env[3] = root_env;
    }
    progress(x, "repository", "checking %s %s with apt-get update into a private folder",
             source->uri, source->suite);
    trace(x, "run", "%s update (its sources, lists and cache in a private folder under $TMPDIR)",
          path);
    r = ks_repo_probe(&(ks_repo_probe_opts){.apt_get = path,
                                            .env = env,
                                            .timeout_ms = timeout_ms(x, "apt_timeout", 1800),
                                            .on_status = apt_status_bytes,
                                            .status_userdata = &w,
                                            .source = source,
                                            .package = package},
                      &pr);
    if (r >= 0)
        apt_summary(&w);
    if (r >= 0 && pr.verdict == KS_REPO_OK) {
        progress(x, "repository", "%s %s carries %s %s (%zu packages)", source->uri, source->suite,
                 package, strempty(pr.version), pr.n_packages);
        ks_repo_probe_result_done(&pr);
        return 0;
    }
    free(x->r->output);
    x->r->output = TAKE_PTR(pr.apt_output);
    refused = r >= 0;
    r = fail_step(x, "repository",
                  r < 0                              ? r
                  : pr.verdict == KS_REPO_NO_PACKAGE ? -ENOENT
                                                     : -EBADMSG,
                  "%s%s; nothing was changed",
                  r < 0                               ? ""
                  : pr.verdict == KS_REPO_UNTRUSTED   ? "apt refuses the repository's signature: "
                  : pr.verdict == KS_REPO_UNREACHABLE ? "apt cannot fetch the repository: "
                  : pr.verdict == KS_REPO_NO_INDEX
                      ? "the repository has no index for this machine: "
                      : "the repository lacks the package: ",
                  strempty(pr.reason));
    /* apt's refusal of the repository is a verdict on it, not a failure of kswap */
    if (refused)
        x->r->status = KS_SWAP_REFUSED;
    ks_repo_probe_result_done(&pr);
    return r;
}

/*
 * The key, the repository check and the plan of the apt source: everything of the repository
 * step before its first write (apply writes *changes, apply --dry-run shows them).
 */
static int plan_repository(run *x, const ks_apply_opts *o, const ks_plan *plan,
                           ks_transaction *changes)
{
    _cleanup_free_ void *keyring = NULL;
    const char *fpr = o->pinned_fpr;
    ks_key_info info = {0};
    size_t len = 0;
    int r;

    if (!plan->xanmod_suite)
        return fail_step(x, "repository", -ENOENT,
                         "XanMod's archive has no suite for this OS; give --deb FILE, or name a "
                         "mirror's suite in kswap.conf [repository] suite");
    if (!fpr && o->common.config)
        fpr = ks_config_get_string(o->common.config, "repository", "fingerprint", NULL);
    r = ks_keyring_export_binary(key_path(o), fpr, time(NULL), &info, &keyring, &len);
    if (r < 0) {
        r = fail_step(x, "repository", r, "the repository key '%s' is refused: %s", key_path(o),
                      info.reason ? info.reason : strerror(-r));
        ks_key_info_done(&info);
        return r;
    }
    if (info.expires_soon)
        (void)ks_findings_add(&x->r->findings, "repo.key-expires", KS_SEV_WARN,
                              "get XanMod's renewed key and pass it with --key FILE",
                              "the repository key %s expires within 30 days",
                              strempty(info.fingerprint));
    ks_key_info_done(&info);

    {
        /* A mirror's own entries are taken over as XanMod's are: apt sees one Signed-By. */
        char *const archives[] = {(char *)KS_APT_XANMOD_URI, plan->repo_uri, NULL};
        const ks_apt_takeover source = {.archive_uris = archives,
                                        .uri = plan->repo_uri,
                                        .suite = plan->xanmod_suite,
                                        .components = plan->repo_components,
                                        .keyring = keyring,
                                        .keyring_len = len};
        r = probe_repository(x, &source, o->package ? o->package : plan->target_package);
        if (r < 0)
            return r;
        r = ks_aptsource_plan(x->root, &source, changes);
    }
    if (r < 0)
        return fail_step(x, "repository", r, "cannot plan the apt source: %s", strerror(-r));
    return 0;
}

static int step_repository(run *x, const ks_apply_opts *o, const ks_plan *plan)
{
    _cleanup_transaction_ ks_transaction changes = {0};
    int r;

    r = begin(x, "repository", "checking the XanMod key and the apt source");
    if (r < 0)
        return journal_error(x, r);
    r = plan_repository(x, o, plan, &changes);
    if (r < 0)
        return r;
    /* The journal holds every file's previous bytes before any of them changes. */
    r = ks_journal_note_transaction(x->j, &changes);
    if (r < 0)
        return journal_error(x, r);
    for (size_t i = 0; i < changes.n; i++)
        trace(x, ks_file_change_kind_to_string(changes.v[i].kind), "/%s", changes.v[i].path);
    r = ks_transaction_apply(x->root, &changes);
    if (r < 0)
        return fail_step(x, "repository", r, "cannot write the apt source: %s", strerror(-r));
    r = done(x, "repository", "etc/apt/sources.list.d/xanmod.sources");
    return r < 0 ? journal_error(x, r) : 0;
}

/*
 * apt-get install failed (/boot full, a postinst that failed): the error keeps apt's and
 * dpkg's words, says that nothing is armed, and names what cleans up, from what dpkg's status
 * says it left behind (lib/host/dpkg.h).
 */
static int install_failed(run *x, int err)
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

static int step_install(run *x, const ks_apply_opts *o, const ks_plan *plan, char **ret_release)
{
    _cleanup_strv_free_ char **before = NULL, **after = NULL;
    _cleanup_free_ char *deb_abs = NULL, *release = NULL;
    const char *pkg;
    int r;

    r = begin(x, "install", "installing the new kernel");
    if (r < 0)
        return journal_error(x, r);

    if (o->kernel && ks_kernels_find(&plan->kernels, o->kernel)) {
        /* Installed already: nothing for apt, but the journal must name the trial kernel
         * (accept judges against it), as after an install. */
        r = ks_journal_set(x->j, KS_JF_NEW_KERNEL, o->kernel);
        if (r >= 0)
            r = ks_journal_set_state(x->j, KS_STATE_INSTALLED);
        if (r >= 0)
            r = ks_journal_step_end(x->j, "install", KS_STEP_SKIPPED, "installed already");
        if (r < 0)
            return journal_error(x, r);
        *ret_release = strdup(o->kernel);
        return *ret_release ? 0 : -ENOMEM;
    }
    if (o->kernel)
        return fail_step(x, "install", -ENOENT,
                         "kernel %s is not installed (no /boot/vmlinuz-%s); give --deb FILE or "
                         "--package NAME",
                         o->kernel, o->kernel);

    r = releases_now(x->root, &before);
    if (r < 0)
        return fail_step(x, "install", r, "cannot list the kernels in /boot: %s", strerror(-r));

    if (o->deb) {
        deb_abs = realpath(o->deb, NULL);
        if (!deb_abs)
            return fail_step(x, "install", -errno, "cannot open '%s': %m", o->deb);
        pkg = deb_abs;
    } else {
        char *update[] = {APT_UPDATE_ARGV, NULL};
        pkg = o->package ? o->package : plan->target_package;
        progress(x, "install", "apt-get update (%s %s only)", plan->repo_uri, plan->xanmod_suite);
        r = run_program(x, "install", update, timeout_ms(x, "apt_timeout", 1800), true);
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
            return journal_error(x, r);
    }
    {
        char *install[] = {APT_INSTALL_ARGV, (char *)pkg, NULL};
        r = wait_for_dpkg(x, "install");
        if (r < 0)
            return r;
        progress(x, "install", "apt-get install %s", pkg);
        r = run_program(x, "install", install, timeout_ms(x, "apt_timeout", 1800), true);
        if (r < 0)
            return install_failed(x, r);
    }

    /* The release comes from what the package put on disk, never from apt's words. */
    r = releases_now(x->root, &after);
    if (r < 0)
        return fail_step(x, "install", r, "cannot list the kernels in /boot: %s", strerror(-r));
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
        return fail_step(x, "install", -ENOENT,
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
        r = done(x, "install", release);
    if (r < 0)
        return journal_error(x, r);
    *ret_release = TAKE_PTR(release);
    return 0;
}

static int step_verify(run *x, const char *release)
{
    _cleanup_free_ char *err = NULL;
    ks_verify_result v = {0};
    int r;

    r = begin(x, "verify", "proving the new kernel's module set with libkmod");
    if (r < 0)
        return journal_error(x, r);
    r = ks_verify_run(x->root, x->c->config, &(ks_verify_opts){.release = release, .error = &err},
                      &v);
    if (r < 0)
        return fail_step(x, "verify", r, "cannot verify %s: %s", release, err ? err : strerror(-r));
    for (size_t i = 0; i < v.findings.n && r >= 0; i++)
        if (v.findings.v[i].severity != KS_SEV_OK)
            r = ks_findings_add(&x->r->findings, v.findings.v[i].id, v.findings.v[i].severity,
                                v.findings.v[i].remedy, "%s", v.findings.v[i].message);
    if (r >= 0 && ks_findings_worst(&v.findings) == KS_SEV_BLOCK) {
        ks_verify_result_done(&v);
        r = fail_step(x, "verify", -EPERM,
                      "%s does not have what this node needs (see the findings); nothing is "
                      "armed, 'kswap rollback --purge' removes it",
                      release);
        x->r->status = KS_SWAP_REFUSED;
        return r;
    }
    ks_verify_result_done(&v);
    if (r >= 0)
        r = ks_journal_set_state(x->j, KS_STATE_VERIFIED);
    if (r >= 0)
        r = done(x, "verify", "module set, BBR and initramfs checked");
    return r < 0 ? journal_error(x, r) : 0;
}

/* [accept] deadline, seconds from the kernel's start; -ERANGE outside its limits. */
static int trial_deadline(run *x, int *ret)
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
static int write_trial_entries(run *x, ks_boot *b, const char *old, const char *new,
                               const char *boot_id)
{
    _cleanup_free_ char *args = NULL, *text = NULL, *detail = NULL, *id = NULL;
    ks_trial_watchdog wd;
    int deadline = 0, r;

    r = trial_deadline(x, &deadline);
    if (r < 0)
        return fail_step(x, "arm", -EINVAL,
                         "[accept] deadline must be a number of seconds from %d to %d",
                         KS_TRIAL_DEADLINE_MIN_S, KS_TRIAL_DEADLINE_MAX_S);
    /* The arming boot's id, without dashes: one trial per arming boot. */
    id = calloc(1, 13);
    if (!id)
        return -ENOMEM;
    for (size_t i = 0, n = 0; boot_id && boot_id[i] && n < 12; i++)
        if (isxdigit((unsigned char)boot_id[i]))
            id[n++] = boot_id[i];
    if (!id[0])
        strcpy(id, "0");
    r = ks_trial_watchdog_pick(x->root, new, &wd);
    if (r < 0)
        return r;
    args = ks_trial_args(id, deadline, &wd);
    if (!args)
        return -ENOMEM;
    if (wd.kind == KS_TRIAL_WATCHDOG_DEVICE)
        progress(x, "arm", "the trial boot arms the watchdog %s (%d s); the verdict disarms it",
                 wd.device, KS_TRIAL_WATCHDOG_SEC);
    else if (wd.kind == KS_TRIAL_WATCHDOG_SOFTDOG)
        progress(x, "arm",
                 "no watchdog device: the trial boot loads softdog and arms it (%d s); the "
                 "verdict disarms it",
                 KS_TRIAL_WATCHDOG_SEC);
    else
        progress(x, "arm", "no watchdog device and %s has no softdog: the trial boot arms none",
                 new);
    r = ks_trial_grubd_text(b->cfg, new, old, args, &text, &detail);
    if (r < 0)
        return fail_step(x, "arm", r, "cannot write the trial's GRUB entries: %s",
                         detail ? detail : strerror(-r));
    r = ks_journal_note_file(x->j, KS_TRIAL_GRUBD_PATH);
    if (r < 0)
        return journal_error(x, r);
    trace(x, "write", "/%s", KS_TRIAL_GRUBD_PATH);
    r = ks_trial_grubd_write(x->root, text);
    if (r < 0)
        return fail_step(x, "arm", r, "cannot write '/%s': %s", KS_TRIAL_GRUBD_PATH, strerror(-r));
    ks_boot_done(b);
    return update_grub_and_load(x, "arm", b);
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
static int settle_boot_files(run *x, const char *old, const char *new)
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
        return fail_step(x, "arm", r, "cannot check the boot files of %s: %s", new, strerror(-r));
    /* The disk refused a sync (full, failing): kswap could not act, a failure (exit 1) that
     * says why, not a verdict on the kernel. */
    if (r > 0 && ks_findings_get(&x->r->findings, "boot.sync-failed"))
        return fail_step(x, "arm", -EIO, "%s; nothing is armed, every boot starts the old kernel",
                         ks_findings_get(&x->r->findings, "boot.sync-failed")->message);
    if (r > 0) {
        bool way_back = ks_findings_get(&x->r->findings, "boot.old-kernel-damaged") ||
                        ks_findings_get(&x->r->findings, "boot.old-initrd-damaged") ||
                        ks_findings_get(&x->r->findings, "boot.way-back-entry-missing");
        r = fail_step(x, "arm", -EIO,
                      way_back ? "the way back to %s did not read back intact (see the findings): "
                                 "a trial that fails could not come back; nothing is armed, "
                                 "repair it first"
                               : "the boot files of %s did not read back intact (see the "
                                 "findings); nothing is armed, every boot starts the old kernel",
                      way_back ? old : new);
        x->r->status = KS_SWAP_REFUSED;
        return r;
    }
    progress(x, "arm",
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

static int step_arm(run *x, const char *old, const char *new)
{
    _cleanup_free_ char *detail = NULL, *boot_id = NULL;
    ks_grub_entry_path p = {0};
    uint64_t btime = 0;
    ks_boot b = {0};
    int r;

    r = begin(x, "arm", "arming a one-shot trial boot of the new kernel");
    if (r < 0)
        return journal_error(x, r);
    if (ks_read_boot_id(x->root, &boot_id) < 0 || ks_read_btime(x->root, &btime) < 0) {
        free(boot_id);
        boot_id = strdup("unknown");
        btime = 0;
    }
    r = update_grub_and_load(x, "arm", &b);
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
        progress(x, "arm", "cannot create /%s: kswap-accept.service will not run at boot",
                 KS_TRIAL_FLAG_PATH);
    /* Stage marks of an earlier trial must not be taken for this one's. */
    if (ks_trial_stages_clear(x->root) < 0)
        progress(x, "arm", "cannot remove /%s", KS_TRIAL_STAGES_PATH);
    /* update-grub may have renumbered the menu: name the old kernel's entry again first. */
    r = ks_boot_set_default(x->root, &b, old, &detail);
    trace(x, "write", "/%s: saved_entry = %s's entry, next_entry = %s", KS_GRUBENV_PATH, old,
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
        return fail_step(x, "arm", r, "cannot arm the trial of %s: %s", new, strempty(detail));
    {
        /* What runs now, on the old kernel: the checklist of accept after the trial boot. */
        _cleanup_free_ char *summary = NULL;
        if (ks_record_running(x->root, x->c->config, old, x->j, x->items_before, &summary) < 0)
            progress(
                x, "arm",
                "cannot take the snapshot of what runs: accept checks only the configured list");
        else if (summary)
            progress(x, "arm", "%s", summary);
    }
    r = ks_journal_set_armed(x->j, boot_id, btime);
    if (r >= 0)
        r = ks_journal_set_state(x->j, KS_STATE_ARMED);
    if (r >= 0)
        r = done(x, "arm", "boot 1: new kernel (one-shot trial entry), then the old kernel");
    return r < 0 ? journal_error(x, r) : 0;
}

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
static int reboot_now(run *x, const char *step, const ks_reboot_expect *expect, const char *stays)
{
    char *argv[] = {(char *)"systemctl", (char *)"reboot", NULL};
    int r;

    x->state_stays = true;
    r = begin(x, step, "checking what the next boot loads, then rebooting");
    if (r < 0)
        return journal_error(x, r);
    r = ks_reboot_check(x->root, expect, &x->r->findings);
    if (r < 0)
        return fail_step(x, step, r, "cannot look at what the next boot loads: %s", strerror(-r));
    if (r > 0) {
        if (findings_name_way_back(&x->r->findings))
            r = fail_step(x, step, -EPERM,
                          "not rebooting: the way back to %s is damaged (see the findings), and a "
                          "node that reboots now could end at GRUB's prompt or in a kernel that "
                          "cannot start, out of reach; %s; do not reboot before it is repaired",
                          expect->old, stays);
        else
            r = fail_step(x, step, -EPERM,
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
        return journal_error(x, r);
    r = run_program(x, step, argv, timeout_ms(x, "systemctl_timeout", 60), false);
    if (r < 0)
        return r;
    x->r->rebooting = true;
    r = done(x, step, "systemctl reboot");
    return r < 0 ? journal_error(x, r) : 0;
}

/* The live sysctls acceptance will judge ([accept] sysctl = KEY=VALUE ...), for comparison later.
 */
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

/* step: NULL for the check before anything is written (no step has begun). */
static int autoremove_error(run *x, const char *step, int r)
{
    if (r == -EEXIST)
        return fail_step(x, step, r,
                         "'/%s' exists and kswap did not write it: move it away, then run 'kswap "
                         "apply' again",
                         KS_AUTOREMOVE_PATH);
    return fail_step(x, step, r, "cannot %s '/%s': %s", step ? "write" : "read", KS_AUTOREMOVE_PATH,
                     ks_strerror(r));
}

/* From here on the swap relies on both kernels: apt autoremove must leave them (rewritten on a
 * resumed run, replaced by the next swap's pair, removed by rollback --purge). */
static int keep_kernels(run *x, const char *old, const char *new)
{
    char *releases[] = {(char *)old, (char *)new, NULL};
    int r = ks_autoremove_keep(x->root, releases);

    if (r < 0)
        return autoremove_error(x, "install", r);
    if (r > 0)
        progress(x, "install", "%s and %s kept from apt autoremove while the swap needs them (/%s)",
                 old, new, KS_AUTOREMOVE_PATH);
    return 0;
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

int ks_apply(const ks_root *root, const ks_apply_opts *o, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL, *new = NULL;
    const char *old;
    ks_plan plan = {0};
    run x;
    int r;

    assert(root);
    assert(o);
    assert(ret);
    r = init_run(&x, root, &o->common, ret);
    if (r < 0)
        return r;
    r = step_plan(&x, o, &plan);
    if (r < 0) {
        /* Nothing changed: the journal is shown as it is, read without the lock. */
        _cleanup_free_ char *ignored = NULL;
        (void)ks_journal_load(root, &x.j, &ignored);
        goto out;
    }
    /* apt-get will run: wait for dpkg's lock before anything changes on disk. */
    if (!(o->kernel && ks_kernels_find(&plan.kernels, o->kernel))) {
        r = wait_for_dpkg(&x, NULL);
        if (r < 0)
            goto out;
    }
    r = lock_or_busy(&x, &lock);
    if (r < 0)
        goto out;
    r = load_journal(&x);
    if (r < 0)
        goto out;
    running = strdup(plan.running_kernel);
    /* An input the install step needs, checked before the first write. */
    r = ks_autoremove_check(root);
    if (r < 0) {
        r = autoremove_error(&x, NULL, r);
        goto out;
    }

    if (ks_journal_state(x.j) == KS_STATE_ARMED) {
        _cleanup_free_ char *boot_id = NULL;
        const char *armed = ks_journal_armed_boot_id(x.j);

        ret->status = KS_SWAP_ALREADY;
        /* apply --reboot again, in the boot that armed it: the same last look, then reboot. */
        if (o->reboot && armed && ks_read_boot_id(root, &boot_id) >= 0 && streq(armed, boot_id)) {
            progress(&x, "apply", "a trial of %s is armed already in this boot",
                     strempty(ks_journal_get(x.j, KS_JF_NEW_KERNEL)));
            r = reboot_now(
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
    if (nothing_to_swap(x.j, o, &plan, ret))
        goto out;
    if (resumable(ks_journal_state(x.j))) {
        /* An interrupted apply: the same old kernel must still be running. */
        old = ks_journal_get(x.j, KS_JF_OLD_KERNEL);
        if (!streq_ptr(old, running)) {
            r = fail_step(&x, NULL, -ESTALE,
                          "an interrupted apply started on %s, but %s is running; run 'kswap "
                          "rollback' first",
                          strempty(old), running);
            goto out;
        }
        progress(&x, "apply", "resuming an interrupted apply (state %s)",
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
            journal_error(&x, r);
            goto out;
        }
    }
    old = ks_journal_get(x.j, KS_JF_OLD_KERNEL);

    /* The repository first: its check (apt-get update into a private folder) refuses a
     * repository apt would refuse before GRUB or anything else is touched. */
    r = 0;
    if (!o->deb && !(o->kernel && ks_kernels_find(&plan.kernels, o->kernel)))
        r = step_repository(&x, o, &plan);
    if (r >= 0)
        r = step_prepare(&x, &plan, old);
    if (r >= 0) {
        const ks_journal_step *s = ks_journal_step_find(x.j, "install");
        const char *known = ks_journal_get(x.j, KS_JF_NEW_KERNEL);
        /* Resuming after the install finished: the kernel is on disk, apt need not run again. */
        if (s && s->status == KS_STEP_DONE && known && ks_kernels_find(&plan.kernels, known))
            new = strdup(known);
        else
            r = step_install(&x, o, &plan, &new);
    }
    if (r >= 0 && streq_ptr(new, old))
        r = fail_step(&x, "install", -EINVAL,
                      "the new kernel %s is the running kernel: %s brought nothing newer; "
                      "nothing is armed",
                      old, o->deb ? "the package" : "the repository");
    if (r >= 0)
        r = keep_kernels(&x, old, new);
    if (r >= 0)
        r = step_verify(&x, new);
    if (r >= 0)
        r = step_arm(&x, old, new);
    if (r >= 0)
        ret->status = KS_SWAP_DONE;
    if (r >= 0 && o->reboot)
        r = reboot_now(&x, "reboot",
                       &(ks_reboot_expect){
                           .trial = new, .old = old, .then = "then 'kswap apply --reboot' again"},
                       "the trial stays armed ('kswap rollback' cancels it), nothing else changed");
out:
    ks_plan_done(&plan);
    return end_run(&x, r);
}

/* ---- apply --dry-run ---- */

/* The trial's arguments as arming would write them now (the boot id of this boot, the
 * watchdog for new, which may not be installed yet: then only a device counts). */
static char *dry_trial_args(run *x, const char *new)
{
    _cleanup_free_ char *boot_id = NULL;
    ks_trial_watchdog wd = {0};
    char id[13] = "";
    int deadline = 0;

    if (trial_deadline(x, &deadline) < 0)
        return NULL;
    if (ks_trial_watchdog_pick(x->root, new ? new : "", &wd) < 0)
        return NULL;
    (void)ks_read_boot_id(x->root, &boot_id);
    for (size_t i = 0, n = 0; boot_id && boot_id[i] && n < 12; i++)
        if (isxdigit((unsigned char)boot_id[i]))
            id[n++] = boot_id[i];
    return ks_trial_args(id[0] ? id : "0", deadline, &wd);
}

/* What the steps after the checks would do, into d; the checks passed already. */
static int dry_steps(run *x, const ks_apply_opts *o, const ks_plan *plan, const char *old,
                     ks_dryrun *d)
{
    char *update_grub[] = {(char *)"update-grub", NULL};
    bool repo = !o->deb && !(o->kernel && ks_kernels_find(&plan->kernels, o->kernel));
    _cleanup_free_ char *text = NULL, *deb_abs = NULL, *args = NULL, *err = NULL;
    const char *pkg = NULL;
    ks_boot b = {0};
    int r;

    if (repo) {
        _cleanup_transaction_ ks_transaction changes = {0};
        char *probe[] = {(char *)"apt-get", (char *)"update", (char *)"(private folder)", NULL};

        r = plan_repository(x, o, plan, &changes);
        if (r < 0)
            return r;
        pkg = o->package ? o->package : plan->target_package;
        r = ks_dryrun_add_program(d, "repository", probe, true);
        if (r >= 0)
            r = ks_dryrun_add_transaction(d, &changes);
        if (r >= 0)
            r = ks_dryrun_add_step(d, "repository", KS_APT_SOURCE_PATH);
        if (r < 0)
            return r;
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
            return fail_step(x, "install", -errno, "cannot open '%s': %m", o->deb);
        pkg = deb_abs;
        d->source_kind = strdup("deb");
        d->source = strdup(deb_abs);
    } else {
        d->source_kind = strdup("installed");
        d->source = strdup(o->kernel);
    }
    if (!d->source_kind || !d->source)
        return -ENOMEM;

    {
        bool add_panic = true;
        if (x->c->config)
            (void)ks_config_get_bool(x->c->config, "apply", "add_panic", true, &add_panic);
        text = ks_grub_dropin_text(plan->panic_value == NULL && add_panic);
    }
    if (!text)
        return -ENOMEM;
    r = ks_dryrun_add_file(d, KS_GRUB_DROPIN_PATH, "write",
                           "GRUB_DEFAULT=saved (and panic=10 unless a panic= applies)", text,
                           strlen(text), false);
    if (r >= 0)
        r = ks_dryrun_add_program(d, "prepare", update_grub, false);
    if (r >= 0)
        r = ks_dryrun_add_step(d, "prepare", "every boot starts the running kernel");
    if (r < 0)
        return r;

    if (pkg) {
        char *update[] = {APT_UPDATE_ARGV, NULL};
        char *install[] = {APT_INSTALL_ARGV, (char *)pkg, NULL};

        /* A local package by the name the journal records for it (linux-image-RELEASE). */
        d->package = o->deb && plan->target_release
                         ? ks_asprintf("linux-image-%s", plan->target_release)
                         : strdup(pkg);
        if (!d->package)
            return -ENOMEM;
        r = repo ? ks_dryrun_add_program(d, "install", update, false) : 0;
        if (r >= 0)
            r = ks_dryrun_add_program(d, "install", install, false);
        if (r >= 0)
            r = ks_dryrun_add_step(d, "install", pkg);
    } else
        r = ks_dryrun_add_step(d, "install", "skipped: installed already");
    if (r >= 0)
        r = ks_dryrun_add_step(d, "verify", "module set, BBR and initramfs checked");
    if (r < 0)
        return r;
    if (o->kernel && ks_kernels_find(&plan->kernels, o->kernel))
        d->new_kernel = strdup(o->kernel);
    else if (plan->target_release)
        d->new_kernel = strdup(plan->target_release);
    if (d->new_kernel) {
        char *releases[] = {(char *)old, d->new_kernel, NULL};
        _cleanup_free_ char *guard = ks_autoremove_text(releases);
        if (!guard)
            return -ENOMEM;
        r = ks_dryrun_add_file(d, KS_AUTOREMOVE_PATH, "write",
                               "the old and the new kernel kept from apt autoremove", guard,
                               strlen(guard), false);
        if (r < 0)
            return r;
    }

    /* arm: update-grub twice (the new kernel's entries, then the trial's), grubenv. */
    r = ks_dryrun_add_program(d, "arm", update_grub, false);
    if (r >= 0)
        r = ks_dryrun_add_program(d, "arm", update_grub, false);
    if (r < 0)
        return r;
    args = dry_trial_args(x, d->new_kernel);
    if (!args)
        return fail_step(x, "arm", -EINVAL,
                         "[accept] deadline must be a number of seconds from %d to %d",
                         KS_TRIAL_DEADLINE_MIN_S, KS_TRIAL_DEADLINE_MAX_S);
    r = ks_boot_load(x->root, &b, &err);
    if (r < 0)
        return fail_step(x, "arm", r, "%s", strempty(err));
    /* Only a kernel that is installed (and in grub.cfg) now can be forecast now. */
    r = ks_dryrun_forecast(
        d, x->root, &b, old,
        o->kernel && ks_kernels_find(&plan->kernels, o->kernel) ? o->kernel : NULL, args);
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
        r = ks_dryrun_add_step(d, "arm",
                               "boot 1: new kernel (one-shot trial entry), then the old kernel");
    if (r >= 0 && o->reboot) {
        char *reboot[] = {(char *)"systemctl", (char *)"reboot", NULL};
        r = ks_dryrun_add_program(d, "reboot", reboot, false);
        if (r >= 0)
            r = ks_dryrun_add_step(d, "reboot", "systemctl reboot");
    }
    return r;
}

int ks_apply_dry_run(const ks_root *root, const ks_apply_opts *o, ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *jerr = NULL;
    ks_journal *j = NULL;
    ks_plan plan = {0};
    const char *old;
    pid_t holder = 0;
    run x;
    int r;

    assert(root);
    assert(o);
    assert(ret);
    r = init_run(&x, root, &o->common, ret);
    if (r < 0)
        return r;
    /* x.j stays NULL: fail_step() then records nothing, the journal is only read. */
    ret->dry = calloc(1, sizeof(*ret->dry));
    if (!ret->dry) {
        r = -ENOMEM;
        goto out;
    }
    r = step_plan(&x, o, &plan);
    if (r < 0)
        goto out;
    r = ks_lock_acquire_shared(
        root, timeout_ms(&x, "lock_timeout", KS_LOCK_TIMEOUT_MS_DEFAULT / 1000), &lock, &holder);
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
        ret->error = ks_asprintf("cannot take the lock '/%s': %s", KS_LOCK_PATH, strerror(-r));
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
    if (nothing_to_swap(j, o, &plan, ret))
        goto out;
    if (resumable(ks_journal_state(j))) {
        old = ks_journal_get(j, KS_JF_OLD_KERNEL);
        if (!streq_ptr(old, plan.running_kernel)) {
            r = fail_step(&x, NULL, -ESTALE,
                          "an interrupted apply started on %s, but %s is running; run 'kswap "
                          "rollback' first",
                          strempty(old), plan.running_kernel);
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
        old = plan.running_kernel;
    }
    ret->dry->old_kernel = strdup(old);
    if (!ret->dry->old_kernel) {
        r = -ENOMEM;
        goto out;
    }
    r = dry_steps(&x, o, &plan, old, ret->dry);
    if (r >= 0)
        ret->status = KS_SWAP_DONE;
out:
    ks_plan_done(&plan);
    if (!j) {
        _cleanup_free_ char *ignored = NULL;
        (void)ks_journal_load(root, &j, &ignored);
    }
    r = end_run(&x, r);
    ret->journal = j;
    return r;
}

/* ---- pin ---- */

/*
 * The trial's GRUB entries go when the trial is settled: the script out of /etc/grub.d
 * (recorded in the journal first), then update-grub. 1: removed, 0: there was none.
 */
static int remove_trial_entries(run *x, const char *step)
{
    char *update[] = {(char *)"update-grub", NULL};
    const char *what = NULL;
    int r;

    if (!ks_trial_grubd_exists(x->root))
        return 0;
    r = ks_journal_note_file(x->j, KS_TRIAL_GRUBD_PATH);
    if (r < 0)
        return journal_error(x, r);
    progress(x, step, "removing the trial's entries from grub.cfg: update-grub");
    r = ks_trial_grubd_remove(x->root);
    if (r < 0)
        return fail_step(x, step, r, "cannot remove '/%s': %s", KS_TRIAL_GRUBD_PATH, strerror(-r));
    r = run_program(x, step, update, timeout_ms(x, "update_grub_timeout", 300), false);
    if (r < 0)
        return r;
    /* The grubenv write that follows must never reach the disk before this grub.cfg. */
    r = ks_grub_cfg_sync(x->root, &what);
    if (r < 0)
        return fail_step(x, step, r,
                         "update-grub rewrote /%s but it cannot be written to the disk: %s", what,
                         strerror(-r));
    return 1;
}

int ks_pin(const ks_root *root, const ks_swap_common *c, const char *release, bool force,
           ks_swap_result *ret)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_free_ char *running = NULL, *detail = NULL, *err = NULL;
    const char *target;
    ks_boot b = {0};
    run x;
    int r;

    assert(root);
    assert(c);
    assert(ret);
    r = start_locked(&x, root, c, ret, &lock);
    if (r < 0)
        goto out;
    target = release ? release : ks_journal_get(x.j, KS_JF_NEW_KERNEL);
    if (!target) {
        ret->status = KS_SWAP_REFUSED;
        ret->error = strdup("no trial kernel in the journal; name the kernel: kswap pin RELEASE");
        goto out;
    }
    r = running_kernel(root, ret, &running);
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
    progress(&x, "pin", "making %s the default on every boot", target);
    r = ks_journal_step_begin(x.j, "pin");
    if (r < 0) {
        journal_error(&x, r);
        goto out;
    }
    r = remove_trial_entries(&x, "pin");
    if (r < 0)
        goto out;
    r = ks_boot_load(root, &b, &err);
    if (r < 0) {
        fail_step(&x, "pin", r, "%s", strempty(err));
        goto out;
    }
    r = ks_journal_note_file(x.j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_set_default(root, &b, target, &detail);
    ks_boot_done(&b);
    if (r < 0) {
        fail_step(&x, "pin", r, "cannot make %s the default: %s", target, strempty(detail));
        goto out;
    }
    r = ks_journal_set_state(x.j, KS_STATE_PINNED);
    if (r >= 0)
        r = ks_journal_step_end(x.j, "pin", KS_STEP_DONE, target);
    /* The trial is settled: no acceptance at the next boots, no status line at login. */
    if (r >= 0) {
        (void)ks_trial_flag_clear(root);
        (void)ks_motd_clear(root);
    }
    if (r < 0) {
        journal_error(&x, r);
        goto out;
    }
    ret->status = KS_SWAP_DONE;
out:
    return end_run(&x, r);
}

/* ---- rollback ---- */

static int add_removed(run *x, const char *kind, const char *name, const char *what)
{
    ks_swap_result *r = x->r;
    size_t cap = r->n_removed;
    struct ks_removed *e;

    if (!GREEDY_REALLOC(r->removed, cap, r->n_removed + 1))
        return -ENOMEM;
    trace(x, "remove", "%s%s", streq(kind, "package") ? "package " : "/", name);
    e = &r->removed[r->n_removed++];
    *e = (struct ks_removed){
        .kind = strdup(kind), .name = strdup(name), .what = what ? strdup(what) : NULL};
    return e->kind && e->name && (!what || e->what) ? 0 : -ENOMEM;
}

/* The package of the old or the running kernel is never purged, whoever installed it. */
static bool package_is_kept(const char *pkg, const char *old, const char *running)
{
    const char *rel = ks_startswith(pkg, "linux-image-") ? pkg + strlen("linux-image-") : NULL;
    return rel && (streq_ptr(rel, old) || streq_ptr(rel, running));
}

/* Whether dpkg still has the package: installed, or left unfinished (half-configured, ...). */
static bool package_present(run *x, const char *pkg)
{
    _cleanup_(ks_dpkg_unfinished_list_done) ks_dpkg_unfinished_list l = {0};
    bool installed = false;

    if (ks_dpkg_is_installed(x->root, pkg, &installed) < 0 || installed)
        return true; /* unreadable: apt-get decides */
    if (ks_dpkg_read_unfinished(x->root, &l) < 0)
        return true;
    for (size_t i = 0; i < l.n; i++)
        if (streq(l.v[i].package, pkg))
            return true;
    return false;
}

/* The packages every apply of this swap installed that dpkg still has: apt-get purge. */
static int purge_packages(run *x, const char *old, const char *running)
{
    _cleanup_strv_free_ char **pkgs = NULL, **gone = NULL;
    int r;

    for (size_t i = 0; i < ks_journal_n_changes(x->j); i++) {
        const ks_journal_change *ch = ks_journal_change_get(x->j, i);

        if (ch->kind != KS_CHANGE_PACKAGE || ch->name[0] == '/' ||
            package_is_kept(ch->name, old, running) || ks_strv_contains(pkgs, ch->name))
            continue;
        if (!package_present(x, ch->name))
            r = ks_strv_extend(&gone, ch->name);
        else
            r = ks_strv_extend(&pkgs, ch->name);
        if (r < 0)
            return r;
    }
    /* Removed already (by hand, by an earlier purge): nothing to do, nothing to list. */
    for (char **g = gone; g && *g; g++)
        (void)ks_journal_forget_change(x->j, KS_CHANGE_PACKAGE, *g);
    if (!pkgs)
        return 0;
    {
        _cleanup_free_ char **argv = calloc(ks_strv_length(pkgs) + 4, sizeof(char *));
        size_t n = 0;
        if (!argv)
            return -ENOMEM;
        argv[n++] = (char *)"apt-get";
        argv[n++] = (char *)"-y";
        argv[n++] = (char *)"purge";
        for (char **p = pkgs; *p; p++)
            argv[n++] = *p;
        r = wait_for_dpkg(x, "purge");
        if (r < 0)
            return r;
        progress(x, "purge", "removing the packages kswap installed: %zu", ks_strv_length(pkgs));
        r = run_program(x, "purge", argv, timeout_ms(x, "apt_timeout", 1800), true);
        if (r < 0)
            return r;
    }
    for (char **p = pkgs; *p; p++) {
        if (package_present(x, *p))
            continue; /* apt kept it (another package depends on it): not removed */
        r = add_removed(x, "package", *p, NULL);
        if (r < 0)
            return r;
        (void)ks_journal_forget_change(x->j, KS_CHANGE_PACKAGE, *p);
    }
    return 0;
}

/* The source kswap wrote and its keyring go; what it disabled is enabled again. */
static int purge_apt_source(run *x)
{
    _cleanup_transaction_ ks_transaction changes = {0};
    int r;

    r = ks_aptsource_remove(x->root, &changes);
    if (r < 0)
        return fail_step(x, "purge", r, "cannot remove the XanMod apt source: %s", strerror(-r));
    for (size_t i = 0; i < changes.n && r >= 0; i++) {
        const ks_file_change *c = &changes.v[i];
        const char *kind = streq(c->path, KS_APT_SOURCE_PATH)    ? "apt-source"
                           : streq(c->path, KS_APT_KEYRING_PATH) ? "apt-keyring"
                           : c->kind == KS_FILE_CHANGE_REMOVE    ? "file"
                                                                 : "apt-restored";
        r = add_removed(x, kind, c->path, c->what);
        if (r >= 0)
            (void)ks_journal_forget_change(x->j, KS_CHANGE_FILE, c->path);
    }
    return r;
}

/*
 * kswap's GRUB drop-in: the content from before kswap goes back when there was one, else the
 * file goes (only kswap's own, by its first line). 1: changed (update-grub must run).
 */
static int purge_dropin(run *x)
{
    static const char marker[] = "# Written by kswap";
    const ks_journal_change *ch = ks_journal_change_find(x->j, KS_CHANGE_FILE, KS_GRUB_DROPIN_PATH);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    r = ks_root_read_file(x->root, KS_GRUB_DROPIN_PATH, 1u << 20, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return fail_step(x, "purge", r, "cannot read '/%s': %s", KS_GRUB_DROPIN_PATH, strerror(-r));
    /* A file from before kswap goes back; one an earlier apply of kswap wrote does not. */
    if (ch && ch->existed &&
        !(ch->previous_len >= strlen(marker) &&
          memcmp(ch->previous, marker, strlen(marker)) == 0)) {
        if (len == ch->previous_len && memcmp(text, ch->previous, len) == 0)
            return 0;
        r = ks_write_atomic(x->root, KS_GRUB_DROPIN_PATH, (const char *)ch->previous,
                            ch->previous_len, ch->mode ? ch->mode : 0644);
        if (r < 0)
            return fail_step(x, "purge", r, "cannot restore '/%s': %s", KS_GRUB_DROPIN_PATH,
                             strerror(-r));
        r = add_removed(x, "grub-dropin", KS_GRUB_DROPIN_PATH,
                        "kswap's settings; the file as it was before kswap is back");
    } else {
        if (!ks_startswith(text, marker))
            return 0; /* not kswap's: the operator's file stays */
        r = ks_unlink_durable(x->root, KS_GRUB_DROPIN_PATH);
        if (r < 0)
            return fail_step(x, "purge", r, "cannot remove '/%s': %s", KS_GRUB_DROPIN_PATH,
                             strerror(-r));
        r = add_removed(x, "grub-dropin", KS_GRUB_DROPIN_PATH,
                        "GRUB_DEFAULT=saved and panic=10 of kswap");
    }
    if (r >= 0)
        (void)ks_journal_forget_change(x->j, KS_CHANGE_FILE, KS_GRUB_DROPIN_PATH);
    if (r >= 0)
        x->dropin_purged = TAKE_PTR(text);
    return r < 0 ? r : 1;
}

static bool dropin_removed(const ks_swap_result *r)
{
    for (size_t i = 0; i < r->n_removed; i++)
        if (streq(r->removed[i].kind, "grub-dropin"))
            return true;
    return false;
}

/* Writes kswap's drop-in back after all, runs update-grub and loads what it wrote. */
static int keep_dropin(run *x, ks_boot *b)
{
    /* A fresh argv: run_program() replaces argv[0] with a path it frees afterwards. */
    char *update[] = {(char *)"update-grub", NULL};
    _cleanup_free_ char *err = NULL;
    const char *text = x->dropin_purged;
    size_t i;
    int r;

    if (!text)
        return -ENOENT;
    progress(x, "purge",
             "GRUB's own default would not start the old kernel: kswap's drop-in stays");
    r = ks_journal_note_file(x->j, KS_GRUB_DROPIN_PATH);
    if (r >= 0)
        r = ks_write_atomic(x->root, KS_GRUB_DROPIN_PATH, text, strlen(text), 0644);
    if (r < 0)
        return fail_step(x, "rollback", r, "cannot write '/%s': %s", KS_GRUB_DROPIN_PATH,
                         strerror(-r));
    for (i = 0; i < x->r->n_removed; i++)
        if (streq(x->r->removed[i].kind, "grub-dropin"))
            break;
    if (i < x->r->n_removed) {
        free(x->r->removed[i].kind);
        free(x->r->removed[i].name);
        free(x->r->removed[i].what);
        memmove(&x->r->removed[i], &x->r->removed[i + 1],
                (x->r->n_removed - i - 1) * sizeof(x->r->removed[0]));
        x->r->n_removed--;
    }
    r = run_program(x, "rollback", update, timeout_ms(x, "update_grub_timeout", 300), false);
    if (r < 0)
        return r;
    r = ks_boot_load(x->root, b, &err);
    return r < 0 ? fail_step(x, "rollback", r, "%s", strempty(err)) : 0;
}

static int purge_autoremove_guard(run *x, const char *old, const char *new)
{
    _cleanup_free_ char *what = NULL;
    int r = ks_autoremove_release(x->root);

    if (r == -EEXIST)
        return 0; /* not kswap's: the operator's file stays */
    if (r < 0)
        return fail_step(x, "purge", r, "cannot remove '/%s': %s", KS_AUTOREMOVE_PATH,
                         ks_strerror(r));
    if (r == 0)
        return 0;
    what = new ? ks_asprintf("kept %s and %s from apt autoremove", old, new)
               : ks_asprintf("kept %s from apt autoremove", old);
    return what ? add_removed(x, "autoremove-guard", KS_AUTOREMOVE_PATH, what) : -ENOMEM;
}

static int purge(run *x, const char *old, const char *running)
{
    const char *new = ks_journal_get(x->j, KS_JF_NEW_KERNEL);
    int r;

    if (new &&streq(new, running))
        return fail_step(x, "purge", -EBUSY,
                         "%s is running: boot the old kernel first ('kswap rollback --reboot'), "
                         "then purge",
                         new);
    x->r->purged = true;
    r = purge_packages(x, old, running);
    if (r >= 0)
        r = purge_apt_source(x);
    if (r >= 0)
        r = purge_dropin(x);
    if (r >= 0)
        r = purge_autoremove_guard(x, old, new);
    return r < 0 ? r : 0;
}

/*
 * Back to an old kernel that is not running: its files first, by the cheap look (the files its
 * own entry loads, which the rollback makes every boot start). Damaged, with --reboot: refused
 * before anything changes (a reboot would leave the node at GRUB's prompt or in a kernel that
 * cannot start); without it: the rollback goes on and the findings warn before the operator's
 * own reboot.
 */
static int old_files_before_rollback(run *x, const char *old, bool reboot)
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
    run x;
    int r;

    assert(root);
    assert(c);
    assert(ret);
    r = init_run(&x, root, c, ret);
    /* --purge runs apt-get: dpkg's lock must be free before anything changes on disk. */
    if (r >= 0 && do_purge)
        r = wait_for_dpkg(&x, NULL);
    if (r >= 0)
        r = lock_or_busy(&x, &lock);
    if (r >= 0)
        r = load_journal(&x);
    if (r < 0)
        goto out;
    old = ks_journal_get(x.j, KS_JF_OLD_KERNEL);
    if (!old) {
        ret->status = KS_SWAP_ALREADY;
        ret->error = strdup("nothing to roll back: the journal names no old kernel");
        goto out;
    }
    r = running_kernel(root, ret, &running);
    if (r < 0)
        goto out;
    if (!streq(running, old)) {
        r = old_files_before_rollback(&x, old, reboot);
        if (r < 0 || ret->status == KS_SWAP_REFUSED)
            goto out;
    }
    r = begin(&x, "rollback", "making the old kernel the default again");
    if (r < 0) {
        journal_error(&x, r);
        goto out;
    }
    r = remove_trial_entries(&x, "rollback");
    if (r < 0)
        goto out;
    if (do_purge) {
        r = purge(&x, old, running);
        if (r >= 0)
            r = run_program(&x, "rollback", update, timeout_ms(&x, "update_grub_timeout", 300),
                            false);
        if (r < 0)
            goto out;
    }
    r = ks_boot_load(root, &b, &err);
    if (r < 0) {
        fail_step(&x, "rollback", r,
                  "cannot read GRUB's state: %s; fix it and run 'kswap rollback' again",
                  err ? err : strerror(-r));
        goto out;
    }
    r = ks_journal_note_file(x.j, KS_GRUBENV_PATH);
    if (r >= 0)
        r = ks_boot_disarm(root, &b, NULL, &detail);
    if (r >= 0)
        r = ks_boot_set_default(root, &b, old, &detail);
    if (r == -EPROTO && dropin_removed(ret)) {
        /* Without kswap's GRUB_DEFAULT=saved GRUB would not boot the old kernel: the drop-in
         * stays (docs/design.md, invariant 1). */
        ks_boot_done(&b);
        r = keep_dropin(&x, &b);
        if (r >= 0)
            r = ks_boot_set_default(root, &b, old, &detail);
    }
    ks_boot_done(&b);
    if (r < 0) {
        /* Never an empty reason: the step that failed may have said nothing itself. */
        fail_step(&x, "rollback", r,
                  "cannot make %s the default again: %s; fix that and run 'kswap rollback' again",
                  old, detail ? detail : strerror(-r));
        goto out;
    }
    r = ks_journal_set_state(x.j, KS_STATE_ROLLED_BACK);
    if (r >= 0)
        r = done(&x, "rollback", old);
    if (r >= 0) {
        (void)ks_trial_flag_clear(root);
        (void)ks_motd_clear(root);
    }
    if (r < 0) {
        journal_error(&x, r);
        goto out;
    }
    ret->status = KS_SWAP_DONE;
    if (reboot && !streq(running, old))
        r = reboot_now(&x, "reboot",
                       &(ks_reboot_expect){.old = old, .then = "then 'kswap rollback --reboot'"},
                       "the rollback is done: every boot starts the old kernel");
out:
    return end_run(&x, r);
}
