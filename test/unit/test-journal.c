/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The state journal: names, the file format, steps, changes, guard, the snapshot. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "checks/snapshot.h"
#include "lib/basic/fileio.h"
#include "lib/engine/journal.h"
#include "lib/basic/util.h"
#include "test.h"

#define FAKE_EPOCH 1795996800 /* 2026-11-30T00:00:00Z */
static time_t fake_now = FAKE_EPOCH;

static time_t fixed_clock(void)
{
    return fake_now;
}

/* The root dir opened and a new journal in it on the fixed clock; false when either failed. */
static bool new_journal_at(const char *dir, ks_root **r, ks_journal **j)
{
    fake_now = FAKE_EPOCH;
    CHECK(dir && ks_root_open(dir, r) == 0);
    if (!*r)
        return false;
    CHECK(ks_journal_new(*r, j) == 0);
    if (!*j)
        return false;
    ks_journal_set_clock(*j, fixed_clock);
    return true;
}

static char *make_root(void)
{
    char tmpl[] = "/tmp/kswap-journal-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static void rm_rf(const char *path)
{
    _cleanup_free_ char *cmd = ks_asprintf("rm -rf '%s'", path);
    if (cmd && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", path);
}

static void put(const ks_root *root, const char *path, const char *text)
{
    int r = ks_write_atomic(root, path, text, strlen(text), 0644);
    if (r < 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(-r));
        exit(1);
    }
}

static char *slurp(const ks_root *r, const char *path)
{
    char *text = NULL;
    if (ks_root_read_file(r, path, 1 << 24, &text, NULL) < 0)
        return NULL;
    return text;
}

/* Files in var/lib/kswap other than state.json (leftover temporary files). */
static int stray_files(const char *root)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/var/lib/kswap", root);
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    if (!d)
        return 0;
    while ((de = readdir(d)))
        if (!streq(de->d_name, ".") && !streq(de->d_name, "..") &&
            !streq(de->d_name, "state.json") && !streq(de->d_name, "lock"))
            n++;
    closedir(d);
    return n;
}

static void test_names(void)
{
    static const struct {
        ks_state s;
        const char *name;
    } states[] = {
        {KS_STATE_IDLE, "idle"},
        {KS_STATE_PREPARED, "prepared"},
        {KS_STATE_INSTALLED, "installed"},
        {KS_STATE_VERIFIED, "verified"},
        {KS_STATE_ARMED, "armed"},
        {KS_STATE_TRIAL_BOOTED, "trial-booted"},
        {KS_STATE_PINNED, "pinned"},
        {KS_STATE_FAILED, "failed"},
        {KS_STATE_ROLLED_BACK, "rolled-back"},
    };
    static const struct {
        ks_outcome o;
        const char *name;
    } outcomes[] = {
        {KS_OUTCOME_TRIAL_OK, "trial-ok"},     {KS_OUTCOME_HEALTH_FAILED, "health-failed"},
        {KS_OUTCOME_FELL_BACK, "fell-back"},   {KS_OUTCOME_NO_REBOOT, "no-reboot"},
        {KS_OUTCOME_TRIAL_HUNG, "trial-hung"},
    };

    CHECK_INTEQ(ARRAY_SIZE(states), _KS_STATE_MAX);
    for (size_t i = 0; i < ARRAY_SIZE(states); i++) {
        CHECK_STREQ(ks_state_to_string(states[i].s), states[i].name);
        CHECK_INTEQ(ks_state_from_string(states[i].name), states[i].s);
    }
    CHECK_INTEQ(ARRAY_SIZE(outcomes) + 1, _KS_OUTCOME_MAX);
    for (size_t i = 0; i < ARRAY_SIZE(outcomes); i++) {
        CHECK_STREQ(ks_outcome_to_string(outcomes[i].o), outcomes[i].name);
        CHECK_INTEQ(ks_outcome_from_string(outcomes[i].name), outcomes[i].o);
    }
    CHECK(ks_outcome_to_string(KS_OUTCOME_NONE) == NULL);
    CHECK_STREQ(ks_step_status_to_string(KS_STEP_SKIPPED), "skipped");
    CHECK_INTEQ(ks_step_status_from_string("done"), KS_STEP_DONE);
    CHECK_STREQ(ks_change_kind_to_string(KS_CHANGE_PACKAGE), "package");
    CHECK_STREQ(ks_journal_field_to_string(KS_JF_NEW_TITLE_PATH), "new_title_path");

    /* Exact names only: no prefixes, no case folding, no NULL. */
    static const char *const bad[] = {"", "Idle", "arm", "armed ", "trial_booted", "none", NULL};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        CHECK_INTEQ(ks_state_from_string(bad[i]), _KS_STATE_INVALID);
        CHECK_INTEQ(ks_outcome_from_string(bad[i]), _KS_OUTCOME_INVALID);
        CHECK_INTEQ(ks_step_status_from_string(bad[i]), _KS_STEP_STATUS_INVALID);
        CHECK_INTEQ(ks_change_kind_from_string(bad[i]), _KS_CHANGE_KIND_INVALID);
    }
    CHECK(ks_state_to_string(_KS_STATE_MAX) == NULL);
    CHECK(ks_state_to_string(_KS_STATE_INVALID) == NULL);
}

/* A valid journal that uses every field; parse cases below mutate it. */
static const char full_journal[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"state\": \"armed\",\n"
    "  \"outcome\": null,\n"
    "  \"old_kernel\": \"6.8.0-111-generic\",\n"
    "  \"new_kernel\": \"6.18.45-x64v3-xanmod1\",\n"
    "  \"old_path\": \"gnulinux-advanced-u>gnulinux-6.8.0-111-generic-advanced-u\",\n"
    "  \"new_path\": \"gnulinux-advanced-u>gnulinux-6.18.45-x64v3-xanmod1-advanced-u\",\n"
    "  \"old_title_path\": \"Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-111-generic\",\n"
    "  \"armed_boot_id\": \"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f\",\n"
    "  \"armed_btime\": 1795996800,\n"
    "  \"armed_at\": \"2026-11-30T00:00:00Z\",\n"
    "  \"reboot_guard\": null,\n"
    "  \"snapshot\": {\"taken_at\": \"2026-11-30T00:00:00Z\", \"kernel\": \"6.8.0-111-generic\",\n"
    "    \"boot_id\": \"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f\", \"btime\": 1795996800,\n"
    "    \"grubenv\": \"IyBHUlVCAA==\", \"dropin\": \"GRUB_DEFAULT=saved\\n\",\n"
    "    \"sysctls\": [{\"name\": \"net.core.default_qdisc\", \"value\": \"fq\"},\n"
    "                {\"name\": \"net.x\", \"value\": null}]},\n"
    "  \"steps\": [{\"name\": \"pin-old\", \"status\": \"done\", \"started\": \"a\",\n"
    "              \"finished\": \"b\", \"detail\": null, \"attempts\": 2},\n"
    "             {\"name\": \"install\", \"status\": \"started\", \"started\": \"c\"}],\n"
    "  \"changes\": [{\"kind\": \"file\", \"path\": \"etc/default/grub.d/90-kswap.cfg\",\n"
    "                \"existed\": false, \"previous\": null, \"mode\": null, \"at\": \"a\"},\n"
    "              {\"kind\": \"file\", \"path\": \"boot/grub/grubenv\", \"existed\": true,\n"
    "                \"previous\": \"AAEC/w==\", \"mode\": 420, \"at\": \"a\"},\n"
    "              {\"kind\": \"package\", \"name\": \"linux-image-x\", \"version\": \"1\"}],\n"
    "  \"swap_id\": \"0123456789abcdef0123456789abcdef\",\n"
    "  \"created\": \"2026-11-30T00:00:00Z\",\n"
    "  \"updated\": \"2026-11-30T00:00:00Z\",\n"
    "  \"some_future_field\": [1, 2, 3]\n"
    "}\n";

/* Replaces the first occurrence of from in full_journal by to. */
static char *mutate(const char *from, const char *to)
{
    const char *p = strstr(full_journal, from);
    if (!p) {
        fprintf(stderr, "mutation anchor not found: %s\n", from);
        exit(1);
    }
    return ks_asprintf("%.*s%s%s", (int)(p - full_journal), full_journal, to, p + strlen(from));
}

static void test_parse_table(void)
{
    static const struct {
        const char *from, *to; /* NULL from: the text is "to" itself */
        int ret;
        const char *message; /* a fragment of the error message */
    } cases[] = {
        {"\"state\": \"armed\"", "\"state\": \"armed\"", 0, NULL},
        {NULL, "{\"version\": 1, \"state\": \"idle\"}", 0, NULL},
        {NULL, "  {\"version\": 1, \"state\": \"pinned\"}  \n\n", 0, NULL},
        {NULL, "", -EBADMSG, "unexpected end"},
        {NULL, "\n", -EBADMSG, "unexpected end"},
        {NULL, "{", -EBADMSG, "unexpected end"},
        {NULL, "[]", -EBADMSG, "not a JSON object"},
        {NULL, "null\n", -EBADMSG, "not a JSON object"},
        {NULL, "{\"version\": 1, \"state\": \"idle\"} {}", -EBADMSG, "trailing data"},
        {NULL, "{\"version\": 1, \"state\": \"idle\"}x", -EBADMSG, "trailing data"},
        {NULL, "{\"state\": \"idle\"}", -EBADMSG, "'version' is missing"},
        {NULL, "{\"version\": \"1\", \"state\": \"idle\"}", -EBADMSG, "'version'"},
        {NULL, "{\"version\": 1.0, \"state\": \"idle\"}", -EBADMSG, "'version'"},
        {NULL, "{\"version\": 2, \"state\": \"idle\"}", -EPROTONOSUPPORT, "version 2"},
        {NULL, "{\"version\": 0, \"state\": \"idle\"}", -EPROTONOSUPPORT, "version 0"},
        {NULL, "{\"version\": 1}", -EBADMSG, "'state' is missing"},
        {"\"state\": \"armed\"", "\"state\": \"ARMED\"", -EBADMSG,
         "'state': unknown value 'ARMED'"},
        {"\"state\": \"armed\"", "\"state\": 4", -EBADMSG, "'state' is not a string"},
        {"\"outcome\": null", "\"outcome\": \"ok\"", -EBADMSG, "'outcome': unknown value"},
        {"\"outcome\": null", "\"outcome\": \"fell-back\"", 0, NULL},
        {"\"old_kernel\": \"6.8.0-111-generic\"", "\"old_kernel\": [\"x\"]", -EBADMSG,
         "'old_kernel' is not a string"},
        {"\"armed_btime\": 1795996800", "\"armed_btime\": -1", -EBADMSG, "out of range"},
        {"\"armed_btime\": 1795996800", "\"armed_btime\": \"1795996800\"", -EBADMSG,
         "'armed_btime' is not an integer"},
        {"\"armed_btime\": 1795996800", "\"armed_btime\": null", -EBADMSG, "together"},
        {"\"reboot_guard\": null", "\"reboot_guard\": {\"boot_id\": \"x\"}", -EBADMSG,
         "reboot_guard: 'trial_boot_id' is missing"},
        {"\"reboot_guard\": null", "\"reboot_guard\": true", -EBADMSG, "not an object"},
        {"\"grubenv\": \"IyBHUlVCAA==\"", "\"grubenv\": \"IyBHUlVCAA=\"", -EBADMSG,
         "'grubenv' is not base64"},
        {"\"grubenv\": \"IyBHUlVCAA==\"", "\"grubenv\": \"I=BHUlVCAA==\"", -EBADMSG, "base64"},
        {"\"grubenv\": \"IyBHUlVCAA==\"", "\"grubenv\": \"IyBH UlVCAA==\"", -EBADMSG, "base64"},
        {"\"sysctls\": [", "\"sysctls\": [7, ", -EBADMSG, "sysctls[0] is not an object"},
        {"{\"name\": \"net.x\", \"value\": null}", "{\"value\": null}", -EBADMSG,
         "'name' is missing"},
        {"\"steps\": [", "\"steps\": {}, \"x\": [", -EBADMSG, "'steps' is not an array"},
        {"\"status\": \"done\"", "\"status\": \"ok\"", -EBADMSG, "'status': unknown value 'ok'"},
        {"\"status\": \"done\"", "\"detail\": \"x\"", -EBADMSG, "steps[0]: 'status' is missing"},
        {"\"attempts\": 2", "\"attempts\": 4294967296", -EBADMSG, "'attempts' is out of range"},
        {"\"name\": \"install\"", "\"name\": \"pin-old\"", -EBADMSG, "appears twice"},
        {"\"kind\": \"package\"", "\"kind\": \"dir\"", -EBADMSG, "'kind': unknown value 'dir'"},
        {"\"existed\": false", "\"existed\": 0", -EBADMSG, "'existed' is missing or not a boolean"},
        {"\"existed\": false", "\"existed\": true", -EBADMSG, "exactly when"},
        {"\"mode\": 420", "\"mode\": 65536", -EBADMSG, "'mode' is out of range"},
        {"\"path\": \"boot/grub/grubenv\"", "\"path\": \"etc/default/grub.d/90-kswap.cfg\"",
         -EBADMSG, "appears twice"},
        {"\"name\": \"linux-image-x\"", "\"nam\": \"linux-image-x\"", -EBADMSG,
         "changes[2]: 'name' is missing"},
        /* The swap's id: absent or null in journals of an older kswap, else 32 hex digits. */
        {"\"swap_id\": \"0123456789abcdef0123456789abcdef\"", "\"swap_id\": null", 0, NULL},
        {"\"swap_id\": \"0123456789abcdef0123456789abcdef\"", "\"swap_i\": 1", 0, NULL},
        {"\"swap_id\": \"0123456789abcdef0123456789abcdef\"",
         "\"swap_id\": \"0123456789ABCDEF0123456789abcdef\"", -EBADMSG,
         "'swap_id' is not 32 lower-case hexadecimal digits"},
        {"\"swap_id\": \"0123456789abcdef0123456789abcdef\"",
         "\"swap_id\": \"0123456789abcdef0123456789abcde\"", -EBADMSG, "'swap_id'"},
        {"\"swap_id\": \"0123456789abcdef0123456789abcdef\"", "\"swap_id\": \"\"", -EBADMSG,
         "'swap_id'"},
        {"\"swap_id\": \"0123456789abcdef0123456789abcdef\"", "\"swap_id\": 7", -EBADMSG,
         "'swap_id' is not a string"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        ks_journal *j = (ks_journal *)0x1;
        int r;

        text = cases[i].from ? mutate(cases[i].from, cases[i].to) : strdup(cases[i].to);
        r = ks_journal_parse(text, strlen(text), &j, &err);
        CHECK_MSG(r == cases[i].ret, "case %zu: got %d (%s), expected %d", i, r, strempty(err),
                  cases[i].ret);
        if (r == 0) {
            CHECK(err == NULL);
            ks_journal_free(j);
        } else {
            CHECK(j == (ks_journal *)0x1); /* untouched on failure */
            CHECK_MSG(err && cases[i].message && strstr(err, cases[i].message),
                      "case %zu: message '%s' lacks '%s'", i, strempty(err), cases[i].message);
        }
    }
    /* A NUL inside must not make json-c stop early and succeed. */
    {
        static const char t[] = "{\"version\": 1, \"state\": \"idle\"}\0garbage";
        ks_journal *j = NULL;
        CHECK(ks_journal_parse(t, sizeof(t) - 1, &j, NULL) == -EBADMSG);
        CHECK(j == NULL);
    }
}

/*
 * Lists read from the journal at the sizes a hostile or damaged file can have (issue 34, item
 * 9): each parses, or is refused with a message, without a quadratic walk (525000 steps took
 * minutes) and without json-c building a tree of gigabytes ("{}," 5.6 million times).
 */
typedef enum list_kind {
    L_STEPS,   /* {"name": "N", "status": "done"} */
    L_CHANGES, /* {"kind": "file", "path": "N", "existed": false} */
    L_ITEMS,   /* "running": {"items": ["N", ...]} */
    L_EMPTY,   /* "x": [{}, {}, ...]: a key kswap does not read */
} list_kind;

static char *big_journal(list_kind kind, size_t n, long dup_of)
{
    static const char *const open[] = {
        [L_STEPS] = "\"steps\": [",
        [L_CHANGES] = "\"changes\": [",
        [L_ITEMS] = "\"running\": {\"kernel\": \"6.8.0-48-generic\", \"items\": [",
        [L_EMPTY] = "\"x\": [",
    };
    size_t cap = 128 + n * 64, len = 0;
    char *t = malloc(cap);

    if (!t)
        return NULL;
    len += (size_t)snprintf(t, cap, "{\"version\": 1, \"state\": \"failed\", %s", open[kind]);
    for (size_t i = 0; i < n; i++) {
        /* The last entry repeats entry dup_of's name when asked. */
        size_t name = dup_of >= 0 && i + 1 == n ? (size_t)dup_of : i;
        const char *sep = i ? ", " : "";
        if (kind == L_STEPS)
            len += (size_t)snprintf(t + len, cap - len,
                                    "%s{\"name\": \"s%zx\", \"status\": \"done\"}", sep, name);
        else if (kind == L_CHANGES)
            len += (size_t)snprintf(
                t + len, cap - len,
                "%s{\"kind\": \"file\", \"path\": \"f%zx\", \"existed\": false}", sep, name);
        else if (kind == L_ITEMS)
            len += (size_t)snprintf(t + len, cap - len, "%s\"i%zx\"", sep, name);
        else
            len += (size_t)snprintf(t + len, cap - len, "%s{}", sep);
    }
    snprintf(t + len, cap - len, "]%s}", kind == L_ITEMS ? "}" : "");
    return t;
}

static void test_list_sizes(void)
{
    static const struct {
        list_kind kind;
        size_t n;
        long dup_of; /* -1: all distinct, else the last repeats this one */
        int ret;
        const char *message; /* a fragment of the error message */
        size_t n_parsed;     /* steps, changes or items once parsed */
    } cases[] = {
        {L_STEPS, 20000, -1, 0, NULL, 20000},
        {L_STEPS, 20000, 3, -EBADMSG, "steps[19999]: step 's3' appears twice", 0},
        {L_STEPS, 20000, 19997, -EBADMSG, "steps[19999]: step 's4e1d' appears twice", 0},
        {L_STEPS, 70000, -1, -EBADMSG, "holds more than 262144 values", 0},
        {L_STEPS, 380000, -1, -EBADMSG, "holds more than 262144 values", 0},
        {L_CHANGES, 15000, -1, 0, NULL, 15000},
        {L_CHANGES, 15000, 0, -EBADMSG, "changes[14999]: 'f0' appears twice", 0},
        {L_CHANGES, 40000, -1, -EBADMSG, "holds more than 262144 values", 0},
        {L_ITEMS, 16384, -1, 0, NULL, 16384},
        {L_ITEMS, 16385, -1, -EBADMSG, "'items' holds 16385 entries, more than the 16384", 0},
        {L_ITEMS, 525000, -1, -EBADMSG, "holds more than 262144 values", 0},
        {L_EMPTY, 60000, -1, 0, NULL, 0},
        {L_EMPTY, 70000, -1, -EBADMSG, "holds more than 65536 objects and arrays", 0},
        {L_EMPTY, 4000000, -1, -EBADMSG, "holds more than 65536 objects and arrays", 0},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *text = big_journal(cases[i].kind, cases[i].n, cases[i].dup_of);
        _cleanup_free_ char *err = NULL;
        ks_journal *j = NULL;
        size_t got = 0;
        int r;

        CHECK(text);
        if (!text)
            continue;
        r = ks_journal_parse(text, strlen(text), &j, &err);
        CHECK_MSG(r == cases[i].ret, "size case %zu: got %d (%s), expected %d", i, r, strempty(err),
                  cases[i].ret);
        if (r < 0) {
            CHECK_MSG(err && strstr(err, cases[i].message),
                      "size case %zu: message '%s' lacks '%s'", i, strempty(err), cases[i].message);
            continue;
        }
        got = cases[i].kind == L_STEPS     ? ks_journal_n_steps(j)
              : cases[i].kind == L_CHANGES ? ks_journal_n_changes(j)
              : cases[i].kind == L_ITEMS   ? ks_strv_length(ks_journal_running(j)->items)
                                           : 0;
        CHECK_MSG(got == cases[i].n_parsed, "size case %zu: %zu entries, expected %zu", i, got,
                  cases[i].n_parsed);
        ks_journal_free(j);
    }

    /* A snapshot of more items than the journal keeps is cut when it is set, and says so: what
     * the journal writes, it reads back. */
    {
        ks_run_snapshot *s = calloc(1, sizeof(*s));
        _cleanup_free_ char *text = NULL;
        ks_journal *j = NULL, *again = NULL;

        CHECK(s && ks_journal_new(NULL, &j) == 0);
        for (size_t i = 0; s && i < KS_JOURNAL_MAX_RUNNING_ITEMS + 10; i++) {
            char item[32];
            snprintf(item, sizeof(item), "module:m%zu", i);
            CHECK(ks_strv_extend(&s->items, item) == 0);
        }
        ks_journal_set_running(j, s);
        CHECK(ks_strv_length(ks_journal_running(j)->items) == KS_JOURNAL_MAX_RUNNING_ITEMS);
        CHECK(ks_strv_length(ks_journal_running(j)->skipped) == 1 &&
              strstr(ks_journal_running(j)->skipped[0], "10 items beyond the 16384"));
        CHECK(ks_journal_format(j, &text) == 0);
        CHECK(text && ks_journal_parse(text, strlen(text), &again, NULL) == 0);
        ks_journal_free(again);
        ks_journal_free(j);
    }
}

static void test_parse_full(void)
{
    _cleanup_free_ char *err = NULL, *again_text = NULL, *text = NULL;
    _cleanup_journal_ ks_journal *j = NULL, *again = NULL;
    const ks_snapshot *s;
    const ks_journal_change *c;
    const ks_journal_step *st;

    CHECK(ks_journal_parse(full_journal, strlen(full_journal), &j, &err) == 0);
    if (!j)
        return;
    CHECK_INTEQ(ks_journal_state(j), KS_STATE_ARMED);
    CHECK_INTEQ(ks_journal_outcome(j), KS_OUTCOME_NONE);
    CHECK_STREQ(ks_journal_get(j, KS_JF_NEW_KERNEL), "6.18.45-x64v3-xanmod1");
    CHECK_STREQ(ks_journal_get(j, KS_JF_OLD_PATH),
                "gnulinux-advanced-u>gnulinux-6.8.0-111-generic-advanced-u");
    CHECK(ks_journal_get(j, KS_JF_NEW_TITLE_PATH) == NULL);
    CHECK(ks_journal_get(j, _KS_JF_MAX) == NULL);
    CHECK_STREQ(ks_journal_armed_boot_id(j), "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f");
    CHECK_INTEQ(ks_journal_armed_btime(j), 1795996800);
    CHECK_STREQ(ks_journal_swap_id(j), "0123456789abcdef0123456789abcdef");
    CHECK(!ks_journal_reboot_claimed(j));
    s = ks_journal_snapshot(j);
    CHECK(s != NULL);
    if (s) {
        CHECK(s->has_grubenv && s->grubenv_len == 7 && memcmp(s->grubenv, "# GRUB\0", 7) == 0);
        CHECK_STREQ(s->dropin, "GRUB_DEFAULT=saved\n");
        CHECK_INTEQ(s->n_sysctls, 2);
        CHECK(s->n_sysctls == 2 && s->sysctls[1].value == NULL);
    }
    CHECK_INTEQ(ks_journal_n_steps(j), 2);
    st = ks_journal_step_find(j, "pin-old");
    CHECK(st && st->status == KS_STEP_DONE && st->attempts == 2);
    st = ks_journal_step_get(j, 1);
    CHECK(st && st->status == KS_STEP_STARTED && st->attempts == 1 && !st->finished);
    CHECK(ks_journal_step_get(j, 2) == NULL);
    CHECK_INTEQ(ks_journal_n_changes(j), 3);
    c = ks_journal_change_find(j, KS_CHANGE_FILE, "boot/grub/grubenv");
    CHECK(c && c->existed && c->previous_len == 4 && c->mode == 0644 &&
          memcmp(c->previous, "\x00\x01\x02\xff", 4) == 0);
    c = ks_journal_change_find(j, KS_CHANGE_FILE, "etc/default/grub.d/90-kswap.cfg");
    CHECK(c && !c->existed && !c->previous);
    c = ks_journal_change_find(j, KS_CHANGE_PACKAGE, "linux-image-x");
    CHECK(c && streq_ptr(c->version, "1"));
    CHECK(ks_journal_change_find(j, KS_CHANGE_FILE, "linux-image-x") == NULL);

    /* What we write we read back to the same document. */
    CHECK(ks_journal_format(j, &text) == 0);
    CHECK(text && ks_endswith(text, "}\n"));
    CHECK(text && ks_journal_parse(text, strlen(text), &again, NULL) == 0);
    CHECK(again && ks_journal_format(again, &again_text) == 0);
    CHECK_STREQ(text, again_text);
    /* Unknown fields of the same version are not kept (this kswap would not maintain them). */
    CHECK(text && !strstr(text, "some_future_field"));
}

static void test_mutations(void)
{
    size_t len = strlen(full_journal), bad = 0;

    /* Every cut before the closing brace is an error, never a half journal. */
    for (size_t cut = 0; cut + 2 < len; cut++) {
        ks_journal *j = NULL;
        char *err = NULL;
        int r = ks_journal_parse(full_journal, cut, &j, &err);
        if (r != -EBADMSG && r != -EPROTONOSUPPORT)
            bad++;
        ks_journal_free(j);
        free(err);
    }
    CHECK_INTEQ(bad, 0);
    /* Every byte replaced: an answer, no crash, and a parsed result formats. */
    bad = 0;
    for (size_t i = 0; i < len; i++) {
        static const char repl[] = {'\0', '"', '}', ']', '0', 'x', '\\', ','};
        for (size_t res = 0; res < sizeof(repl); res++) {
            _cleanup_free_ char *t = strdup(full_journal), *out = NULL;
            ks_journal *j = NULL;
            char *err = NULL;
            int r;

            t[i] = repl[res];
            r = ks_journal_parse(t, len, &j, &err);
            if (r == 0 && ks_journal_format(j, &out) < 0)
                bad++;
            if (r < 0 && (!err || j))
                bad++;
            if (r != 0 && r != -EBADMSG && r != -EPROTONOSUPPORT)
                bad++;
            ks_journal_free(j);
            free(err);
        }
    }
    CHECK_INTEQ(bad, 0);
}

static void test_file_lifecycle(void)
{
    _cleanup_free_ char *dir = make_root(), *text = NULL, *err = NULL;
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_journal_ ks_journal *j = NULL, *again = NULL;
    const ks_journal_step *st;
    struct stat sb;
    char path[512];

    fake_now = FAKE_EPOCH;
    CHECK(dir && ks_root_open(dir, &r) == 0);
    if (!r)
        return;

    /* No file: a fresh idle journal, and loading writes nothing. */
    CHECK(ks_journal_load(r, &j, &err) == 0);
    CHECK(j && ks_journal_state(j) == KS_STATE_IDLE && ks_journal_n_steps(j) == 0);
    CHECK(!ks_root_exists(r, KS_JOURNAL_PATH));
    ks_journal_set_clock(j, fixed_clock);

    /* begin writes before the step runs, end after; each time the whole file. */
    CHECK(ks_journal_step_begin(j, "pin-old") == 0);
    text = slurp(r, KS_JOURNAL_PATH);
    CHECK(text && strstr(text, "\"status\": \"started\"") && strstr(text, "\"finished\": null"));
    CHECK(text && strstr(text, "\"created\": \"2026-11-30T00:00:00Z\""));
    free(text);
    fake_now += 65;
    CHECK(ks_journal_step_end(j, "pin-old", KS_STEP_DONE, "saved_entry set") == 0);
    text = slurp(r, KS_JOURNAL_PATH);
    CHECK(text && strstr(text, "\"status\": \"done\"") &&
          strstr(text, "\"finished\": \"2026-11-30T00:01:05Z\"") &&
          strstr(text, "\"detail\": \"saved_entry set\""));
    CHECK(text && strstr(text, "\"updated\": \"2026-11-30T00:01:05Z\""));
    free(text);
    text = NULL;

    /* Ending what never began is a caller bug; skipping it is fine. */
    CHECK(ks_journal_step_end(j, "install", KS_STEP_DONE, NULL) == -ENOENT);
    CHECK(ks_journal_step_end(j, "repo", KS_STEP_SKIPPED, "--deb given") == 0);
    st = ks_journal_step_find(j, "repo");
    CHECK(st && st->status == KS_STEP_SKIPPED && st->attempts == 0 &&
          streq_ptr(st->started, st->finished));
    CHECK(ks_journal_step_end(j, "pin-old", KS_STEP_STARTED, NULL) == -EINVAL);
    CHECK(ks_journal_step_end(j, "pin-old", (ks_step_status)17, NULL) == -EINVAL);
    CHECK(ks_journal_step_begin(j, "") == -EINVAL);
    CHECK(ks_journal_step_begin(j, NULL) == -EINVAL);

    /* Interrupted in "install": the next run loads it and begins it again. */
    CHECK(ks_journal_step_begin(j, "install") == 0);
    CHECK(ks_journal_set_state(j, KS_STATE_PREPARED) == 0);
    CHECK(ks_journal_set_state(j, _KS_STATE_MAX) == -EINVAL);
    CHECK(ks_journal_set(j, KS_JF_OLD_KERNEL, "6.8.0-111-generic") == 0);
    CHECK(ks_journal_set(j, KS_JF_REASON, "x") == 0);
    CHECK(ks_journal_set(j, KS_JF_REASON, NULL) == 0);
    CHECK(ks_journal_set(j, _KS_JF_MAX, "x") == -EINVAL);
    CHECK(ks_journal_save(j) == 0);
    CHECK(ks_journal_load(r, &again, &err) == 0);
    CHECK(again && ks_journal_state(again) == KS_STATE_PREPARED);
    CHECK(again && streq_ptr(ks_journal_get(again, KS_JF_OLD_KERNEL), "6.8.0-111-generic"));
    CHECK(again && ks_journal_get(again, KS_JF_REASON) == NULL);
    if (again) {
        ks_journal_set_clock(again, fixed_clock);
        st = ks_journal_step_find(again, "install");
        CHECK(st && st->status == KS_STEP_STARTED && st->attempts == 1);
        CHECK(ks_journal_step_begin(again, "install") == 0);
        st = ks_journal_step_find(again, "install");
        CHECK(st && st->status == KS_STEP_STARTED && st->attempts == 2);
        CHECK(ks_journal_step_end(again, "install", KS_STEP_FAILED, "apt-get exited 100") == 0);
        CHECK_INTEQ(ks_journal_n_steps(again), 3); /* one entry per step, in first order */
        CHECK_STREQ(ks_journal_step_get(again, 0)->name, "pin-old");
        CHECK_STREQ(ks_journal_step_get(again, 2)->name, "install");
    }
    CHECK_INTEQ(stray_files(dir), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, KS_JOURNAL_PATH);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);

    /* A garbled file is an error, and stays as it is for a person to look at. */
    put(r, KS_JOURNAL_PATH, "{\"version\": 1, \"state\": \"armed\", \"steps\": [");
    ks_journal_free(again);
    again = (ks_journal *)0x1;
    free(err);
    err = NULL;
    CHECK(ks_journal_load(r, &again, &err) == -EBADMSG);
    CHECK(again == (ks_journal *)0x1);
    CHECK(err && strstr(err, "unexpected end"));
    text = slurp(r, KS_JOURNAL_PATH);
    CHECK_STREQ(text, "{\"version\": 1, \"state\": \"armed\", \"steps\": [");
    free(text);
    text = NULL;
    free(err);
    err = NULL;
    put(r, KS_JOURNAL_PATH, "{\"version\": 7, \"state\": \"armed\"}");
    CHECK(ks_journal_load(r, &again, &err) == -EPROTONOSUPPORT);
    CHECK(err && strstr(err, "version 7"));
    again = NULL;
    free(err);
    err = NULL;
    /* Without a place for the message: still the error. */
    CHECK(ks_journal_load(r, &again, NULL) == -EPROTONOSUPPORT);
    again = NULL;

    /* A parsed journal has no root: it cannot be saved by mistake. */
    CHECK(ks_journal_parse("{\"version\":1,\"state\":\"idle\"}", 28, &again, NULL) == 0);
    CHECK(again && ks_journal_save(again) == -EBADF);
    CHECK(again && ks_journal_step_begin(again, "x") == -EBADF);

    rm_rf(dir);
}

static void test_changes_and_guard(void)
{
    _cleanup_free_ char *dir = make_root(), *text = NULL;
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_journal_ ks_journal *j = NULL, *again = NULL;
    const ks_journal_change *c;
    static const unsigned char env[] = "# GRUB Environment Block\n\0\xff\x01";

    if (!new_journal_at(dir, &r, &j))
        return;
    CHECK(ks_write_atomic(r, "boot/grub/grubenv", env, sizeof(env), 0600) == 0);

    /* Recorded before the write: content and mode, or absence. */
    CHECK(ks_journal_note_file(j, "boot/grub/grubenv") == 0);
    CHECK(ks_journal_note_file(j, "etc/default/grub.d/90-kswap.cfg") == 0);
    text = slurp(r, KS_JOURNAL_PATH);
    CHECK(text && strstr(text, "\"path\": \"etc/default/grub.d/90-kswap.cfg\""));
    free(text);
    text = NULL;
    /* The second note of a path keeps the state before kswap. */
    put(r, "boot/grub/grubenv", "changed");
    CHECK(ks_journal_note_file(j, "boot/grub/grubenv") == 0);
    c = ks_journal_change_find(j, KS_CHANGE_FILE, "boot/grub/grubenv");
    CHECK(c && c->existed && c->previous_len == sizeof(env) && c->mode == 0600 &&
          memcmp(c->previous, env, sizeof(env)) == 0);
    CHECK(ks_journal_note_file(j, "boot") == -EISDIR);
    CHECK(ks_journal_note_file(j, "") == -EINVAL);
    CHECK(ks_journal_note_package(j, "linux-image-6.18.45-x64v3-xanmod1", NULL) == 0);
    CHECK(ks_journal_note_package(j, "linux-image-6.18.45-x64v3-xanmod1", "6.18.45-1") == 0);
    CHECK_INTEQ(ks_journal_n_changes(j), 3);
    c = ks_journal_change_get(j, 2);
    CHECK(c && c->kind == KS_CHANGE_PACKAGE && streq_ptr(c->version, "6.18.45-1"));

    /* Bytes survive the file: reload and compare. */
    CHECK(ks_journal_load(r, &again, NULL) == 0);
    c = again ? ks_journal_change_find(again, KS_CHANGE_FILE, "boot/grub/grubenv") : NULL;
    CHECK(c && c->previous_len == sizeof(env) && memcmp(c->previous, env, sizeof(env)) == 0);
    ks_journal_free(again);
    again = NULL;

    CHECK(ks_journal_forget_change(j, KS_CHANGE_FILE, "etc/default/grub.d/90-kswap.cfg") == 0);
    CHECK(ks_journal_forget_change(j, KS_CHANGE_FILE, "etc/default/grub.d/90-kswap.cfg") ==
          -ENOENT);
    CHECK_INTEQ(ks_journal_n_changes(j), 2);
    CHECK_STREQ(ks_journal_change_get(j, 1)->name, "linux-image-6.18.45-x64v3-xanmod1");

    /* The reboot guard: one reboot per trial, also across a reload. */
    CHECK(ks_journal_claim_reboot(j, "b0000000-0000-0000-0000-000000000001") == -ENOENT);
    CHECK(ks_journal_set_armed(j, "a0000000-0000-0000-0000-000000000001", 1795996800) == 0);
    CHECK(ks_journal_set_outcome(j, KS_OUTCOME_HEALTH_FAILED) == 0);
    CHECK_STREQ(ks_journal_outcome_at(j), "2026-11-30T00:00:00Z");
    CHECK(ks_journal_set_outcome(j, (ks_outcome)99) == -EINVAL);
    CHECK(!ks_journal_reboot_claimed(j));
    CHECK(ks_journal_claim_reboot(j, "b0000000-0000-0000-0000-000000000001") == 0);
    CHECK(ks_journal_reboot_claimed(j));
    CHECK(ks_journal_claim_reboot(j, "b0000000-0000-0000-0000-000000000001") == -EALREADY);
    CHECK(ks_journal_load(r, &again, NULL) == 0);
    CHECK(again && ks_journal_reboot_claimed(again));
    CHECK(again && ks_journal_outcome(again) == KS_OUTCOME_HEALTH_FAILED);
    CHECK(again &&
          ks_journal_claim_reboot(again, "c0000000-0000-0000-0000-000000000001") == -EALREADY);
    /* A new trial gets its own reboot and starts without a verdict. */
    CHECK(again && ks_journal_set_armed(again, "d0000000-0000-0000-0000-000000000001", 5) == 0);
    CHECK(again && !ks_journal_reboot_claimed(again));
    CHECK(again && ks_journal_outcome(again) == KS_OUTCOME_NONE && !ks_journal_outcome_at(again));
    CHECK(again && ks_journal_claim_reboot(again, "e0000000-0000-0000-0000-000000000001") == 0);
    CHECK(ks_journal_set_armed(j, "", 5) == -EINVAL);

    /* reset: a fresh idle journal in memory that still saves to the same root. */
    ks_journal_reset(j);
    CHECK(ks_journal_state(j) == KS_STATE_IDLE && ks_journal_n_changes(j) == 0 &&
          !ks_journal_armed_boot_id(j) && !ks_journal_snapshot(j));
    CHECK(ks_journal_save(j) == 0);
    CHECK_INTEQ(stray_files(dir), 0);
    rm_rf(dir);
}

static void test_snapshot(void)
{
    _cleanup_free_ char *dir = make_root(), *text = NULL;
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    const ks_snapshot *s;
    static const char *const names[] = {"net.ipv4.tcp_congestion_control", "net/core/default_qdisc",
                                        "net.ipv4.nope", NULL};

    if (!new_journal_at(dir, &r, &j))
        return;

    put(r, "proc/sys/kernel/osrelease", "6.8.0-111-generic\n");
    /* Required pieces missing: an error and no snapshot. */
    CHECK(ks_journal_take_snapshot(j, NULL, NULL, NULL) == -ENOENT);
    CHECK(ks_journal_snapshot(j) == NULL);
    put(r, "proc/sys/kernel/random/boot_id", "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f\n");
    put(r, "proc/stat", "cpu 1 2\nbtime garbage\n");
    CHECK(ks_journal_take_snapshot(j, NULL, NULL, NULL) == -EBADMSG);
    put(r, "proc/stat", "cpu 1 2\nbtime 1795996800\nprocesses 1\n");
    put(r, "proc/sys/net/ipv4/tcp_congestion_control", "bbr\n");
    put(r, "proc/sys/net/core/default_qdisc", "fq\n");
    put(r, "etc/default/grub.d/90-kswap.cfg", "GRUB_DEFAULT=saved\n");

    /* No grubenv yet: recorded as absent, not an error. */
    CHECK(ks_journal_take_snapshot(j, "boot/grub/grubenv", "etc/default/grub.d/90-kswap.cfg",
                                   (char **)names) == 0);
    s = ks_journal_snapshot(j);
    CHECK(s && streq_ptr(s->kernel, "6.8.0-111-generic") &&
          streq_ptr(s->boot_id, "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f") && s->btime == 1795996800 &&
          !s->has_grubenv && streq_ptr(s->dropin, "GRUB_DEFAULT=saved\n"));
    CHECK(s && s->n_sysctls == 3);
    if (s && s->n_sysctls == 3) {
        CHECK_STREQ(s->sysctls[0].value, "bbr");
        CHECK_STREQ(s->sysctls[1].name, "net/core/default_qdisc");
        CHECK_STREQ(s->sysctls[1].value, "fq");
        CHECK(s->sysctls[2].value == NULL);
    }
    put(r, "boot/grub/grubenv", "# GRUB Environment Block\nsaved_entry=x\n");
    CHECK(ks_journal_take_snapshot(j, "boot/grub/grubenv", "etc/nothing", NULL) == 0);
    s = ks_journal_snapshot(j);
    CHECK(s && s->has_grubenv && s->grubenv_len == 39 && !s->dropin && s->n_sysctls == 0);

    /* The snapshot in the JSON. */
    CHECK(ks_journal_format(j, &text) == 0);
    CHECK(text &&
          strstr(text, "\"grubenv\": \"IyBHUlVCIEVudmlyb25tZW50IEJsb2NrCnNhdmVkX2VudHJ5PXgK\""));
    CHECK(text && strstr(text, "\"btime\": 1795996800"));

    rm_rf(dir);
}

/*
 * The swap's identity: a random id made with "created" at the first save, kept by every
 * later save and a reload (a resumed apply), new after a reset (a new swap), kept by a restart
 * (an apply killed while the journal was idle). Two swaps in the same second differ.
 */
static void test_swap_id(void)
{
    _cleanup_free_ char *dir = make_root(), *first = NULL, *created = NULL;
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_journal_ ks_journal *j = NULL, *again = NULL, *old = NULL;
    static const char legacy[] = "{\"version\": 1, \"state\": \"prepared\", \"created\": "
                                 "\"2026-11-30T00:00:00Z\"}";

    if (!new_journal_at(dir, &r, &j))
        return;
    CHECK(ks_journal_swap_id(j) == NULL && ks_journal_created(j) == NULL);
    CHECK(ks_journal_save(j) == 0);
    CHECK(ks_id128_is_valid(ks_journal_swap_id(j)));
    first = strdup(strempty(ks_journal_swap_id(j)));
    created = strdup(strempty(ks_journal_created(j)));
    fake_now += 5;
    CHECK(ks_journal_set_state(j, KS_STATE_PREPARED) == 0);
    CHECK(ks_journal_save(j) == 0);
    CHECK_STREQ(ks_journal_swap_id(j), first);
    CHECK(ks_journal_load(r, &again, NULL) == 0);
    CHECK(again && streq_ptr(ks_journal_swap_id(again), first));

    /* A restart keeps the swap: its id, created, and the files it recorded. */
    CHECK(ks_journal_note_package(j, "linux-image-x", "1") == 0);
    ks_journal_restart(j);
    CHECK(ks_journal_state(j) == KS_STATE_IDLE && ks_journal_n_changes(j) == 1);
    CHECK_STREQ(ks_journal_swap_id(j), first);
    CHECK_STREQ(ks_journal_created(j), created);
    CHECK(ks_journal_save(j) == 0);
    CHECK_STREQ(ks_journal_swap_id(j), first);

    /* A new swap in the same second as the first: the same "created", another id. */
    fake_now = FAKE_EPOCH;
    ks_journal_reset(j);
    CHECK(ks_journal_swap_id(j) == NULL);
    CHECK(ks_journal_save(j) == 0);
    CHECK_STREQ(ks_journal_created(j), created);
    CHECK(ks_id128_is_valid(ks_journal_swap_id(j)) && !streq_ptr(ks_journal_swap_id(j), first));

    /* A journal of a kswap before the id keeps none: "created" stands for it (history.c). */
    CHECK(ks_journal_parse(legacy, strlen(legacy), &old, NULL) == 0);
    CHECK(old && ks_journal_swap_id(old) == NULL);
    rm_rf(dir);
}

static void test_json(void)
{
    _cleanup_journal_ ks_journal *j = NULL;
    json_object *o, *v;

    CHECK(ks_journal_parse(full_journal, strlen(full_journal), &j, NULL) == 0);
    if (!j)
        return;
    o = ks_journal_to_json(j);
    CHECK(o != NULL);
    /* The keys of issue 5's apply --json. */
    CHECK(json_object_object_get_ex(o, "state", &v) && streq(json_object_get_string(v), "armed"));
    CHECK(json_object_object_get_ex(o, "old_kernel", &v) && v);
    CHECK(json_object_object_get_ex(o, "new_kernel", &v) && v);
    CHECK(json_object_object_get_ex(o, "old_path", &v) && v);
    CHECK(json_object_object_get_ex(o, "new_path", &v) && v);
    CHECK(json_object_object_get_ex(o, "outcome", &v) && v == NULL);
    CHECK(json_object_object_get_ex(o, "version", &v) && json_object_get_int(v) == 1);
    CHECK(json_object_object_get_ex(o, "steps", &v) && json_object_array_length(v) == 2);
    if (v && json_object_array_length(v) == 2) {
        json_object *s = json_object_array_get_idx(v, 0), *x;
        CHECK(json_object_object_get_ex(s, "name", &x));
        CHECK(json_object_object_get_ex(s, "status", &x));
        CHECK(json_object_object_get_ex(s, "started", &x));
        CHECK(json_object_object_get_ex(s, "finished", &x));
        CHECK(json_object_object_get_ex(s, "detail", &x));
    }
    json_object_put(o);
}

int main(void)
{
    test_names();
    test_parse_table();
    test_list_sizes();
    test_parse_full();
    test_mutations();
    test_file_lifecycle();
    test_changes_and_guard();
    test_snapshot();
    test_swap_id();
    test_json();
    TEST_DONE();
}
