/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The congestion-control and retransmissions checks (checks/check-cc.c, check-retrans.c) on
 * fixture roots made here: tables of connections, sysctls, module versions and counters, each
 * with the verdict, whether it is required and the words of its detail; and which check the
 * configuration puts in the checklist.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "checks/check.h"
#include "lib/basic/util.h"
#include "lib/host/tcpsample.h"
#include "test.h"

static char base[] = "/tmp/kswap-check-cc.XXXXXX";

static void put(const char *rel, const char *text)
{
    _cleanup_free_ char *path = ks_asprintf("%s/%s", base, rel);
    _cleanup_free_ char *cmd = ks_asprintf("mkdir -p \"$(dirname '%s')\"", path);
    FILE *f;

    if (system(cmd) != 0)
        abort();
    if (!text) {
        unlink(path);
        return;
    }
    f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static ks_root *fresh_root(void)
{
    _cleanup_free_ char *cmd = ks_asprintf("rm -rf '%s' && mkdir -p '%s'", base, base);
    ks_root *root = NULL;

    if (system(cmd) != 0 || ks_root_open(base, &root) < 0)
        abort();
    return root;
}

#define C(local, remote, cc)                                                                       \
    "{\"local\": \"" local "\", \"remote\": \"" remote "\", \"congestion_control\": " cc "}"
#define BBR1 C("10.0.0.2:443", "203.0.113.1:50000", "\"bbr\"")
#define BBR2 C("10.0.0.2:443", "203.0.113.2:50001", "\"bbr\"")
#define CUBIC C("10.0.0.2:8443", "203.0.113.3:50002", "\"cubic\"")
#define RENO C("10.0.0.2:22", "198.51.100.9:50003", "\"reno\"")
#define LOOP C("127.0.0.1:8080", "127.0.0.1:40000", "\"cubic\"")

static const struct {
    const char *name;
    const char *conns;   /* the fixture's connections; NULL: no fixture file */
    const char *sysctl;  /* live net.ipv4.tcp_congestion_control */
    const char *version; /* sys/module/tcp_bbr/version; NULL: none */
    const char *want;    /* the check's algorithm */
    bool trial;          /* judging the trial boot */
    int ret;
    bool required;
    const char *detail; /* words the detail holds */
} cc_cases[] = {
    {"every connection runs bbr", BBR1 "," BBR2, "bbr", "3", "bbr", true, 1, true,
     "2 of 2 connections run bbr (net.ipv4.tcp_congestion_control = bbr, tcp_bbr version 3)"},
    {"sysctl says bbr, one runs cubic", BBR1 "," CUBIC, "bbr", "3", "bbr", true, 0, true,
     "1 of 2 connections run cubic, not bbr (net.ipv4.tcp_congestion_control = bbr, tcp_bbr "
     "version 3); their local ports: 8443"},
    {"two others", BBR1 "," CUBIC "," RENO, "bbr", "3", "bbr", true, 0, true,
     "2 of 3 connections run another congestion control than bbr (cubic 1, reno 1;"},
    {"a name the kernel did not say", C("10.0.0.2:1", "10.0.0.9:2", "null"), "bbr", "3", "bbr",
     true, 0, true, "1 of 1 connections run unknown, not bbr"},
    {"loopback only: a quiet node", LOOP, "bbr", "3", "bbr", true, 0, false,
     "no established TCP connection yet (loopback aside)"},
    {"no fixture: a quiet node", NULL, "bbr", "3", "bbr", true, 0, false,
     "no established TCP connection yet"},
    {"loopback does not count against", BBR1 "," LOOP, "bbr", "3", "bbr", true, 1, true,
     "1 of 1 connections run bbr"},
    {"BBRv1 declares no version", BBR1, "bbr", NULL, "bbr", true, 1, true,
     "tcp_bbr declares no version: BBRv1"},
    {"the sysctl fell back to cubic", CUBIC, "cubic", NULL, "bbr", true, 0, true,
     "1 of 1 connections run cubic, not bbr (net.ipv4.tcp_congestion_control = cubic"},
    {"another algorithm wanted: no version", CUBIC, "cubic", "3", "cubic", true, 1, true,
     "1 of 1 connections run cubic (net.ipv4.tcp_congestion_control = cubic)"},
    {"a broken fixture cannot be checked", "{\"local\": 5}", "bbr", "3", "bbr", true, -EBADMSG,
     false, "cannot read the connections: connections[0]: 'local'"},
    {"not the trial boot: reported, never required", BBR1 "," CUBIC, "bbr", "3", "bbr", false, 0,
     false,
     "1 of 2 connections run cubic, not bbr (net.ipv4.tcp_congestion_control = bbr, tcp_bbr "
     "version 3); their local ports: 8443; not the trial boot: a connection may be older than the "
     "setting (reported, required on the trial boot)"},
    {"not the trial boot, all on bbr: a pass", BBR1, "bbr", "3", "bbr", false, 1, false,
     "1 of 1 connections run bbr"},
};

static void test_cc(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cc_cases); i++) {
        _cleanup_root_ ks_root *root = fresh_root();
        _cleanup_free_ char *doc =
            cc_cases[i].conns ? ks_asprintf("{\"connections\": [%s]}", cc_cases[i].conns) : NULL;
        _cleanup_free_ char *sys = ks_asprintf("%s\n", cc_cases[i].sysctl);
        _cleanup_free_ char *ver =
            cc_cases[i].version ? ks_asprintf("%s\n", cc_cases[i].version) : NULL;
        ks_check chk = {.arg = (char *)cc_cases[i].want, .required = true};
        ks_check_ctx ctx = {.root = root, .trial = cc_cases[i].trial};
        int r;

        put("proc/net/kswap-sock-diag.json", doc);
        put("proc/sys/net/ipv4/tcp_congestion_control", sys);
        put("sys/module/tcp_bbr/version", ver);
        r = ks_check_cc(&ctx, &chk);
        CHECK_MSG(r == cc_cases[i].ret, "%s: %d", cc_cases[i].name, r);
        if (r >= 0)
            CHECK_MSG(chk.required == cc_cases[i].required, "%s: required", cc_cases[i].name);
        CHECK_MSG(chk.detail && strstr(chk.detail, cc_cases[i].detail), "%s: '%s'",
                  cc_cases[i].name, strempty(chk.detail));
        free(chk.detail);
    }
}

static const struct {
    const char *name;
    const char *conf;       /* [accept] lines */
    const char *live;       /* proc/sys/net/ipv4/tcp_congestion_control */
    const char *configured; /* etc/sysctl.d/60-net.conf's value; NULL: no file */
    int ret;
    const char *id; /* the check added; NULL: none */
} add_cases[] = {
    {"auto: the live sysctl says bbr", "", "bbr", NULL, 0, "congestion-control:bbr"},
    {"auto: sysctl.d says bbr, the live value fell back", "", "cubic", "bbr", 0,
     "congestion-control:bbr"},
    {"auto: nothing says bbr", "", "cubic", "cubic", 0, NULL},
    {"auto spelled out", "congestion_control = auto\n", "bbr", NULL, 0, "congestion-control:bbr"},
    {"no", "congestion_control = no\n", "bbr", "bbr", 0, NULL},
    {"a name", "congestion_control = cubic\n", "bbr", NULL, 0, "congestion-control:cubic"},
    {"the last value counts", "congestion_control = no\ncongestion_control = bbr\n", "cubic", NULL,
     0, "congestion-control:bbr"},
};

static void test_add(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(add_cases); i++) {
        _cleanup_root_ ks_root *root = fresh_root();
        _cleanup_config_ ks_config *cfg = ks_config_new();
        _cleanup_free_ char *text = ks_asprintf("[accept]\n%s", add_cases[i].conf);
        _cleanup_free_ char *live = ks_asprintf("%s\n", add_cases[i].live);
        _cleanup_free_ char *d = add_cases[i].configured
                                     ? ks_asprintf("net.ipv4.tcp_congestion_control "
                                                   "= %s\n",
                                                   add_cases[i].configured)
                                     : NULL;
        _cleanup_free_ char *err = NULL;
        ks_checklist l = {0};
        int r;

        CHECK_MSG(ks_config_parse(cfg, text, "test", &err) == 0, "%s: config: %s",
                  add_cases[i].name, strempty(err));
        put("proc/sys/net/ipv4/tcp_congestion_control", live);
        put("etc/sysctl.d/60-net.conf", d);
        r = ks_checklist_from_config(root, cfg, &l, &err);
        CHECK_MSG(r == add_cases[i].ret, "%s: %d", add_cases[i].name, r);
        CHECK_MSG(add_cases[i].id ? l.n == 1 && streq(l.v[0].id, add_cases[i].id) : l.n == 0,
                  "%s: %s", add_cases[i].name, l.n ? l.v[0].id : "(none)");
        ks_checklist_done(&l);
    }
}

#define SNMP(out, retrans)                                                                         \
    "Tcp: RtoAlgorithm InSegs OutSegs RetransSegs\nTcp: 1 7 " #out " " #retrans "\n"

static const struct {
    const char *name;
    const char *snmp; /* proc/net/snmp now (the trial since its boot) */
    bool baseline;    /* a baseline (100000 sent, 2000 retransmitted: 2 %) */
    const char *arg;  /* PERCENT:MIN:mode */
    int ret;
    bool required;
    const char *detail;
} rt_cases[] = {
    {"no baseline", SNMP(500000, 100), false, "50:100000:required", 0, false,
     "no baseline to compare with"},
    {"too little traffic yet", SNMP(5000, 500), true, "50:100000:required", 0, false,
     "not judged yet: 5000 segments sent since the boot, fewer than retrans_min_segments "
     "100000 (10.000 % retransmitted so far)"},
    {"a baseline with too little traffic", SNMP(500000, 100), true, "50:1000000:required", 0, false,
     "not judged: the baseline saw 100000 segments sent"},
    {"better than the baseline", SNMP(200000, 1000), true, "50:100000:required", 1, true,
     "0.500 % of 200000 segments retransmitted since the boot, the baseline 2.000 % of 100000 "
     "(6.8.0-48-generic): within the limit 3.100 % (+50 %)"},
    {"clearly worse, required: refuses the pin", SNMP(200000, 8000), true, "50:100000:required", 0,
     true,
     "4.000 % of 200000 segments retransmitted since the boot, the baseline 2.000 % of "
     "100000 (6.8.0-48-generic): worse than the limit 3.100 %"},
    {"clearly worse, wanted: flagged only", SNMP(200000, 8000), true, "50:100000:wanted", 0, false,
     "worse than the limit"},
    {"a bad argument", SNMP(1, 0), true, "fifty", -EINVAL, false, NULL},
};

static void test_retrans(void)
{
    ks_tcp_sample b = {.at = (char *)"2026-11-30T00:00:00Z",
                       .kernel = (char *)"6.8.0-48-generic",
                       .counters = {.out_segs = 100000, .retrans_segs = 2000}};

    for (size_t i = 0; i < ARRAY_SIZE(rt_cases); i++) {
        _cleanup_root_ ks_root *root = fresh_root();
        ks_check chk = {.arg = (char *)rt_cases[i].arg, .required = true};
        ks_check_ctx ctx = {.root = root, .tcp_baseline = rt_cases[i].baseline ? &b : NULL};
        int r;

        put("proc/net/snmp", rt_cases[i].snmp);
        r = ks_check_retrans(&ctx, &chk);
        CHECK_MSG(r == rt_cases[i].ret, "%s: %d", rt_cases[i].name, r);
        if (r >= 0)
            CHECK_MSG(chk.required == rt_cases[i].required, "%s: required", rt_cases[i].name);
        if (rt_cases[i].detail)
            CHECK_MSG(chk.detail && strstr(chk.detail, rt_cases[i].detail), "%s: '%s'",
                      rt_cases[i].name, strempty(chk.detail));
        free(chk.detail);
    }
}

static void test_add_retrans(void)
{
    static const struct {
        const char *conf;
        const char *arg; /* NULL: no check */
        bool required;
    } t[] = {
        {"", NULL, false},
        {"retrans_max_increase = 0\n", NULL, false},
        {"retrans_max_increase = 50\n", "50:100000:wanted", false},
        {"retrans_max_increase = 25\nretrans_min_segments = 5000\nretrans_required = yes\n",
         "25:5000:required", true},
    };

    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        _cleanup_root_ ks_root *root = fresh_root();
        _cleanup_config_ ks_config *cfg = ks_config_new();
        /* congestion_control = no: the retransmissions check alone. */
        _cleanup_free_ char *text = ks_asprintf("[accept]\ncongestion_control = no\n%s", t[i].conf);
        ks_checklist l = {0};

        CHECK(ks_config_parse(cfg, text, "test", NULL) == 0);
        CHECK_INTEQ(ks_checklist_from_config(root, cfg, &l, NULL), 0);
        CHECK_MSG(t[i].arg
                      ? l.n == 1 && streq(l.v[0].arg, t[i].arg) &&
                            l.v[0].required == t[i].required && streq(l.v[0].id, "retransmissions")
                      : l.n == 0,
                  "retrans config %zu", i);
        ks_checklist_done(&l);
    }
}

/* Both kinds are in the registry, and their keys are read with the configuration. */
static void test_registry(void)
{
    static const struct {
        const char *conf;
        bool ok;
        const char *error; /* words of the configuration's error */
    } t[] = {
        {"congestion_control = bbr\n", true, NULL},
        {"congestion_control = auto\n", true, NULL},
        {"congestion_control = ../bbr\n", false, "a congestion control name, auto or no"},
        {"congestion_control = averyveryverylongname\n", false, "congestion_control"},
        {"retrans_max_increase = 50\nretrans_min_segments = 5000\n", true, NULL},
        {"retrans_min_segments = 10\n", false, "retrans_min_segments"},
        {"retrans_required = maybe\n", false, "retrans_required"},
    };
    const char *arg = NULL;
    const ks_check_kind *kind = ks_check_kind_of("congestion-control:bbr", &arg);

    CHECK(kind && kind->run == ks_check_cc && kind->max_fields == 1 && streq_ptr(arg, "bbr"));
    kind = ks_check_kind_of("retransmissions", &arg);
    CHECK(kind && kind->run == ks_check_retrans && !arg);
    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        _cleanup_config_ ks_config *cfg = ks_config_new();
        _cleanup_free_ char *text = ks_asprintf("[accept]\n%s", t[i].conf);
        _cleanup_free_ char *err = NULL;
        int r = ks_config_parse(cfg, text, "test", &err);

        CHECK_MSG(t[i].ok ? r == 0 : r < 0 && err && strstr(err, t[i].error), "%s: %d '%s'",
                  t[i].conf, r, strempty(err));
    }
}

int main(void)
{
    if (!mkdtemp(base) || ks_checks_register_config() < 0)
        return 1;
    test_cc();
    test_add();
    test_retrans();
    test_add_retrans();
    test_registry();
    {
        _cleanup_free_ char *cmd = ks_asprintf("rm -rf '%s'", base);
        (void)!system(cmd);
    }
    TEST_DONE();
}
