/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The state machine's tables (lib/engine/states.h) and the next step of every state
 * (lib/engine/next-step.h). */
#include <sys/wait.h>

#include "lib/engine/command-log.h"
#include "lib/engine/journal.h"
#include "lib/engine/next-step.h"
#include "lib/engine/states.h"
#include "state-walk.h"
#include "test.h"

static void test_names(void)
{
    for (int s = 0; s < _KS_STATE_MAX; s++) {
        const char *n = ks_state_to_string(s);
        CHECK_MSG(n && ks_state_from_string(n) == s, "state %d", s);
    }
    for (int o = 1; o < _KS_OUTCOME_MAX; o++) {
        const char *n = ks_outcome_to_string(o);
        CHECK_MSG(n && ks_outcome_from_string(n) == o, "outcome %d", o);
    }
    CHECK(ks_outcome_to_string(KS_OUTCOME_NONE) == NULL);
    CHECK(ks_state_from_string("armed ") == _KS_STATE_INVALID);
    CHECK(ks_state_from_string(NULL) == _KS_STATE_INVALID);
    CHECK(ks_outcome_from_string("trial-OK") == _KS_OUTCOME_INVALID);
    CHECK(!ks_state_info_get(_KS_STATE_MAX) && !ks_state_info_get(_KS_STATE_INVALID));
}

/* Every property the tables name, for every row: one case per state and per outcome. */
static void test_tables(void)
{
    static const struct {
        ks_state s;
        bool in_flight, resumable, trial, terminal;
    } states[] = {
        {KS_STATE_IDLE, false, false, false, false},
        {KS_STATE_PREPARED, true, true, false, false},
        {KS_STATE_INSTALLED, true, true, false, false},
        {KS_STATE_VERIFIED, true, true, false, false},
        {KS_STATE_ARMED, true, false, true, false},
        {KS_STATE_TRIAL_BOOTED, true, false, true, false},
        {KS_STATE_PINNED, false, false, false, true},
        {KS_STATE_FAILED, false, false, false, true},
        {KS_STATE_ROLLED_BACK, false, false, false, true},
    };
    static const struct {
        ks_outcome o;
        bool failed, final;
        ks_code exit_code;
    } outcomes[] = {
        {KS_OUTCOME_NONE, false, false, KS_CODE_NOTHING},
        {KS_OUTCOME_TRIAL_OK, false, true, KS_CODE_OK},
        {KS_OUTCOME_HEALTH_FAILED, true, true, KS_CODE_FAILED},
        {KS_OUTCOME_FELL_BACK, true, true, KS_CODE_FAILED},
        {KS_OUTCOME_NO_REBOOT, false, false, KS_CODE_NOTHING},
        {KS_OUTCOME_TRIAL_HUNG, true, true, KS_CODE_FAILED},
    };
    CHECK_INTEQ(ARRAY_SIZE(states), _KS_STATE_MAX);
    CHECK_INTEQ(ARRAY_SIZE(outcomes), _KS_OUTCOME_MAX);
    for (size_t i = 0; i < ARRAY_SIZE(states); i++) {
        const ks_state_info *x = ks_state_info_get(states[i].s);
        CHECK_MSG(x && x->in_flight == states[i].in_flight && x->resumable == states[i].resumable &&
                      x->trial == states[i].trial && x->terminal == states[i].terminal,
                  "state %s", ks_state_to_string(states[i].s));
    }
    for (size_t i = 0; i < ARRAY_SIZE(outcomes); i++) {
        const ks_outcome_info *x = ks_outcome_info_get(outcomes[i].o);
        CHECK_MSG(x && x->failed == outcomes[i].failed && x->final == outcomes[i].final &&
                      x->exit_code == outcomes[i].exit_code,
                  "outcome %d", outcomes[i].o);
    }
}

/* The transitions: well formed, every state reached from idle, every state has a way out to a
 * swap that ended (and from there to a new one). */
static void test_graph(void)
{
    size_t n;
    const ks_transition *t = ks_transitions(&n);

    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(t[i].from != t[i].to && ks_state_info_get(t[i].from) &&
                      ks_state_info_get(t[i].to) && t[i].by && *t[i].by,
                  "transition %zu", i);
        for (size_t k = 0; k < i; k++)
            CHECK_MSG(t[k].from != t[i].from || t[k].to != t[i].to, "transition %zu twice", i);
    }
    for (int s = 0; s < _KS_STATE_MAX; s++) {
        _cleanup_journal_ ks_journal *j = NULL;
        CHECK(ks_journal_new(NULL, &j) == 0);
        CHECK_MSG(walk_to(j, s), "%s is reached from idle", ks_state_to_string(s));
        CHECK_MSG(walk_to(j, KS_STATE_ROLLED_BACK) && walk_to(j, KS_STATE_IDLE), "%s has a way out",
                  ks_state_to_string(s));
    }
}

/* Transitions kswap never makes: the table refuses them, the setter fails loudly. */
static void test_illegal(void)
{
    static const struct {
        ks_state from, to;
    } bad[] = {
        {KS_STATE_IDLE, KS_STATE_ARMED},        {KS_STATE_IDLE, KS_STATE_INSTALLED},
        {KS_STATE_IDLE, KS_STATE_TRIAL_BOOTED}, {KS_STATE_PREPARED, KS_STATE_ARMED},
        {KS_STATE_PREPARED, KS_STATE_IDLE},     {KS_STATE_INSTALLED, KS_STATE_PREPARED},
        {KS_STATE_VERIFIED, KS_STATE_IDLE},     {KS_STATE_ARMED, KS_STATE_IDLE},
        {KS_STATE_ARMED, KS_STATE_VERIFIED},    {KS_STATE_TRIAL_BOOTED, KS_STATE_ARMED},
        {KS_STATE_PINNED, KS_STATE_ARMED},      {KS_STATE_PINNED, KS_STATE_TRIAL_BOOTED},
        {KS_STATE_FAILED, KS_STATE_INSTALLED},  {KS_STATE_FAILED, KS_STATE_ARMED},
        {KS_STATE_ROLLED_BACK, KS_STATE_ARMED}, {KS_STATE_ROLLED_BACK, KS_STATE_TRIAL_BOOTED},
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        CHECK_MSG(!ks_state_transition_ok(bad[i].from, bad[i].to, NULL), "%s -> %s is illegal",
                  ks_state_to_string(bad[i].from), ks_state_to_string(bad[i].to));
        /* In a child: the setter's assertion aborts it (or, without assertions, -EINVAL and the
         * journal keeps its state). */
        pid_t pid = fork();
        if (pid == 0) {
            ks_journal *j = NULL;
            int r;
            if (ks_journal_new(NULL, &j) < 0 || !walk_to(j, bad[i].from))
                _exit(2);
            (void)!freopen("/dev/null", "w", stderr);
            r = ks_journal_set_state(j, bad[i].to);
            _exit(r == -EINVAL && ks_journal_state(j) == bad[i].from ? 0 : 3);
        }
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK_MSG((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) ||
                      (WIFEXITED(status) && WEXITSTATUS(status) == 0),
                  "%s -> %s fails loudly", ks_state_to_string(bad[i].from),
                  ks_state_to_string(bad[i].to));
    }
    CHECK(ks_state_transition_ok(KS_STATE_ARMED, KS_STATE_ARMED, NULL));
    CHECK(!ks_state_transition_ok(_KS_STATE_MAX, KS_STATE_IDLE, NULL));
}

/* A journal in state s with the outcome o, the trial armed in boot "arming", kernels OLD and
 * NEW and the source of an apply --deb. */
static ks_journal *journal_at(ks_state s, ks_outcome o)
{
    ks_journal *j = NULL;

    CHECK(ks_journal_new(NULL, &j) == 0);
    CHECK(ks_journal_set(j, KS_JF_OLD_KERNEL, "OLD") == 0);
    CHECK(ks_journal_set(j, KS_JF_NEW_KERNEL, "NEW") == 0);
    CHECK(ks_journal_set(j, KS_JF_SOURCE, "deb:/root/a b.deb") == 0);
    CHECK(ks_journal_set_armed(j, "arming", 1) == 0);
    CHECK(walk_to(j, s));
    CHECK(ks_journal_set_outcome(j, o) == 0);
    return j;
}

/* The next step of every state (and the examples): its command and status's code. */
static void test_next_steps(void)
{
    static const struct {
        const char *name;
        ks_state state;
        ks_outcome outcome;
        const char *running, *boot_id;
        bool ack;            /* status --ack closed the swap */
        const char *command; /* NULL: nothing to do */
        ks_code exit_code;
    } cases[] = {
        {"idle", KS_STATE_IDLE, KS_OUTCOME_NONE, "OLD", "b", false, "kswap plan", KS_CODE_OK},
        {"stopped: resumes with the same --deb, --yes", KS_STATE_INSTALLED, KS_OUTCOME_NONE, "OLD",
         "b", false, "kswap apply --deb '/root/a b.deb' --yes", KS_CODE_NOTHING},
        {"stopped on another kernel", KS_STATE_VERIFIED, KS_OUTCOME_NONE, "X", "b", false,
         "kswap rollback", KS_CODE_FAILED},
        {"armed in this boot: --yes, no tty assumed", KS_STATE_ARMED, KS_OUTCOME_NONE, "OLD",
         "arming", false, "kswap apply --deb '/root/a b.deb' --yes --reboot", KS_CODE_NOTHING},
        {"trial boot, no verdict", KS_STATE_ARMED, KS_OUTCOME_NONE, "NEW", "b", false,
         "kswap status --wait", KS_CODE_NOTHING},
        {"back on OLD without a verdict", KS_STATE_ARMED, KS_OUTCOME_NONE, "OLD", "b", false,
         "kswap accept", KS_CODE_NOTHING},
        {"no-reboot", KS_STATE_ARMED, KS_OUTCOME_NO_REBOOT, "OLD", "arming", false,
         "kswap apply --deb '/root/a b.deb' --yes --reboot", KS_CODE_NOTHING},
        {"trial-ok not pinned", KS_STATE_TRIAL_BOOTED, KS_OUTCOME_TRIAL_OK, "NEW", "b", false,
         "kswap pin", KS_CODE_OK},
        {"trial-ok, restarted before the pin", KS_STATE_TRIAL_BOOTED, KS_OUTCOME_TRIAL_OK, "OLD",
         "b", false, "kswap apply --deb '/root/a b.deb' --yes", KS_CODE_FAILED},
        {"pinned", KS_STATE_PINNED, KS_OUTCOME_TRIAL_OK, "NEW", "b", false, NULL, KS_CODE_OK},
        {"pinned, another runs", KS_STATE_PINNED, KS_OUTCOME_TRIAL_OK, "OLD", "b", false,
         "systemctl reboot", KS_CODE_OK},
        {"failed", KS_STATE_FAILED, KS_OUTCOME_NONE, "OLD", "b", false, "kswap rollback",
         KS_CODE_FAILED},
        {"failed, acknowledged", KS_STATE_FAILED, KS_OUTCOME_NONE, "OLD", "b", true,
         "kswap rollback", KS_CODE_OK},
        {"health-failed: --ack closes it", KS_STATE_ROLLED_BACK, KS_OUTCOME_HEALTH_FAILED, "OLD",
         "b", false, "kswap status --ack", KS_CODE_FAILED},
        {"fell-back", KS_STATE_ROLLED_BACK, KS_OUTCOME_FELL_BACK, "OLD", "b", false,
         "kswap status --ack", KS_CODE_FAILED},
        {"trial-hung fails as fell-back does", KS_STATE_ROLLED_BACK, KS_OUTCOME_TRIAL_HUNG, "OLD",
         "b", false, "kswap status --ack", KS_CODE_FAILED},
        {"health-failed, acknowledged: closed", KS_STATE_ROLLED_BACK, KS_OUTCOME_HEALTH_FAILED,
         "OLD", "b", true, NULL, KS_CODE_OK},
        {"health-failed, stayed on NEW", KS_STATE_ROLLED_BACK, KS_OUTCOME_HEALTH_FAILED, "NEW", "b",
         false, "kswap rollback --reboot", KS_CODE_FAILED},
        {"trial-hung, stayed, acknowledged", KS_STATE_ROLLED_BACK, KS_OUTCOME_TRIAL_HUNG, "NEW",
         "b", true, "kswap rollback --reboot", KS_CODE_OK},
        {"rolled back by the operator", KS_STATE_ROLLED_BACK, KS_OUTCOME_NONE, "OLD", "b", false,
         NULL, KS_CODE_OK},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_journal_ ks_journal *j = journal_at(cases[i].state, cases[i].outcome);
        ks_next n = {0};

        if (cases[i].ack) {
            CHECK(ks_journal_step_begin(j, "acknowledge") == -EBADF || true);
            (void)ks_journal_step_end(j, "acknowledge", KS_STEP_DONE, NULL);
        }
        CHECK(
            ks_next_step(
                &(ks_next_input){.j = j, .running = cases[i].running, .boot_id = cases[i].boot_id},
                &n) == 0);
        CHECK_MSG(streq_ptr(n.command, cases[i].command), "%s: next '%s'", cases[i].name,
                  strempty(n.command));
        CHECK_MSG(n.exit_code == cases[i].exit_code, "%s: exit %d", cases[i].name, n.exit_code);
        CHECK_MSG(n.why && *n.why && !strchr(n.why, '{'), "%s: why '%s'", cases[i].name,
                  strempty(n.why));
        ks_next_done(&n);
    }
}

/* Every state and outcome has a next step, with a reason and a code of the contract. */
static void test_next_every_state(void)
{
    static const char *const running[] = {"OLD", "NEW", "X", NULL};
    for (int s = 0; s < _KS_STATE_MAX; s++)
        for (int o = 0; o < _KS_OUTCOME_MAX; o++)
            for (size_t k = 0; k < ARRAY_SIZE(running); k++) {
                _cleanup_journal_ ks_journal *j = journal_at(s, o);
                ks_next n = {0};
                CHECK(ks_next_step(&(ks_next_input){.j = j, .running = running[k]}, &n) == 0);
                CHECK_MSG(n.why && (!n.command || ks_startswith(n.command, "kswap ") ||
                                    streq(n.command, "systemctl reboot")),
                          "%s/%d: '%s'", ks_state_to_string(s), o, strempty(n.command));
                CHECK(n.exit_code >= KS_CODE_OK && n.exit_code <= KS_CODE_NOTHING);
                ks_next_done(&n);
            }
    /* A journal that cannot be read, and a trial it does not know. */
    {
        ks_orphan_trial o = {.armed = true, .old = (char *)"OLD", .new = (char *)"NEW"};
        _cleanup_journal_ ks_journal *j = NULL;
        ks_next n = {0};
        CHECK(ks_next_step(&(ks_next_input){.journal_error = "not JSON", .running = "OLD"}, &n) ==
              0);
        CHECK(streq_ptr(n.command, "kswap rollback") && n.exit_code == KS_CODE_ERROR &&
              strstr(n.why, "not JSON"));
        ks_next_done(&n);
        CHECK(ks_journal_new(NULL, &j) == 0);
        CHECK(ks_next_step(&(ks_next_input){.j = j, .running = "OLD", .orphan = &o}, &n) == 0);
        CHECK(streq_ptr(n.command, "kswap rollback") && n.exit_code == KS_CODE_FAILED);
        ks_next_done(&n);
    }
}

/* The command log's parser, table-driven (test/fuzz/fuzz-command-log.c fuzzes it). */
static void test_command_log(void)
{
    static const struct {
        const char *name, *text;
        int r;
        size_t n;
    } cases[] = {
        {"empty", "{\"version\": 1, \"commands\": []}", 0, 0},
        {"one",
         "{\"version\": 1, \"commands\": [{\"id\": 3, \"time\": \"2026-11-30T07:50:00Z\", "
         "\"command\": \"pin\", \"result\": \"done\", \"swap_id\": null}]}",
         0, 1},
        {"version 2", "{\"version\": 2, \"commands\": []}", -EPROTONOSUPPORT, 0},
        {"no commands", "{\"version\": 1}", -EBADMSG, 0},
        {"not json", "version 1", -EBADMSG, 0},
        {"bad time",
         "{\"version\": 1, \"commands\": [{\"id\": 1, \"time\": \"yesterday\", \"command\": "
         "\"pin\", \"result\": \"done\"}]}",
         -EBADMSG, 0},
        {"id 0",
         "{\"version\": 1, \"commands\": [{\"id\": 0, \"time\": \"2026-11-30T07:50:00Z\", "
         "\"command\": \"pin\", \"result\": \"done\"}]}",
         -EBADMSG, 0},
        {"ids out of order",
         "{\"version\": 1, \"commands\": [{\"id\": 2, \"time\": \"2026-11-30T07:50:00Z\", "
         "\"command\": \"a\", \"result\": \"done\"}, {\"id\": 2, \"time\": "
         "\"2026-11-30T07:50:00Z\", \"command\": \"b\", \"result\": \"done\"}]}",
         -EBADMSG, 0},
        {"no result",
         "{\"version\": 1, \"commands\": [{\"id\": 1, \"time\": \"2026-11-30T07:50:00Z\", "
         "\"command\": \"a\"}]}",
         -EBADMSG, 0},
        {"command not a string",
         "{\"version\": 1, \"commands\": [{\"id\": 1, \"time\": \"2026-11-30T07:50:00Z\", "
         "\"command\": 7, \"result\": \"done\"}]}",
         -EBADMSG, 0},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_command_log l = {0};
        _cleanup_free_ char *err = NULL;
        int r = ks_command_log_parse(cases[i].text, strlen(cases[i].text), &l, &err);
        CHECK_MSG(r == cases[i].r && (r < 0 ? err != NULL : l.n == cases[i].n), "%s: %d %s",
                  cases[i].name, r, strempty(err));
        ks_command_log_done(&l);
    }
}

int main(void)
{
    test_names();
    test_tables();
    test_graph();
    test_illegal();
    test_next_steps();
    test_next_every_state();
    test_command_log();
    TEST_DONE();
}
