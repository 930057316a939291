/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The swap history: the file's parser (table of good and malformed inputs), its round trip, the
 * outcome of a journal, recording through ks_history_note(), and who asked (requester). */
#include <stdlib.h>

#include "lib/basic/fileio.h"
#include "lib/basic/time-util.h"
#include "lib/basic/util.h"
#include "lib/engine/history.h"
#include "lib/host/requester.h"
#include "state-walk.h"
#include "test.h"

#define REC(id, extra)                                                                             \
    "{\"id\": " #id ", \"started\": \"2026-11-30T07:50:00Z\", \"ended\": "                         \
    "\"2026-11-30T08:10:00Z\", \"from\": {\"release\": \"6.8.0-49-generic\", \"id_path\": "        \
    "\"a>b\"}, \"to\": {\"release\": \"6.12.9-x64v3-xanmod1\", \"id_path\": null}, "               \
    "\"outcome\": \"pinned\", \"by\": \"alice\", \"version\": \"0.1\"" extra "}"

static void test_parse_table(void)
{
    static const struct {
        const char *name;
        const char *text;
        int ret;           /* 0, -EBADMSG, -EPROTONOSUPPORT */
        const char *error; /* a part of the message; NULL when it parses */
        size_t n;          /* records when it parses */
        const char *outcome0, *by0, *to_path0, *reason0;
    } cases[] = {
        {"empty history", "{\"version\": 1, \"swaps\": []}", 0, NULL, 0, NULL, NULL, NULL, NULL},
        {"one record", "{\"version\": 1, \"swaps\": [" REC(1, "") "]}", 0, NULL, 1, "pinned",
         "alice", NULL, NULL},
        {"a reason and an unknown key (later kswap) are kept and ignored",
         "{\"version\": 1, \"x\": 2, \"swaps\": [" REC(1, ", \"reason\": \"r\", \"y\": [1]") "]}",
         0, NULL, 1, "pinned", "alice", NULL, "r"},
        {"two records, ids growing",
         "{\"version\": 1, \"swaps\": [" REC(1, "") ", " REC(7, "") "]}\n\n", 0, NULL, 2, "pinned",
         "alice", NULL, NULL},
        {"not JSON", "swaps: 1", -EBADMSG, "not valid JSON", 0},
        {"cut off", "{\"version\": 1, \"swaps\": [", -EBADMSG, "unexpected end", 0},
        {"empty file", "", -EBADMSG, "unexpected end", 0},
        /* json-c's tokener waits for more after a bare literal: cut off, too */
        {"the document null", "null", -EBADMSG, "not valid JSON", 0},
        {"the document null, a newline", "null\n", -EBADMSG, "not a JSON object", 0},
        {"an array", "[]", -EBADMSG, "not a JSON object", 0},
        {"trailing data", "{\"version\": 1, \"swaps\": []} {}", -EBADMSG, "trailing data", 0},
        {"version missing", "{\"swaps\": []}", -EBADMSG, "'version' is missing", 0},
        {"version a string", "{\"version\": \"1\", \"swaps\": []}", -EBADMSG,
         "'version' is not an integer", 0},
        {"a later version", "{\"version\": 2, \"swaps\": []}", -EPROTONOSUPPORT, "version 2", 0},
        {"swaps missing", "{\"version\": 1}", -EBADMSG, "'swaps' is missing", 0},
        {"swaps an object", "{\"version\": 1, \"swaps\": {}}", -EBADMSG, "not an array", 0},
        {"a record not an object", "{\"version\": 1, \"swaps\": [3]}", -EBADMSG,
         "swaps[0] is not an object", 0},
        {"id missing", "{\"version\": 1, \"swaps\": [{\"started\": \"2026-11-30T07:50:00Z\"}]}",
         -EBADMSG, "swaps[0]: 'id' is missing", 0},
        {"id a string", "{\"version\": 1, \"swaps\": [{\"id\": \"one\"}]}", -EBADMSG,
         "'id' is not an integer", 0},
        {"id zero", "{\"version\": 1, \"swaps\": [" REC(0, "") "]}", -EBADMSG, "out of range", 0},
        {"id negative", "{\"version\": 1, \"swaps\": [" REC(-4, "") "]}", -EBADMSG, "out of range",
         0},
        {"id repeated", "{\"version\": 1, \"swaps\": [" REC(2, "") ", " REC(2, "") "]}", -EBADMSG,
         "swaps[1]: 'id' 2 does not follow 2", 0},
        {"ids out of order", "{\"version\": 1, \"swaps\": [" REC(3, "") ", " REC(2, "") "]}",
         -EBADMSG, "does not follow", 0},
        {"started missing", "{\"version\": 1, \"swaps\": [{\"id\": 1}]}", -EBADMSG,
         "'started' is missing", 0},
        {"started not a UTC time",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"yesterday\"}]}", -EBADMSG,
         "'started' is not a UTC time", 0},
        {"ended a number",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"2026-11-30T07:50:00Z\", "
         "\"ended\": 5}]}",
         -EBADMSG, "'ended' is not a string", 0},
        {"from missing",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"2026-11-30T07:50:00Z\", "
         "\"ended\": \"2026-11-30T07:50:00Z\"}]}",
         -EBADMSG, "'from' is missing", 0},
        {"from a string",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"2026-11-30T07:50:00Z\", "
         "\"ended\": \"2026-11-30T07:50:00Z\", \"from\": \"6.8\"}]}",
         -EBADMSG, "'from' is not an object", 0},
        {"to.release a number",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"2026-11-30T07:50:00Z\", "
         "\"ended\": \"2026-11-30T07:50:00Z\", \"from\": {}, \"to\": {\"release\": 6}}]}",
         -EBADMSG, "swaps[0]: to: 'release' is not a string", 0},
        {"outcome missing",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"2026-11-30T07:50:00Z\", "
         "\"ended\": \"2026-11-30T07:50:00Z\", \"from\": {}, \"to\": {}}]}",
         -EBADMSG, "'outcome' is missing", 0},
        {"outcome unknown",
         "{\"version\": 1, \"swaps\": [{\"id\": 1, \"started\": \"2026-11-30T07:50:00Z\", "
         "\"ended\": \"2026-11-30T07:50:00Z\", \"from\": {}, \"to\": {}, \"outcome\": "
         "\"armed\"}]}",
         -EBADMSG, "'outcome': unknown value 'armed'", 0},
        {"by an object", "{\"version\": 1, \"swaps\": [" REC(1, ", \"reason\": {}") "]}", -EBADMSG,
         "'reason' is not a string", 0},
        {"a swap id",
         "{\"version\": 1, \"swaps\": [" REC(
             1, ", \"swap_id\": \"0123456789abcdef0123456789abcdef\"") "]}",
         0, NULL, 1, "pinned", "alice", NULL, NULL},
        {"a swap id null (written before swaps had one)",
         "{\"version\": 1, \"swaps\": [" REC(1, ", \"swap_id\": null") "]}", 0, NULL, 1, "pinned",
         "alice", NULL, NULL},
        {"a swap id too short",
         "{\"version\": 1, \"swaps\": [" REC(1, ", \"swap_id\": \"0123456789abcdef\"") "]}",
         -EBADMSG, "swaps[0]: 'swap_id' is not 32 lower-case hexadecimal digits", 0},
        {"a swap id a number", "{\"version\": 1, \"swaps\": [" REC(1, ", \"swap_id\": 5") "]}",
         -EBADMSG, "'swap_id' is not a string", 0},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_history h = {0};
        _cleanup_free_ char *err = NULL;
        int r = ks_history_parse(cases[i].text, strlen(cases[i].text), &h, &err);

        CHECK_MSG(r == cases[i].ret, "%s: %d", cases[i].name, r);
        if (cases[i].error)
            CHECK_MSG(err && strstr(err, cases[i].error), "%s: '%s'", cases[i].name, strempty(err));
        else
            CHECK_MSG(!err, "%s: '%s'", cases[i].name, strempty(err));
        if (r == 0) {
            CHECK_MSG(h.n == cases[i].n, "%s: %zu records", cases[i].name, h.n);
            if (h.n > 0) {
                CHECK_STREQ(h.v[0].outcome, cases[i].outcome0);
                CHECK_STREQ(h.v[0].by, cases[i].by0);
                CHECK_STREQ(h.v[0].to.id_path, cases[i].to_path0);
                CHECK_STREQ(h.v[0].reason, cases[i].reason0);
                CHECK_STREQ(h.v[0].from.id_path, "a>b");
            }
        } else
            CHECK_MSG(h.n == 0 && !h.v, "%s: ret untouched", cases[i].name);
        ks_history_done(&h);
    }
}

static void test_nul_and_size(void)
{
    static const char text[] = "{\"version\": 1, \"swaps\": []}\0 ";
    _cleanup_free_ char *err = NULL, *big = NULL;
    ks_history h = {0};

    CHECK(ks_history_parse(text, sizeof(text) - 1, &h, &err) == -EBADMSG);
    CHECK(err && strstr(err, "NUL"));
    free(err);
    err = NULL;
    big = calloc(KS_HISTORY_MAX_SIZE + 2, 1);
    CHECK(big != NULL);
    if (big) {
        memset(big, ' ', KS_HISTORY_MAX_SIZE + 1);
        CHECK(ks_history_parse(big, KS_HISTORY_MAX_SIZE + 1, &h, &err) == -EBADMSG);
        CHECK(err && strstr(err, "larger than"));
    }
}

static void test_round_trip(void)
{
    static const char text[] =
        "{\"version\": 1, \"swaps\": [" REC(1, ", \"reason\": \"x\"") ", " REC(2, "") "]}";
    _cleanup_free_ char *a = NULL, *b = NULL;
    _cleanup_history_ ks_history h = {0}, again = {0};

    CHECK(ks_history_parse(text, strlen(text), &h, NULL) == 0);
    CHECK(ks_history_format(&h, &a) == 0);
    CHECK(a && ks_history_parse(a, strlen(a), &again, NULL) == 0);
    CHECK(ks_history_format(&again, &b) == 0);
    CHECK_STREQ(a, b);
    CHECK(again.n == 2 && again.v[1].id == 2 && again.v[0].reason && !again.v[1].reason);
}

static void test_outcome_of(void)
{
    static const struct {
        ks_state state;
        ks_outcome outcome;
        const char *want;
    } cases[] = {
        {KS_STATE_IDLE, KS_OUTCOME_NONE, NULL},
        {KS_STATE_PREPARED, KS_OUTCOME_NONE, NULL},
        {KS_STATE_ARMED, KS_OUTCOME_NONE, NULL},
        {KS_STATE_ARMED, KS_OUTCOME_NO_REBOOT, NULL},
        {KS_STATE_TRIAL_BOOTED, KS_OUTCOME_TRIAL_OK, NULL}, /* waiting for the pin */
        {KS_STATE_PINNED, KS_OUTCOME_TRIAL_OK, "pinned"},
        {KS_STATE_PINNED, KS_OUTCOME_NONE, "pinned"}, /* pin --force */
        {KS_STATE_ROLLED_BACK, KS_OUTCOME_NONE, "rolled-back"},
        {KS_STATE_ROLLED_BACK, KS_OUTCOME_HEALTH_FAILED, "health-failed"},
        {KS_STATE_FAILED, KS_OUTCOME_NONE, "failed"},
        {KS_STATE_FAILED, KS_OUTCOME_HEALTH_FAILED, "health-failed"},
        {KS_STATE_ARMED, KS_OUTCOME_FELL_BACK, "fell-back"},
        {KS_STATE_ARMED, KS_OUTCOME_TRIAL_HUNG, "trial-hung"},
        {KS_STATE_ROLLED_BACK, KS_OUTCOME_TRIAL_HUNG, "trial-hung"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_journal_ ks_journal *j = NULL;
        CHECK(ks_journal_new(NULL, &j) == 0);
        CHECK(walk_to(j, cases[i].state));
        CHECK(ks_journal_set_outcome(j, cases[i].outcome) == 0);
        CHECK_STREQ(ks_history_outcome_of(j), cases[i].want);
    }
}

static void test_note(void)
{
    char tmpl[] = "/tmp/kswap-history-XXXXXX";
    char *dir = mkdtemp(tmpl);
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    _cleanup_free_ char *w = NULL, *cmd = NULL, *aside = NULL;
    _cleanup_history_ ks_history h = {0};

    CHECK(dir && ks_root_open(dir, &root) == 0);
    if (!root)
        return;
    setenv("SUDO_USER", "alice", 1);
    CHECK(ks_journal_new(root, &j) == 0);
    CHECK(ks_journal_set(j, KS_JF_OLD_KERNEL, "6.8.0-49-generic") == 0);
    CHECK(ks_journal_save(j) == 0);
    CHECK(ks_history_note(root, j, &w) == 0); /* idle: nothing ended */
    CHECK(!ks_root_exists(root, KS_HISTORY_PATH));
    CHECK(ks_journal_set_state(j, KS_STATE_FAILED) == 0);
    CHECK(ks_journal_set(j, KS_JF_REASON, "apt-get failed") == 0);
    CHECK(ks_history_note(root, j, &w) == 1);
    CHECK(ks_history_note(root, j, &w) == 0); /* the same end once */
    CHECK(ks_journal_set_state(j, KS_STATE_ROLLED_BACK) == 0);
    CHECK(ks_history_note(root, j, &w) == 1); /* ended otherwise: replaced, not added */
    CHECK(!w);
    CHECK(ks_history_load(root, &h, NULL) == 0);
    CHECK(h.n == 1 && h.v[0].id == 1 && streq(h.v[0].outcome, "rolled-back") &&
          streq_ptr(h.v[0].by, "alice") && streq_ptr(h.v[0].reason, "apt-get failed"));
    ks_history_done(&h);

    /* A damaged file: moved aside byte for byte, a new history, a warning. */
    CHECK(ks_write_atomic(root, KS_HISTORY_PATH, "{\"version\"", 11, 0644) == 0);
    CHECK(ks_history_note(root, j, &w) == 1);
    CHECK(w && strstr(w, "damaged") && strstr(w, KS_HISTORY_DAMAGED_PATH));
    CHECK(ks_root_read_file(root, KS_HISTORY_DAMAGED_PATH, 100, &aside, NULL) == 0);
    CHECK_STREQ(aside, "{\"version\"");
    CHECK(ks_history_load(root, &h, NULL) == 0 && h.n == 1 && h.v[0].id == 1);
    ks_history_done(&h);

    /* Bounded: the oldest go first. */
    for (unsigned i = 0; i < KS_HISTORY_MAX_RECORDS + 3; i++) {
        char when[32];
        _cleanup_journal_ ks_journal *o = NULL;
        _cleanup_free_ char *text = NULL;
        snprintf(when, sizeof(when), "2026-11-30T07:%02u:%02uZ", (i / 60) % 60, i % 60);
        text = ks_asprintf("{\"version\": 1, \"state\": \"pinned\", \"created\": \"%s\"}", when);
        CHECK(text && ks_journal_parse(text, strlen(text), &o, NULL) == 0);
        if (o && ks_history_note(root, o, NULL) != 1)
            CHECK_MSG(false, "note %u", i);
    }
    CHECK(ks_history_load(root, &h, NULL) == 0);
    CHECK_INTEQ(h.n, KS_HISTORY_MAX_RECORDS);
    CHECK(h.n > 0 && h.v[h.n - 1].id == KS_HISTORY_MAX_RECORDS + 4 && h.v[0].id == 5);
    unsetenv("SUDO_USER");
    cmd = ks_asprintf("rm -rf '%s'", dir);
    if (cmd && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/*
 * Two swaps that start within one second share the journal's "created" stamp (1 s): each is
 * its own record, told apart by the swap's id (on a fast machine two applies and rollbacks
 * took less than a second, and the second replaced the first). Records and journals written
 * before the id are still one swap by "started".
 */
static time_t frozen_clock(void)
{
    return 1795996800; /* 2026-11-30T00:00:00Z */
}

static void test_same_second(void)
{
    char tmpl[] = "/tmp/kswap-history-XXXXXX";
    char *dir = mkdtemp(tmpl);
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_journal_ ks_journal *j = NULL, *legacy = NULL;
    _cleanup_free_ char *cmd = NULL, *first_id = NULL;
    _cleanup_history_ ks_history h = {0};
    static const char old_journal[] =
        "{\"version\": 1, \"state\": \"rolled-back\", \"created\": \"2026-11-30T00:00:00Z\"}";

    CHECK(dir && ks_root_open(dir, &root) == 0);
    if (!root)
        return;
    setenv("SUDO_USER", "alice", 1);
    CHECK(ks_journal_new(root, &j) == 0);
    ks_journal_set_clock(j, frozen_clock);
    for (int i = 0; i < 2; i++) {
        /* apply (a new journal), then rollback: the swap ended */
        ks_journal_reset(j);
        CHECK(ks_journal_set(j, KS_JF_OLD_KERNEL, "6.8.0-49-generic") == 0);
        CHECK(ks_journal_save(j) == 0);
        CHECK(ks_journal_set_state(j, KS_STATE_ROLLED_BACK) == 0);
        CHECK(ks_journal_save(j) == 0);
        CHECK_MSG(ks_history_note(root, j, NULL) == 1, "swap %d is written", i + 1);
        CHECK(ks_history_note(root, j, NULL) == 0); /* and once */
        if (i == 0)
            first_id = strdup(strempty(ks_journal_swap_id(j)));
    }
    CHECK(ks_history_load(root, &h, NULL) == 0);
    CHECK_MSG(h.n == 2, "two swaps in the same second are two records, got %zu", h.n);
    if (h.n == 2) {
        CHECK(h.v[0].id == 1 && h.v[1].id == 2);
        CHECK(streq(h.v[0].started, h.v[1].started));
        CHECK_STREQ(h.v[0].swap_id, first_id);
        CHECK_STREQ(h.v[1].swap_id, ks_journal_swap_id(j));
        CHECK(!streq_ptr(h.v[0].swap_id, h.v[1].swap_id));
    }
    ks_history_done(&h);

    /* A journal from before the id (no swap_id): a new swap beside records with ids... */
    CHECK(ks_journal_parse(old_journal, strlen(old_journal), &legacy, NULL) == 0);
    CHECK(legacy && ks_history_note(root, legacy, NULL) == 1);
    /* ... and the same swap as a record without an id that started when it did. */
    CHECK(legacy && ks_history_note(root, legacy, NULL) == 0);
    CHECK(legacy && ks_journal_set_outcome(legacy, KS_OUTCOME_HEALTH_FAILED) == 0);
    CHECK(legacy && ks_history_note(root, legacy, NULL) == 1); /* ended otherwise: replaced */
    CHECK(ks_history_load(root, &h, NULL) == 0);
    CHECK(h.n == 3 && h.v[2].id == 3 && !h.v[2].swap_id && streq(h.v[2].outcome, "health-failed"));
    /* A journal with an id after a record without one: another swap, whatever the time. */
    CHECK(ks_history_note(root, j, NULL) == 1);
    ks_history_done(&h);
    CHECK(ks_history_load(root, &h, NULL) == 0);
    CHECK(h.n == 4 && streq_ptr(h.v[3].swap_id, ks_journal_swap_id(j)));

    unsetenv("SUDO_USER");
    cmd = ks_asprintf("rm -rf '%s'", dir);
    if (cmd && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

static void test_requester_parsers(void)
{
    static const struct {
        const char *passwd;
        unsigned long uid;
        const char *want;
    } pw[] = {
        {"root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n", 1000,
         "alice"},
        {"root:x:0:0:root:/root:/bin/bash\n", 0, "root"},
        {"root:x:0:0:root:/root:/bin/bash\n", 1000, NULL},
        {"broken\n:x:5:5\nbob:x:5x:1\nbob:x:5:1\n", 5, "bob"},
        {"", 0, NULL},
    };
    static const struct {
        const char *cgroup;
        const char *want;
    } cg[] = {
        {"0::/system.slice/kswap-accept.service\n", "kswap-accept.service"},
        {"0::/system.slice/run-u42.service\n", "run-u42.service"},
        {"0::/user.slice/user-1000.slice/session-3.scope\n", NULL},
        {"12:cpu:/x.service\n1:name=systemd:/system.slice/kswap-accept.service\n",
         "kswap-accept.service"},
        {"0::/system.slice/a.service/sub.service\n", "sub.service"},
        {"0::/.service\n", NULL},
        {"garbage", NULL},
    };

    for (size_t i = 0; i < ARRAY_SIZE(pw); i++) {
        _cleanup_free_ char *n = ks_passwd_name(pw[i].passwd, strlen(pw[i].passwd), pw[i].uid);
        CHECK_STREQ(n, pw[i].want);
    }
    for (size_t i = 0; i < ARRAY_SIZE(cg); i++) {
        _cleanup_free_ char *n = ks_cgroup_unit(cg[i].cgroup, strlen(cg[i].cgroup));
        CHECK_STREQ(n, cg[i].want);
    }
}

int main(void)
{
    test_parse_table();
    test_nul_and_size();
    test_round_trip();
    test_outcome_of();
    test_note();
    test_same_second();
    test_requester_parsers();
    TEST_DONE();
}
