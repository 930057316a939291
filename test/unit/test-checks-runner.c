/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The acceptance runner with a fake clock: retries, deadline, last results, attempts. */
#include "checks/check.h"
#include "lib/basic/util.h"
#include "test.h"

/* Each fake check passes from its Nth attempt on (0: never; -1: cannot evaluate; -2: fails
 * finally, a failure waiting cannot heal). */
static int fake_check(const ks_check_ctx *c, ks_check *chk)
{
    int pass_at = atoi(chk->arg);

    free(chk->detail);
    chk->detail = ks_asprintf("attempt %u", chk->attempts);
    if (pass_at == -2) {
        chk->final = true;
        return 0;
    }
    if (pass_at < 0)
        return -EIO;
    return pass_at > 0 && chk->attempts >= (unsigned)pass_at;
}

typedef struct clock {
    long long now;
    unsigned sleeps;
} clock_t_;

static long long fake_now(void *ud)
{
    return ((clock_t_ *)ud)->now;
}

static void fake_sleep(void *ud, unsigned ms)
{
    ((clock_t_ *)ud)->now += ms;
    ((clock_t_ *)ud)->sleeps++;
}

#define MAX_CHECKS 4

static const struct scenario {
    const char *name;
    struct {
        const char *pass_at;
        bool required;
    } checks[MAX_CHECKS];
    unsigned timeout_ms, interval_ms;
    int ret;
    unsigned attempts[MAX_CHECKS];
    ks_check_status status[MAX_CHECKS];
    unsigned sleeps;
} scenarios[] = {
    {"a final failure ends the wait at once",
     {{"3", true}, {"-2", true}},
     10000,
     1000,
     0,
     {1, 1},
     {KS_CHECK_FAIL, KS_CHECK_FAIL},
     0},
    {"a final failure of a wanted check does not",
     {{"3", true}, {"-2", false}},
     10000,
     1000,
     1,
     {3, 3},
     {KS_CHECK_PASS, KS_CHECK_FAIL},
     2},
    {"all pass at once",
     {{"1", true}, {"1", true}},
     10000,
     1000,
     1,
     {1, 1},
     {KS_CHECK_PASS, KS_CHECK_PASS},
     0},
    {"a service after 3 retries",
     {{"1", true}, {"4", true}},
     10000,
     1000,
     1,
     {1, 4},
     {KS_CHECK_PASS, KS_CHECK_PASS},
     3},
    {"never passes: deadline",
     {{"1", true}, {"0", true}},
     3000,
     1000,
     0,
     {1, 4},
     {KS_CHECK_PASS, KS_CHECK_FAIL},
     3},
    {"cannot evaluate is a failure", {{"-1", true}}, 2000, 1000, 0, {3}, {KS_CHECK_FAIL}, 2},
    {"a wanted failure does not block",
     {{"1", true}, {"0", false}},
     10000,
     1000,
     1,
     {1, 1},
     {KS_CHECK_PASS, KS_CHECK_FAIL},
     0},
    {"a wanted check retried while required ones wait",
     {{"3", true}, {"2", false}},
     10000,
     1000,
     1,
     {3, 2},
     {KS_CHECK_PASS, KS_CHECK_PASS},
     2},
    {"no timeout: one round", {{"2", true}}, 0, 1000, 0, {1}, {KS_CHECK_FAIL}, 0},
    {"last sleep is cut to the deadline", {{"0", true}}, 2500, 1000, 0, {4}, {KS_CHECK_FAIL}, 3},
    {"no checks at all", {{NULL, false}}, 1000, 1000, 1, {0}, {KS_CHECK_SKIP}, 0},
};

static unsigned progress_calls;
static void progress(void *ud, const ks_check *chk)
{
    progress_calls++;
}

int main(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++) {
        const struct scenario *s = &scenarios[i];
        ks_checklist l = {0};
        clock_t_ clk = {.now = 1000000};
        unsigned total = 0;
        int r;

        for (size_t j = 0; j < MAX_CHECKS && s->checks[j].pass_at; j++)
            CHECK(ks_checklist_add(&l, "fake", s->checks[j].pass_at, s->checks[j].required,
                                   fake_check) == 0);
        progress_calls = 0;
        r = ks_checks_run(&l, &(ks_check_ctx){0},
                          &(ks_runner_opts){.timeout_ms = s->timeout_ms,
                                            .interval_ms = s->interval_ms,
                                            .now_ms = fake_now,
                                            .sleep_ms = fake_sleep,
                                            .progress = progress,
                                            .userdata = &clk});
        CHECK_MSG(r == s->ret, "%s: returned %d", s->name, r);
        for (size_t j = 0; j < l.n; j++) {
            CHECK_MSG(l.v[j].attempts == s->attempts[j], "%s: check %zu ran %u times", s->name, j,
                      l.v[j].attempts);
            CHECK_MSG(l.v[j].status == s->status[j], "%s: check %zu is %s", s->name, j,
                      ks_check_status_to_string(l.v[j].status));
            CHECK(l.v[j].detail != NULL);
            total += l.v[j].attempts;
        }
        CHECK_MSG(clk.sleeps == s->sleeps, "%s: slept %u times", s->name, clk.sleeps);
        CHECK_INTEQ(progress_calls, total);
        CHECK(clk.now <= 1000000 + (long long)s->timeout_ms);
        ks_checklist_done(&l);
    }

    /* Ids, lookups and hand-set results (the kernel and boot checks of the verdict). */
    {
        ks_checklist l = {0};
        CHECK(ks_checklist_add(&l, "kernel", NULL, true, NULL) == 0);
        CHECK(ks_checklist_add(&l, "service", "xray.service", true, fake_check) == 0);
        CHECK_STREQ(l.v[0].id, "kernel");
        CHECK_STREQ(l.v[1].id, "service:xray.service");
        CHECK(ks_checklist_find(&l, "service:xray.service") == &l.v[1]);
        CHECK(ks_checklist_find(&l, "service:other") == NULL);
        CHECK(ks_check_set(&l.v[0], KS_CHECK_PASS, "6.18 runs") == 0);
        CHECK_STREQ(l.v[0].detail, "6.18 runs");
        CHECK_STREQ(ks_check_status_to_string(l.v[0].status), "pass");
        ks_checklist_done(&l);
        CHECK(l.v == NULL && l.n == 0);
    }
    TEST_DONE();
}
