/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap.prom: label escaping, the whole rendering, the values taken from a journal, the write. */
#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/engine/journal.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/metrics.h"
#include "test.h"

static void test_escape(void)
{
    static const struct {
        const char *in;   /* NULL: no value */
        const char *want; /* between the label's double quotes */
    } cases[] = {
        {NULL, ""},
        {"", ""},
        {"6.8.0-48-generic", "6.8.0-48-generic"},
        {"6.18.45-x64v3-xanmod1", "6.18.45-x64v3-xanmod1"},
        {"a\\b", "a\\\\b"},                       /* backslash */
        {"say \"hi\"", "say \\\"hi\\\""},         /* double quotes */
        {"two\nlines", "two\\nlines"},            /* line feed */
        {"\\\"\n", "\\\\\\\"\\n"},                /* all three, in a row */
        {"\\n", "\\\\n"},                         /* a backslash before n is not a line feed */
        {"a\tb\rc", "a\tb\rc"},                   /* tab and carriage return stay */
        {"caf\xc3\xa9", "caf\xc3\xa9"},           /* UTF-8 stays */
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"}, /* four bytes */
        {"x\xffy", "x\xef\xbf\xbdy"},             /* not UTF-8: U+FFFD */
        {"\xc3", "\xef\xbf\xbd"},                 /* cut short */
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"}, /* overlong */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},                 /* surrogate */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *got = ks_metrics_escape_label(cases[i].in);
        CHECK_MSG(got && streq(got, cases[i].want), "case %zu: got '%s'", i, strempty(got));
    }
}

#define INFO_HEAD                                                                                  \
    "# HELP kswap_info kswap's state journal: state, trial outcome and the kernels involved "      \
    "(always 1).\n"                                                                                \
    "# TYPE kswap_info gauge\n"
#define LAST_HEAD                                                                                  \
    "# HELP kswap_last_change_timestamp_seconds When the state journal last changed (a step, a "   \
    "state or a verdict), in seconds since the epoch.\n"                                           \
    "# TYPE kswap_last_change_timestamp_seconds gauge\n"
#define TRIAL_HEAD                                                                                 \
    "# HELP kswap_trial_duration_seconds Seconds from arming the last judged trial to its "        \
    "verdict.\n"                                                                                   \
    "# TYPE kswap_trial_duration_seconds gauge\n"
#define REBOOTS_HEAD                                                                               \
    "# HELP kswap_reboots_requested_total Reboots kswap asked for over the life of its state "     \
    "journal.\n"                                                                                   \
    "# TYPE kswap_reboots_requested_total counter\n"

static void test_render(void)
{
    static const struct {
        ks_metrics m;
        const char *want;
    } cases[] = {
        /* Nothing known: every label empty, the families without a value left out. */
        {{0},
         INFO_HEAD "kswap_info{state=\"\",outcome=\"\",running_kernel=\"\",pinned_kernel=\"\","
                   "old_kernel=\"\",new_kernel=\"\"} 1\n" REBOOTS_HEAD
                   "kswap_reboots_requested_total 0\n"},
        /* Armed: no verdict yet, so no trial duration. */
        {{.state = "armed",
          .running_kernel = "6.8.0-48-generic",
          .pinned_kernel = "6.8.0-48-generic",
          .old_kernel = "6.8.0-48-generic",
          .new_kernel = "6.18.45-x64v3-xanmod1",
          .has_last_change = true,
          .last_change = 1796025000},
         INFO_HEAD "kswap_info{state=\"armed\",outcome=\"\",running_kernel=\"6.8.0-48-generic\","
                   "pinned_kernel=\"6.8.0-48-generic\",old_kernel=\"6.8.0-48-generic\","
                   "new_kernel=\"6.18.45-x64v3-xanmod1\"} 1\n" LAST_HEAD
                   "kswap_last_change_timestamp_seconds 1796025000\n" REBOOTS_HEAD
                   "kswap_reboots_requested_total 0\n"},
        /* Pinned after a trial: every family. */
        {{.state = "pinned",
          .outcome = "trial-ok",
          .running_kernel = "6.18.45-x64v3-xanmod1",
          .pinned_kernel = "6.18.45-x64v3-xanmod1",
          .old_kernel = "6.8.0-48-generic",
          .new_kernel = "6.18.45-x64v3-xanmod1",
          .has_last_change = true,
          .last_change = 1796025312,
          .has_trial_duration = true,
          .trial_duration = 312,
          .reboots_requested = 1},
         INFO_HEAD "kswap_info{state=\"pinned\",outcome=\"trial-ok\","
                   "running_kernel=\"6.18.45-x64v3-xanmod1\","
                   "pinned_kernel=\"6.18.45-x64v3-xanmod1\",old_kernel=\"6.8.0-48-generic\","
                   "new_kernel=\"6.18.45-x64v3-xanmod1\"} 1\n" LAST_HEAD
                   "kswap_last_change_timestamp_seconds 1796025312\n" TRIAL_HEAD
                   "kswap_trial_duration_seconds 312\n" REBOOTS_HEAD
                   "kswap_reboots_requested_total 1\n"},
        /* A hostile release string is escaped in place; a zero duration is still a value. */
        {{.state = "failed",
          .outcome = "health-failed",
          .running_kernel = "x\"} 1\nkswap_info{state=\"pinned",
          .has_trial_duration = true,
          .trial_duration = 0,
          .reboots_requested = UINT64_MAX},
         INFO_HEAD "kswap_info{state=\"failed\",outcome=\"health-failed\","
                   "running_kernel=\"x\\\"} 1\\nkswap_info{state=\\\"pinned\",pinned_kernel=\"\","
                   "old_kernel=\"\",new_kernel=\"\"} 1\n" TRIAL_HEAD
                   "kswap_trial_duration_seconds 0\n" REBOOTS_HEAD
                   "kswap_reboots_requested_total 18446744073709551615\n"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *got = NULL;
        CHECK_INTEQ(ks_metrics_render(&cases[i].m, &got), 0);
        CHECK_MSG(got && streq(got, cases[i].want), "case %zu:\n%s\nwant:\n%s", i, strempty(got),
                  cases[i].want);
    }
}

/* The journal's fields that the metrics read, with "%s" for the rest of the object. */
#define JOURNAL(rest) "{\"version\": 1, \"steps\": [], \"changes\": [], " rest "}"

static void test_collect(const ks_root *root)
{
    static const struct {
        const char *journal;
        const char *state, *outcome, *old_kernel, *new_kernel;
        bool has_last_change;
        int64_t last_change;
        bool has_trial_duration;
        int64_t trial_duration;
        uint64_t reboots;
    } cases[] = {
        /* A journal from before the counter and without a save time. */
        {JOURNAL("\"state\": \"idle\""), "idle", NULL, NULL, NULL, false, 0, false, 0, 0},
        /* Armed, not judged: no duration. */
        {JOURNAL("\"state\": \"armed\", \"old_kernel\": \"A\", \"new_kernel\": \"B\", "
                 "\"armed_boot_id\": \"b1\", \"armed_btime\": 1, \"armed_at\": "
                 "\"2026-11-30T07:50:00Z\", \"updated\": \"2026-11-30T07:50:01Z\", "
                 "\"reboots_requested\": 3"),
         "armed", NULL, "A", "B", true, 1796025001, false, 0, 3},
        /* Judged: arming to verdict. */
        {JOURNAL("\"state\": \"pinned\", \"outcome\": \"trial-ok\", \"outcome_at\": "
                 "\"2026-11-30T07:55:12Z\", \"armed_boot_id\": \"b1\", \"armed_btime\": 1, "
                 "\"armed_at\": \"2026-11-30T07:50:00Z\", \"updated\": \"2026-11-30T07:56:00Z\", "
                 "\"reboots_requested\": 1"),
         "pinned", "trial-ok", NULL, NULL, true, 1796025360, true, 312, 1},
        {JOURNAL("\"state\": \"rolled-back\", \"outcome\": \"trial-hung\", \"outcome_at\": "
                 "\"2026-11-30T08:05:00Z\", \"armed_boot_id\": \"b1\", \"armed_btime\": 1, "
                 "\"armed_at\": \"2026-11-30T07:50:00Z\""),
         "rolled-back", "trial-hung", NULL, NULL, false, 0, true, 900, 0},
        /* no-reboot is not a verdict on the trial. */
        {JOURNAL("\"state\": \"armed\", \"outcome\": \"no-reboot\", \"outcome_at\": "
                 "\"2026-11-30T07:51:00Z\", \"armed_boot_id\": \"b1\", \"armed_btime\": 1, "
                 "\"armed_at\": \"2026-11-30T07:50:00Z\""),
         "armed", "no-reboot", NULL, NULL, false, 0, false, 0, 0},
        /* A verdict before arming (a clock set back): no duration rather than a negative one. */
        {JOURNAL("\"state\": \"failed\", \"outcome\": \"health-failed\", \"outcome_at\": "
                 "\"2026-11-30T07:49:00Z\", \"armed_boot_id\": \"b1\", \"armed_btime\": 1, "
                 "\"armed_at\": \"2026-11-30T07:50:00Z\""),
         "failed", "health-failed", NULL, NULL, false, 0, false, 0, 0},
        /* A verdict without an arming time (a hand-edited journal): no duration. */
        {JOURNAL("\"state\": \"failed\", \"outcome\": \"fell-back\", \"outcome_at\": "
                 "\"2026-11-30T07:49:00Z\", \"updated\": \"not a time\""),
         "failed", "fell-back", NULL, NULL, false, 0, false, 0, 0},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_journal_ ks_journal *j = NULL;
        _cleanup_free_ char *err = NULL;
        ks_metrics_values v = {0};

        CHECK_MSG(ks_journal_parse(cases[i].journal, strlen(cases[i].journal), &j, &err) == 0,
                  "case %zu: %s", i, strempty(err));
        if (!j)
            continue;
        CHECK_INTEQ(ks_metrics_collect(root, j, NULL, &v), 0);
        CHECK_MSG(streq_ptr(v.m.state, cases[i].state), "case %zu: state %s", i,
                  strempty(v.m.state));
        CHECK_MSG(streq_ptr(v.m.outcome, cases[i].outcome), "case %zu: outcome", i);
        CHECK_MSG(streq_ptr(v.m.old_kernel, cases[i].old_kernel), "case %zu: old", i);
        CHECK_MSG(streq_ptr(v.m.new_kernel, cases[i].new_kernel), "case %zu: new", i);
        /* The root holds no proc and no GRUB: both kernels unknown, empty. */
        CHECK_MSG(!v.m.running_kernel && !v.m.pinned_kernel, "case %zu: kernels of the root", i);
        CHECK_MSG(v.m.has_last_change == cases[i].has_last_change &&
                      v.m.last_change == cases[i].last_change,
                  "case %zu: last change %d %" PRId64, i, v.m.has_last_change, v.m.last_change);
        CHECK_MSG(v.m.has_trial_duration == cases[i].has_trial_duration &&
                      v.m.trial_duration == cases[i].trial_duration,
                  "case %zu: trial duration %d %" PRId64, i, v.m.has_trial_duration,
                  v.m.trial_duration);
        CHECK_MSG(v.m.reboots_requested == cases[i].reboots, "case %zu: reboots %" PRIu64, i,
                  v.m.reboots_requested);
        ks_metrics_values_done(&v);
    }
}

static char *slurp(const char *dir, const char *name)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", dir, name);
    return p ? ks_test_slurp(p, NULL) : NULL;
}

static void test_write(const ks_root *root, const char *dir)
{
    _cleanup_journal_ ks_journal *j = NULL;
    _cleanup_free_ char *err = NULL, *text = NULL, *want = NULL, *prom = NULL, *textdir = NULL;
    ks_metrics_values v = {0};
    struct stat st;

    CHECK(ks_journal_new(root, &j) == 0);
    if (!j)
        return;
    /* No directory: off, and it is not created. */
    CHECK_INTEQ(ks_metrics_write(root, "/var/lib/prometheus/node-exporter", j, NULL, &err), 0);
    CHECK(!err);
    CHECK(!ks_root_exists(root, "var/lib/prometheus"));

    CHECK(ks_mkdir_p(root, "var/lib/prometheus/node-exporter", 0755) == 0);
    CHECK_INTEQ(ks_metrics_write(root, "/var/lib/prometheus/node-exporter", j, NULL, &err), 1);
    textdir = ks_asprintf("%s/var/lib/prometheus/node-exporter", dir);
    text = slurp(textdir, "kswap.prom");
    CHECK(ks_metrics_collect(root, j, NULL, &v) == 0 && ks_metrics_render(&v.m, &want) == 0);
    CHECK_STREQ(text, want);
    ks_metrics_values_done(&v);
    CHECK(stat(textdir, &st) == 0 && (st.st_mode & 0777) == 0755);

    /* The file cannot be replaced (a directory in its place): an error that names it. */
    prom = ks_asprintf("%s/kswap.prom", textdir);
    CHECK(prom && unlink(prom) == 0 && mkdir(prom, 0755) == 0);
    CHECK(ks_metrics_write(root, "/var/lib/prometheus/node-exporter", j, NULL, &err) < 0);
    CHECK_MSG(err && strstr(err, "cannot write '/var/lib/prometheus/node-exporter/kswap.prom'"),
              "%s", strempty(err));
    /* Nothing half-written is left behind. */
    {
        _cleanup_strv_free_ char **names = NULL;
        CHECK(ks_root_list_dir(root, "var/lib/prometheus/node-exporter", &names) == 0);
        CHECK(names && streq_ptr(names[0], "kswap.prom") && !names[1]);
    }
    CHECK(rmdir(prom) == 0);

    /* Attached: every save writes it; set empty: no observer at all. */
    {
        _cleanup_config_ ks_config *cfg = ks_config_new();
        _cleanup_free_ char *after = NULL;

        CHECK(ks_metrics_attach(j, root, NULL) == 0);
        CHECK(ks_journal_set_state(j, KS_STATE_PREPARED) == 0 && ks_journal_save(j) == 0);
        after = slurp(textdir, "kswap.prom");
        CHECK(after && strstr(after, "state=\"prepared\""));
        CHECK(!ks_metrics_error(j));

        CHECK(cfg && ks_config_parse(cfg, "[metrics]\ntextfile_dir =\n", "t", NULL) == 0);
        CHECK(ks_metrics_textfile_dir(cfg) == NULL);
        CHECK(ks_config_parse(cfg, "[metrics]\ntextfile_dir = /srv/prom\n", "t", NULL) == 0);
        CHECK_STREQ(ks_metrics_textfile_dir(cfg), "/srv/prom");
        CHECK_STREQ(ks_metrics_textfile_dir(NULL), "/var/lib/prometheus/node-exporter");
    }
}

int main(void)
{
    char tmpl[] = "/tmp/kswap-metrics-XXXXXX";
    char *dir = mkdtemp(tmpl);
    _cleanup_free_ char *cmd = NULL;
    ks_root *root = NULL;

    test_escape();
    test_render();
    CHECK(dir && ks_root_open(dir, &root) == 0);
    if (root) {
        test_collect(root);
        test_write(root, dir);
    }
    ks_root_free(root);
    cmd = dir ? ks_asprintf("rm -rf '%s'", dir) : NULL;
    if (cmd && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    TEST_DONE();
}
