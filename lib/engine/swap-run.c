/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The run context of apply, pin and rollback (lib/engine/swap-run.h). */
#include <limits.h>
#include <stdarg.h>
#include <time.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/config.h"
#include "lib/basic/fileio.h"
#include "lib/basic/spawn.h"
#include "lib/basic/time-util.h"
#include "lib/engine/dpkgwait.h"
#include "lib/engine/history.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/swap-run.h"
#include "lib/host/dpkg.h"
#include "lib/host/kernels.h"
#include "lib/repo/apt-status.h"

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

void ks_vprogressf(ks_progress_fn fn, void *userdata, const char *step, const char *fmt, va_list ap)
{
    _cleanup_free_ char *msg = NULL;

    if (!fn)
        return;
    (void)ks_vasprintf_r(&msg, fmt, ap);
    fn(userdata, step, msg ? msg : step);
}

int ks_run_running_kernel(const ks_root *root, ks_swap_result *ret, char **running)
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

static void run_live(ks_run *x, const char *step, const char *fmt, ...) _printf_(3, 4);
static void run_live(ks_run *x, const char *step, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(x->c->live, x->c->userdata, step, fmt, ap);
    va_end(ap);
}

void ks_run_progress(ks_run *x, const char *step, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(x->c->progress, x->c->userdata, step, fmt, ap);
    va_end(ap);
}

int ks_run_fail_step(ks_run *x, const char *step, int err, const char *fmt, ...)
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

unsigned ks_run_timeout_ms(ks_run *x, const char *key, unsigned def_s)
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
int ks_run_find_program(ks_run *x, const char *name, char **ret_path)
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

void ks_run_trace(ks_run *x, const char *what, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(x->c->trace, x->c->userdata, what, fmt, ap);
    va_end(ap);
}

static void run_trace_argv(ks_run *x, char *const *argv)
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
    ks_run_trace(x, "run", "%s", line);
}

double ks_run_mono_s(void)
{
    return (double)ks_monotonic_ms() / 1000.0;
}

#define APT_STATUS_FD 3

static void apt_phase_end(ks_apt_watch *w, double now)
{
    if (w->phase >= 0)
        w->took[w->phase] += now - w->phase_start;
}

static void apt_status_line(void *userdata, const ks_apt_status *s)
{
    ks_apt_watch *w = userdata;
    double now = ks_run_mono_s();

    if (s->kind == KS_APT_STATUS_PMERROR) {
        ks_run_progress(w->x, w->step, "apt: dpkg failed on %s: %s", s->subject, s->message);
        return;
    }
    if (s->phase == KS_APT_PHASE_NONE)
        return;
    if (s->phase != w->phase) {
        apt_phase_end(w, now);
        w->phase = s->phase;
        w->phase_start = now;
        w->seen[s->phase] = true;
        ks_run_progress(w->x, w->step, "apt %s: %s", ks_apt_phase_to_string(s->phase), s->message);
    } else
        run_live(w->x, w->step, "apt %s %.0f%%: %s", ks_apt_phase_to_string(s->phase), s->percent,
                 s->message);
}

void ks_apt_watch_bytes(void *userdata, const char *data, size_t n)
{
    ks_apt_watch *w = userdata;
    (void)ks_apt_status_feed(&w->stream, data, n, apt_status_line, w);
}

/* One line when apt is done: where the time went, phase by phase. */
void ks_apt_watch_summary(ks_apt_watch *w)
{
    _cleanup_free_ char *text = NULL;

    apt_phase_end(w, ks_run_mono_s());
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
        ks_run_progress(w->x, w->step, "apt took %.1f s: %s", ks_run_mono_s() - w->start, text);
}

/* Runs a program for a step; a failure fills the result with its exit and last output line. */
int ks_run_program(ks_run *x, const char *step, char **argv, unsigned tmo_ms, bool apt)
{
    _cleanup_free_ char *path = NULL, *root_env = NULL, *last = NULL;
    char *env[8];
    size_t n = 0;
    ks_spawn_result res = {0};
    int r;

    r = ks_run_find_program(x, argv[0], &path);
    if (r == -EPERM)
        return ks_run_fail_step(
            x, step, r,
            "refusing to run this machine's '%s' for the root '%s': put a program "
            "that works on that root first on PATH",
            argv[0], x->root_abs);
    if (r < 0)
        return ks_run_fail_step(x, step, r, "cannot find '%s' on PATH", argv[0]);
    if (x->root_abs) {
        root_env = ks_asprintf("KSWAP_ROOT=%s", x->root_abs);
        env[n++] = root_env;
    }
    if (apt) {
        env[n++] = (char *)"DEBIAN_FRONTEND=noninteractive";
        env[n++] = (char *)"APT_LISTCHANGES_FRONTEND=none";
        env[n++] = (char *)KS_APT_ENV_LC_ALL;
        env[n++] = (char *)KS_APT_ENV_LANGUAGE;
    }
    env[n] = NULL;
    argv[0] = path;
    if (apt) {
        /* apt reports its phases on a status fd (APT::Status-Fd): kswap reads them and shows a
         * line per phase with the time, live on a terminal; apt's own output is kept for
         * errors. */
        size_t m = ks_strv_length(argv);
        _cleanup_free_ char **full = calloc(m + 3, sizeof(char *));
        ks_apt_watch w = KS_APT_WATCH(x, step);

        if (!full)
            return -ENOMEM;
        full[0] = argv[0];
        full[1] = (char *)"-o";
        full[2] = (char *)"APT::Status-Fd=3"; /* APT_STATUS_FD */
        for (size_t i = 1; i < m; i++)
            full[i + 2] = argv[i];
        run_trace_argv(x, full);
        r = ks_spawn(full,
                     KS_SPAWN_OPTS(.timeout_ms = tmo_ms, .env = env, .status_fd = APT_STATUS_FD,
                                   .on_status = ks_apt_watch_bytes, .status_userdata = &w),
                     &res);
        if (r >= 0)
            ks_apt_watch_summary(&w);
    } else {
        run_trace_argv(x, argv);
        r = ks_spawn(argv, KS_SPAWN_OPTS(.timeout_ms = tmo_ms, .env = env), &res);
    }
    if (r < 0)
        return ks_run_fail_step(x, step, r, "cannot run '%s': %s", path, strerror(-r));
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
    r = ks_run_fail_step(x, step, -EIO, "'%s' %s: %s", path,
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
int ks_run_wait_for_dpkg(ks_run *x, const char *step)
{
    _cleanup_(ks_dpkg_lock_holder_done) ks_dpkg_lock_holder h = {0};
    unsigned tmo = ks_run_timeout_ms(x, "apt_timeout", 1800);
    int r = ks_dpkg_lock_wait(x->root, tmo, x->c->progress, x->c->userdata, &h);

    if (r == -ETIMEDOUT) {
        _cleanup_free_ char *who = ks_dpkg_lock_holder_describe(&h),
                            *todo = ks_dpkg_lock_remedy(&h);
        return ks_run_fail_step(
            x, step, -EBUSY,
            "'/%s' is still held by %s after %u s ([apply] apt_timeout); %s, then run "
            "kswap again",
            h.lock, strempty(who), tmo / 1000, strempty(todo));
    }
    if (r < 0)
        return ks_run_fail_step(x, step, r, "cannot check dpkg's lock: %s", strerror(-r));
    return 0;
}

int ks_run_begin(ks_run *x, const char *step, const char *what)
{
    ks_run_progress(x, step, "%s", what);
    return ks_journal_step_begin(x->j, step);
}

int ks_run_done(ks_run *x, const char *step, const char *detail)
{
    return ks_journal_step_end(x->j, step, KS_STEP_DONE, detail);
}

int ks_run_journal_error(ks_run *x, int r)
{
    free(x->r->error);
    x->r->error =
        ks_asprintf("cannot write the state journal '/%s': %s", KS_JOURNAL_PATH, strerror(-r));
    x->r->status = KS_SWAP_FAILED;
    return r;
}

int ks_run_lock(ks_run *x, ks_lock **ret)
{
    pid_t holder = 0;
    int r;

    if (x->c->lock_handover && *x->c->lock_handover) {
        *ret = TAKE_PTR(*x->c->lock_handover);
        x->locked = true;
        return 0;
    }
    r = ks_lock_acquire(
        x->root,
        x->c->lock_timeout_ms
            ? x->c->lock_timeout_ms
            : ks_run_timeout_ms(x, "lock_timeout", KS_LOCK_TIMEOUT_MS_DEFAULT / 1000),
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
        x->r->error = ks_asprintf("cannot take the lock '/%s': %s", KS_LOCK_PATH, ks_strerror(r));
    }
    x->locked = r >= 0;
    return r;
}

int ks_run_load_journal(ks_run *x)
{
    _cleanup_free_ char *err = NULL;
    int r;

    ks_run_trace(x, "read", "/%s (saved again at every step)", KS_JOURNAL_PATH);
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

int ks_run_init(ks_run *x, const ks_root *root, const ks_swap_common *c, ks_swap_result *r)
{
    *x = (ks_run){.root = root, .c = c, .r = r};
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
int ks_run_start_locked(ks_run *x, const ks_root *root, const ks_swap_common *c,
                        ks_swap_result *res, ks_lock **lock)
{
    int r = ks_run_init(x, root, c, res);
    if (r >= 0)
        r = ks_run_lock(x, lock);
    if (r >= 0)
        r = ks_run_load_journal(x);
    return r;
}

/*
 * Hands the journal to the result and applies the rule of swap.h: a negative errno exactly when
 * the call could not evaluate or act (KS_SWAP_FAILED), 0 for every verdict in the result. An
 * error without a status of its own (out of memory on the way) is a failure, never "done".
 */
int ks_run_end(ks_run *x, int r)
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

int ks_run_releases_now(const ks_root *root, char ***ret)
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

/*
 * update-grub, then the new grub.cfg with grubenv and what GRUB can write at boot; grubenv's
 * bytes go into the journal before anything changes them.
 */
int ks_run_update_grub_and_load(ks_run *x, const char *step, ks_boot *b)
{
    _cleanup_free_ char *err = NULL;
    char *argv[] = {(char *)"update-grub", NULL};
    int r;

    r = ks_run_program(x, step, argv, ks_run_timeout_ms(x, "update_grub_timeout", 300), false);
    if (r < 0)
        return r;
    ks_run_trace(x, "read", "/%s, /%s", KS_GRUB_CFG_PATH, KS_GRUBENV_PATH);
    r = ks_boot_load(x->root, b, &err);
    if (r < 0)
        return ks_run_fail_step(x, step, r, "%s", strempty(err));
    r = ks_journal_note_file(x->j, KS_GRUBENV_PATH);
    if (r < 0) {
        ks_boot_done(b);
        /* Mostly the grubenv itself (a FIFO, too large): say so, not "the journal". */
        return ks_run_fail_step(x, step, r, "cannot record '/%s' before changing it: %s",
                                KS_GRUBENV_PATH, ks_strerror(r));
    }
    return 0;
}
