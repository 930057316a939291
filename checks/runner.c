/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rounds of checks until every required one passed or the deadline passed. */
#include <time.h>

#include "checks/check.h"
#include "lib/basic/util.h"
#include "lib/basic/time-util.h"

#define DEFAULT_INTERVAL_MS 5000u

static long long mono_ms(void *userdata)
{
    (void)userdata;
    return ks_monotonic_ms();
}

static void mono_sleep(void *userdata, unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/*
 * A detail names what the node holds (an interface named with ESC, a chain with bytes of
 * invalid UTF-8), a script prints what it likes: both leave the check as printable text
 * (checks/ids.c), whoever shows them.
 */
static int make_printable(ks_check *chk)
{
    char **texts[] = {&chk->detail, &chk->output};

    for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
        char *t;
        if (!*texts[i])
            continue;
        t = ks_check_text_escape(*texts[i], texts[i] == &chk->output);
        if (!t)
            return -ENOMEM;
        free(*texts[i]);
        *texts[i] = t;
    }
    return 0;
}

static int run_one(const ks_check_ctx *c, ks_check *chk)
{
    int r;

    chk->attempts++;
    chk->final = false;
    r = chk->run ? chk->run(c, chk) : -ENOSYS;
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        /* Could not be evaluated: a failure, with the reason unless the check gave one. */
        _cleanup_free_ char *d = ks_asprintf("cannot check: %s", strerror(-r));
        if (!d)
            return -ENOMEM;
        free(chk->detail);
        chk->detail = TAKE_PTR(d);
    }
    chk->status = r > 0 ? KS_CHECK_PASS : KS_CHECK_FAIL;
    if (r > 0)
        chk->final = false;
    return make_printable(chk);
}

static bool required_failed_finally(const ks_checklist *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].required && l->v[i].status == KS_CHECK_FAIL && l->v[i].final)
            return true;
    return false;
}

static bool required_passed(const ks_checklist *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].required && l->v[i].status != KS_CHECK_PASS)
            return false;
    return true;
}

static int run_rounds(ks_checklist *l, const ks_check_ctx *c, const ks_runner_opts *o)
{
    long long (*now)(void *) = o->now_ms ? o->now_ms : mono_ms;
    void (*sleep_fn)(void *, unsigned) = o->sleep_ms ? o->sleep_ms : mono_sleep;
    unsigned interval = o->interval_ms ? o->interval_ms : DEFAULT_INTERVAL_MS;
    long long deadline = now(o->userdata) + o->timeout_ms, left;
    int r;

    for (;;) {
        /* A program's answer is shared by the checks of one round, never kept longer. */
        ks_check_cache_clear(c->cache);
        for (size_t i = 0; i < l->n; i++) {
            /* A check that passed stays passed: services that came up are not asked again. */
            if (l->v[i].status == KS_CHECK_PASS)
                continue;
            r = run_one(c, &l->v[i]);
            if (r < 0)
                return r;
            if (o->progress)
                o->progress(o->userdata, &l->v[i]);
        }
        if (required_passed(l))
            return 1;
        /* Waiting cannot heal it: the verdict now, and the way back starts at once. */
        if (required_failed_finally(l))
            return 0;
        left = deadline - now(o->userdata);
        if (left <= 0)
            return 0;
        sleep_fn(o->userdata, left < interval ? (unsigned)left : interval);
    }
}

int ks_checks_run(ks_checklist *l, const ks_check_ctx *c, const ks_runner_opts *o)
{
    ks_check_ctx round = *c;
    int r;

    round.cache = ks_check_cache_new();
    if (!round.cache)
        return -ENOMEM;
    r = run_rounds(l, &round, o);
    ks_check_cache_free(round.cache);
    return r;
}
