/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Samples of the node's TCP health and their comparison (lib/host/tcpsample.c,
 * lib/engine/tcp-report.c): the summary of connections, the JSON kept in the journal and the
 * history (a table of malformed objects), the figures over a window, and before against after.
 */
#include <arpa/inet.h>
#include <math.h>

#include "lib/basic/json-util.h"
#include "lib/engine/tcp-report.h"
#include "test.h"

static ks_tcp_conn conn(const char *remote, const char *cc, uint32_t rtt, uint64_t rate,
                        uint32_t data_segs)
{
    ks_tcp_conn c = {.family = AF_INET,
                     .has_info = rtt > 0,
                     .rtt_us = rtt,
                     .delivery_rate = rate,
                     .data_segs_out = data_segs};

    inet_pton(AF_INET, "10.0.0.1", c.local);
    inet_pton(AF_INET, remote, c.remote);
    snprintf(c.cc, sizeof(c.cc), "%s", cc);
    return c;
}

static void test_summarize(void)
{
    ks_tcp_conn v[] = {
        conn("203.0.113.1", "cubic", 40000, 1000000, 500),
        conn("203.0.113.2", "bbr", 20000, 3000000, 500),
        conn("203.0.113.3", "bbr", 30000, 0, 500),      /* no rate yet */
        conn("203.0.113.4", "bbr", 10000, 9000000, 5),  /* too little traffic for a rate */
        conn("127.0.0.1", "cubic", 50, 90000000, 5000), /* loopback: not counted */
        conn("203.0.113.5", "", 0, 0, 0),               /* no tcp_info, no name */
    };
    ks_tcp_conns c = {.v = v, .n = ARRAY_SIZE(v)};
    ks_tcp_sample s = {0};

    CHECK_INTEQ(ks_tcp_sample_summarize(&c, &s), 0);
    CHECK(s.has_connections);
    CHECK_INTEQ(s.connections, 5);
    CHECK_INTEQ(s.n_cc, 3);
    /* sorted by name: "" (unknown), bbr, cubic */
    CHECK_STREQ(s.cc[0].name, "");
    CHECK_INTEQ(s.cc[0].n, 1);
    CHECK_INTEQ(ks_tcp_sample_cc_count(&s, "bbr"), 3);
    CHECK_INTEQ(ks_tcp_sample_cc_count(&s, "cubic"), 1);
    CHECK_INTEQ(ks_tcp_sample_cc_count(&s, "reno"), 0);
    /* RTTs 10, 20, 30, 40 ms: the lower middle one */
    CHECK(s.has_rtt);
    CHECK_INTEQ(s.rtt_median_us, 20000);
    /* rates of connections with traffic: 1 and 3 MB/s */
    CHECK_INTEQ(s.with_traffic, 2);
    CHECK(s.has_delivery);
    CHECK_INTEQ(s.delivery_rate_median, 1000000);
    ks_tcp_sample_done(&s);

    c.n = 0;
    CHECK_INTEQ(ks_tcp_sample_summarize(&c, &s), 0);
    CHECK(s.has_connections && s.connections == 0 && !s.has_rtt && !s.has_delivery);
    ks_tcp_sample_done(&s);
}

#define SAMPLE(extra)                                                                              \
    "{\"at\": \"2026-11-30T07:50:00Z\", \"kernel\": \"6.8.0-48-generic\", \"boot_id\": "           \
    "\"5b0c1a6e-3f27-4c47-9a51-2f1b8d6a9e40\", \"btime\": 1764400000, \"out_segs\": 1000, "        \
    "\"retrans_segs\": 20" extra "}"

static const struct {
    const char *name;
    const char *text;
    int ret;
    bool has_connections; /* "connections" was there */
    uint32_t bbr;         /* connections counted for bbr */
    bool has_ext;         /* timeouts and lost_retransmit both there */
    const char *error;    /* a part of the message */
} json_cases[] = {
    {"counters only", SAMPLE(""), 0, false, 0, false, NULL},
    {"everything",
     SAMPLE(", \"in_segs\": 900, \"timeouts\": 3, \"lost_retransmit\": 1, \"connections\": 3, "
            "\"congestion_control\": {\"bbr\": 2, \"unknown\": 1}, \"rtt_median_us\": 20000, "
            "\"with_traffic\": 2, \"delivery_rate_median\": 125000"),
     0, true, 2, true, NULL},
    {"timeouts without lost_retransmit: no TcpExt", SAMPLE(", \"timeouts\": 3"), 0, false, 0, false,
     NULL},
    {"no connections with an empty mix", SAMPLE(", \"connections\": 0, \"congestion_control\": {}"),
     0, true, 0, false, NULL},
    {"not an object", "[]", -EBADMSG, false, 0, false, "not an object"},
    {"no time", "{\"out_segs\": 1, \"retrans_segs\": 0}", -EBADMSG, false, 0, false, "'at'"},
    {"a time that is not UTC", "{\"at\": \"yesterday\", \"out_segs\": 1, \"retrans_segs\": 0}",
     -EBADMSG, false, 0, false, "'at'"},
    {"no out_segs", "{\"at\": \"2026-11-30T07:50:00Z\", \"retrans_segs\": 0}", -EBADMSG, false, 0,
     false, "'out_segs' and 'retrans_segs' are required"},
    {"a negative counter", SAMPLE(", \"in_segs\": -4"), -EBADMSG, false, 0, false,
     "'in_segs': out of range"},
    {"a counter as a string", SAMPLE(", \"timeouts\": \"3\""), -EBADMSG, false, 0, false,
     "'timeouts': not a whole number"},
    {"the kernel not a string", SAMPLE(", \"kernel\": 5"), -EBADMSG, false, 0, false, "'kernel'"},
    {"a mix that does not add up",
     SAMPLE(", \"connections\": 3, \"congestion_control\": {\"bbr\": 2}"), -EBADMSG, false, 0,
     false, "do not add up"},
    {"a mix without connections", SAMPLE(", \"congestion_control\": {\"bbr\": 2}"), -EBADMSG, false,
     0, false, "do not add up"},
    {"a mix that is not an object", SAMPLE(", \"connections\": 1, \"congestion_control\": [1]"),
     -EBADMSG, false, 0, false, "not an object"},
    {"a name that cannot be one",
     SAMPLE(", \"connections\": 1, \"congestion_control\": {\"b\\nbr\": 1}"), -EBADMSG, false, 0,
     false, "not a name with a count"},
    {"a count that is negative",
     SAMPLE(", \"connections\": 1, \"congestion_control\": {\"bbr\": -1}"), -EBADMSG, false, 0,
     false, "out of range"},
};

static void test_json(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(json_cases); i++) {
        json_object *o = json_tokener_parse(json_cases[i].text), *back;
        _cleanup_free_ char *err = NULL;
        ks_tcp_sample s = {0}, s2 = {0};
        int r;

        CHECK_MSG(o, "%s: the test's JSON parses", json_cases[i].name);
        r = ks_tcp_sample_from_json(o, &s, &err);
        CHECK_MSG(r == json_cases[i].ret, "%s: %d (%s)", json_cases[i].name, r, strempty(err));
        if (json_cases[i].error)
            CHECK_MSG(err && strstr(err, json_cases[i].error), "%s: '%s'", json_cases[i].name,
                      strempty(err));
        if (r == 0) {
            CHECK_MSG(s.has_connections == json_cases[i].has_connections, "%s: connections",
                      json_cases[i].name);
            CHECK_MSG(ks_tcp_sample_cc_count(&s, "bbr") == json_cases[i].bbr, "%s: bbr",
                      json_cases[i].name);
            CHECK_MSG(s.counters.has_ext == json_cases[i].has_ext, "%s: has_ext",
                      json_cases[i].name);
            /* What is written reads back the same. */
            back = ks_tcp_sample_to_json(&s);
            CHECK(back && ks_tcp_sample_from_json(back, &s2, NULL) == 0);
            {
                json_object *again = ks_tcp_sample_to_json(&s2);
                CHECK_MSG(again && json_object_equal(back, again), "%s: round trip",
                          json_cases[i].name);
                json_object_put(again);
            }
            json_object_put(back);
        }
        ks_tcp_sample_done(&s);
        ks_tcp_sample_done(&s2);
        json_object_put(o);
    }
}

static ks_tcp_sample *mk(const char *at, const char *boot, const char *kernel, uint64_t btime,
                         uint64_t out, uint64_t retrans)
{
    ks_tcp_sample *s = calloc(1, sizeof(*s));

    s->at = strdup(at);
    s->boot_id = boot ? strdup(boot) : NULL;
    s->kernel = strdup(kernel);
    s->btime = btime;
    s->counters.out_segs = out;
    s->counters.retrans_segs = retrans;
    return s;
}

/* 2026-11-30T00:00:00Z */
#define T0 1795996800u

static const struct {
    const char *name;
    const char *start_at, *start_boot; /* NULL start_at: no start sample */
    uint64_t start_out, start_retrans;
    const char *end_at, *end_boot;
    uint64_t end_out, end_retrans, btime;
    bool since_boot;
    uint64_t sent, retransmitted;
    int64_t window_s;
    double ratio; /* -1: none */
} fig_cases[] = {
    {"since the boot", NULL, NULL, 0, 0, "2026-11-30T01:00:00Z", "b1", 1000, 10, T0, true, 1000, 10,
     3600, 0.01},
    {"between two samples of one boot", "2026-11-30T01:00:00Z", "b1", 1000, 10,
     "2026-11-30T02:00:00Z", "b1", 3000, 30, T0, false, 2000, 20, 3600, 0.01},
    {"a start of another boot: since the end's boot", "2026-11-30T01:00:00Z", "b0", 1000, 10,
     "2026-11-30T02:00:00Z", "b1", 3000, 30, T0, true, 3000, 30, 7200, 0.01},
    {"a start without a boot id: since the boot", "2026-11-30T01:00:00Z", NULL, 1000, 10,
     "2026-11-30T02:00:00Z", "b1", 3000, 30, T0, true, 3000, 30, 7200, 0.01},
    {"counters below the start's: since the boot", "2026-11-30T01:00:00Z", "b1", 5000, 10,
     "2026-11-30T02:00:00Z", "b1", 3000, 30, T0, true, 3000, 30, 7200, 0.01},
    {"nothing sent: no ratio", "2026-11-30T01:00:00Z", "b1", 1000, 10, "2026-11-30T02:00:00Z", "b1",
     1000, 10, T0, false, 0, 0, 3600, -1},
    {"boot time unknown: no window", NULL, NULL, 0, 0, "2026-11-30T01:00:00Z", "b1", 400, 1, 0,
     true, 400, 1, -1, 0.0025},
};

static void test_figures(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(fig_cases); i++) {
        ks_tcp_sample *start =
            fig_cases[i].start_at
                ? mk(fig_cases[i].start_at, fig_cases[i].start_boot, "k", fig_cases[i].btime,
                     fig_cases[i].start_out, fig_cases[i].start_retrans)
                : NULL;
        ks_tcp_sample *end = mk(fig_cases[i].end_at, fig_cases[i].end_boot, "k", fig_cases[i].btime,
                                fig_cases[i].end_out, fig_cases[i].end_retrans);
        ks_tcp_figures f;

        ks_tcp_figures_of(start, end, &f);
        CHECK_MSG(f.since_boot == fig_cases[i].since_boot, "%s: since_boot", fig_cases[i].name);
        CHECK_MSG(f.sent == fig_cases[i].sent, "%s: sent %llu", fig_cases[i].name,
                  (unsigned long long)f.sent);
        CHECK_MSG(f.retransmitted == fig_cases[i].retransmitted, "%s: retransmitted",
                  fig_cases[i].name);
        CHECK_MSG(f.window_s == fig_cases[i].window_s, "%s: window %lld", fig_cases[i].name,
                  (long long)f.window_s);
        if (fig_cases[i].ratio < 0)
            CHECK_MSG(!f.has_ratio, "%s: no ratio", fig_cases[i].name);
        else
            CHECK_MSG(f.has_ratio && fabs(f.ratio - fig_cases[i].ratio) < 1e-12, "%s: ratio %g",
                      fig_cases[i].name, f.ratio);
        CHECK_MSG(f.end == end, "%s: the end", fig_cases[i].name);
        ks_tcp_sample_free(start);
        ks_tcp_sample_free(end);
    }
}

static void test_change(void)
{
    double pct = 0;

    CHECK(ks_tcp_change_percent(0.02, 0.01, &pct) && fabs(pct + 50) < 1e-9);
    CHECK(ks_tcp_change_percent(40000, 44000, &pct) && fabs(pct - 10) < 1e-9);
    CHECK(ks_tcp_change_percent(0.01, 0.01, &pct) && pct == 0);
    pct = 7;
    CHECK(!ks_tcp_change_percent(0, 0.01, &pct) && pct == 7);
}

/*
 * Before against after: the baseline since the old kernel's boot; after from the pin (same
 * boot) or the new kernel's boot, with a live sample or the recorded ones.
 */
static const struct {
    const char *name;
    bool pinned, after;     /* the effect holds these besides the baseline */
    const char *now_kernel; /* a live sample on this kernel; NULL: none */
    const char *now_boot;
    bool has_after;
    bool since_boot;
    uint64_t sent, retransmitted;
    double ratio_change; /* NAN: none */
    const char *no_after;
} cmp_cases[] = {
    /* baseline: old kernel, 100000 sent, 2000 retransmitted (2 %) */
    /* pinned: new kernel, boot b2, 1000 sent, 20 retransmitted */
    /* after (recorded): boot b2, 51000 sent, 520 retransmitted: 50000 and 500 since the pin */
    {"live, in the boot of the pin", true, false, "new", "b2", true, false, 9000, 80, -55.5555556,
     NULL},
    {"live, a later boot", true, false, "new", "b3", true, true, 10000, 100, -50, NULL},
    {"live, not pinned yet (the trial)", false, false, "new", "b2", true, true, 10000, 100, -50,
     NULL},
    {"live, the old kernel runs", true, false, "old", "b4", false, false, 0, 0, NAN,
     "the node does not run the new kernel"},
    {"recorded after", true, true, NULL, NULL, true, false, 50000, 500, -50, NULL},
    {"recorded, only the pin: the trial boot up to the pin", true, false, NULL, NULL, true, true,
     1000, 20, 0, NULL},
    {"recorded, nothing after arming", false, false, NULL, NULL, false, false, 0, 0, NAN,
     "not pinned yet"},
};

static void test_compare(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cmp_cases); i++) {
        ks_tcp_effect e = {0};
        ks_tcp_sample *now = NULL;
        ks_tcp_compare c;

        e.baseline = mk("2026-11-30T00:00:00Z", "b1", "old", T0 - 86400, 100000, 2000);
        if (cmp_cases[i].pinned)
            e.pinned = mk("2026-11-30T01:00:00Z", "b2", "new", T0 + 3000, 1000, 20);
        if (cmp_cases[i].after)
            e.after = mk("2026-12-01T01:00:00Z", "b2", "new", T0 + 3000, 51000, 520);
        if (cmp_cases[i].now_kernel)
            now = mk("2026-11-30T05:00:00Z", cmp_cases[i].now_boot, cmp_cases[i].now_kernel,
                     T0 + 3000, 10000, 100);
        ks_tcp_compare_of(&e, "new", now, &c);
        CHECK_MSG(c.has_before, "%s: before", cmp_cases[i].name);
        CHECK_MSG(c.before.sent == 100000 && c.before.since_boot, "%s: before's figures",
                  cmp_cases[i].name);
        CHECK_MSG(c.has_after == cmp_cases[i].has_after, "%s: has_after", cmp_cases[i].name);
        CHECK_MSG(streq_ptr(c.no_after, cmp_cases[i].no_after), "%s: no_after '%s'",
                  cmp_cases[i].name, strempty(c.no_after));
        if (c.has_after) {
            CHECK_MSG(c.after.since_boot == cmp_cases[i].since_boot, "%s: since_boot",
                      cmp_cases[i].name);
            CHECK_MSG(c.after.sent == cmp_cases[i].sent, "%s: sent %llu", cmp_cases[i].name,
                      (unsigned long long)c.after.sent);
            CHECK_MSG(c.after.retransmitted == cmp_cases[i].retransmitted, "%s: retransmitted %llu",
                      cmp_cases[i].name, (unsigned long long)c.after.retransmitted);
        }
        if (isnan(cmp_cases[i].ratio_change))
            CHECK_MSG(!c.has_ratio_change, "%s: no change", cmp_cases[i].name);
        else
            CHECK_MSG(c.has_ratio_change && fabs(c.ratio_change - cmp_cases[i].ratio_change) < 1e-6,
                      "%s: change %g", cmp_cases[i].name, c.ratio_change);
        ks_tcp_effect_done(&e);
        ks_tcp_sample_free(now);
    }
}

/* The samples of a swap as the journal and the history keep them. */
static void test_effect_json(void)
{
    ks_tcp_effect e = {0}, back = {0}, copy = {0};
    json_object *o, *o2, *bad;
    _cleanup_free_ char *err = NULL;

    e.baseline = mk("2026-11-30T00:00:00Z", "b1", "old", T0, 100, 2);
    e.after = mk("2026-11-30T02:00:00Z", "b2", "new", T0, 200, 1);
    o = ks_tcp_effect_to_json(&e);
    CHECK(o);
    CHECK_INTEQ(ks_tcp_effect_from_json(o, &back, NULL), 0);
    CHECK(back.baseline && !back.pinned && back.after);
    CHECK_INTEQ(ks_tcp_effect_copy(&back, &copy), 0);
    o2 = ks_tcp_effect_to_json(&copy);
    CHECK(o2 && json_object_equal(o, o2));
    CHECK(!ks_tcp_effect_is_empty(&copy));
    bad = json_tokener_parse("{\"pinned\": {\"at\": \"x\"}}");
    CHECK_INTEQ(ks_tcp_effect_from_json(bad, &e, &err), -EBADMSG);
    CHECK(err && strstr(err, "'pinned': "));
    CHECK(e.baseline); /* untouched on failure */
    json_object_put(bad);
    json_object_put(o);
    json_object_put(o2);
    ks_tcp_effect_done(&e);
    ks_tcp_effect_done(&back);
    ks_tcp_effect_done(&copy);
    CHECK(ks_tcp_effect_is_empty(&copy));
}

int main(void)
{
    test_summarize();
    test_json();
    test_figures();
    test_change();
    test_compare();
    test_effect_json();
    TEST_DONE();
}
