/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>
#include <time.h>

#include "lib/basic/fileio.h"
#include "lib/engine/aptrun.h"
#include "lib/repo/apt-status.h"
#include "lib/host/dpkglock.h"

#define APT_STATUS_FD 3

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(ks_progress_fn fn, const ks_apt_run *a, const char *fmt, ...) _printf_(3, 4);
static void say(ks_progress_fn fn, const ks_apt_run *a, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    ks_vprogressf(fn, a->c ? a->c->userdata : NULL, a->step, fmt, ap);
    va_end(ap);
}

typedef struct watch {
    const ks_apt_run *a;
    ks_apt_status_stream stream;
    ks_apt_phase phase;
    double start, phase_start;
    double took[_KS_APT_PHASE_MAX];
    bool seen[_KS_APT_PHASE_MAX];
} watch;

static ks_progress_fn progress_fn(const ks_apt_run *a)
{
    return a->c ? a->c->progress : NULL;
}

static void phase_end(watch *w, double now)
{
    if (w->phase >= 0)
        w->took[w->phase] += now - w->phase_start;
}

static void status_line(void *userdata, const ks_apt_status *s)
{
    watch *w = userdata;
    double now = mono_s();

    if (s->kind == KS_APT_STATUS_PMERROR) {
        say(progress_fn(w->a), w->a, "apt: dpkg failed on %s: %s", s->subject, s->message);
        return;
    }
    if (s->phase == KS_APT_PHASE_NONE)
        return;
    if (s->phase != w->phase) {
        phase_end(w, now);
        w->phase = s->phase;
        w->phase_start = now;
        w->seen[s->phase] = true;
        say(progress_fn(w->a), w->a, "apt %s: %s", ks_apt_phase_to_string(s->phase), s->message);
    } else if (w->a->c)
        say(w->a->c->live, w->a, "apt %s %.0f%%: %s", ks_apt_phase_to_string(s->phase), s->percent,
            s->message);
}

static void status_bytes(void *userdata, const char *data, size_t n)
{
    watch *w = userdata;
    (void)ks_apt_status_feed(&w->stream, data, n, status_line, w);
}

static void summary(watch *w)
{
    _cleanup_free_ char *text = NULL;

    phase_end(w, mono_s());
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
        say(progress_fn(w->a), w->a, "apt took %.1f s: %s", mono_s() - w->start, text);
}

bool ks_apt_program_allowed(const char *root_abs, const char *path)
{
    static const char *const system_dirs[] = {"/usr/", "/bin/", "/sbin/"};

    if (!root_abs)
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
        if (ks_startswith(path, system_dirs[i]))
            return false;
    return true;
}

int ks_apt_run_argv(const ks_apt_run *a, char *const *argv, char **ret_error, char **ret_output)
{
    _cleanup_free_ char *path = NULL, *root_env = NULL, *last = NULL, *line = NULL;
    _cleanup_free_ char **full = NULL;
    char *env[6];
    size_t n = 0, m = ks_strv_length(argv);
    ks_spawn_result res = {0};
    watch w = {.a = a, .phase = KS_APT_PHASE_NONE, .start = mono_s()};
    int r;

    assert(a);
    assert(argv && argv[0]);
    assert(ret_error);
    r = ks_find_program(argv[0], &path);
    if (r < 0) {
        *ret_error = ks_asprintf("cannot find '%s' on PATH", argv[0]);
        return r;
    }
    if (!ks_apt_program_allowed(a->root_abs, path)) {
        *ret_error = ks_asprintf("refusing to run this machine's '%s' for the root '%s': put a "
                                 "program that works on that root first on PATH",
                                 argv[0], a->root_abs);
        return -EPERM;
    }
    if (a->root_abs) {
        root_env = ks_asprintf("KSWAP_ROOT=%s", a->root_abs);
        if (!root_env)
            return -ENOMEM;
        env[n++] = root_env;
    }
    env[n++] = (char *)"DEBIAN_FRONTEND=noninteractive";
    env[n++] = (char *)"APT_LISTCHANGES_FRONTEND=none";
    env[n++] = (char *)"LC_ALL=C.UTF-8"; /* the phases are read from apt's English words */
    env[n++] = (char *)"LANGUAGE=";
    env[n] = NULL;
    full = calloc(m + 3, sizeof(char *));
    if (!full)
        return -ENOMEM;
    full[0] = path;
    full[1] = (char *)"-o";
    full[2] = (char *)"APT::Status-Fd=3"; /* APT_STATUS_FD */
    for (size_t i = 1; i < m; i++)
        full[i + 2] = argv[i];
    if (a->c && a->c->trace && (line = ks_strv_join(full, " ")))
        say(a->c->trace, a, "%s", line);
    r = ks_spawn(full,
                 KS_SPAWN_OPTS(.timeout_ms = a->timeout_ms, .env = env, .status_fd = APT_STATUS_FD,
                               .on_status = status_bytes, .status_userdata = &w),
                 &res);
    if (r < 0) {
        *ret_error = ks_asprintf("cannot run '%s': %s", path, strerror(-r));
        return r;
    }
    summary(&w);
    if (ks_spawn_succeeded(&res)) {
        ks_spawn_result_done(&res);
        return 0;
    }
    /* apt's "Could not get lock ... held by process N (NAME)" says more than its last line. */
    last = ks_apt_lock_error_line(res.output);
    if (!last)
        last = ks_spawn_last_line(&res);
    *ret_error = ks_asprintf("'%s' %s: %s", path,
                             res.timed_out     ? "did not finish in time and was stopped"
                             : res.term_signal ? "was killed by a signal"
                                               : "failed",
                             last && *last ? last : "(no output)");
    if (ret_output)
        *ret_output = TAKE_PTR(res.output);
    ks_spawn_result_done(&res);
    return -EIO;
}
