/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc/net/snmp and netstat (lib/host/netstat.c): real files and a table of broken ones. */
#include "lib/basic/util.h"
#include "lib/host/netstat.h"
#include "test.h"

#define TCP_KEYS                                                                                   \
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets "   \
    "CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
#define TCP_VALS "Tcp: 1 200 120000 -1 4 1 0 0 0 39 642 7 0 0 0\n"
#define IP_PAIR "Ip: Forwarding DefaultTTL\nIp: 2 64\n"

static const struct {
    const char *name;
    const char *text;
    const char *section, *key;
    int ret;
    uint64_t value;
} cases[] = {
    {"OutSegs", IP_PAIR TCP_KEYS TCP_VALS, "Tcp", "OutSegs", 0, 642},
    {"RetransSegs", IP_PAIR TCP_KEYS TCP_VALS, "Tcp", "RetransSegs", 0, 7},
    {"the last key", TCP_KEYS TCP_VALS, "Tcp", "InCsumErrors", 0, 0},
    {"MaxConn is -1: out of range", TCP_KEYS TCP_VALS, "Tcp", "MaxConn", -ERANGE, 0},
    {"a key that is not there", TCP_KEYS TCP_VALS, "Tcp", "NoSuchKey", -ENOENT, 0},
    {"a section that is not there", IP_PAIR, "Tcp", "OutSegs", -ENOENT, 0},
    {"a prefix of a section is not it", "TcpExt: OutSegs\nTcpExt: 5\n", "Tcp", "OutSegs", -ENOENT,
     0},
    {"no trailing newline", "Tcp: OutSegs RetransSegs\nTcp: 10 2", "Tcp", "RetransSegs", 0, 2},
    {"blank lines between pairs", "Ip: A\nIp: 1\n\nTcp: OutSegs\nTcp: 9\n", "Tcp", "OutSegs", 0, 9},
    {"64-bit values", "Tcp: OutSegs\nTcp: 18446744073709551615\n", "Tcp", "OutSegs", 0, UINT64_MAX},
    {"empty text", "", "Tcp", "OutSegs", -ENOENT, 0},
    {"fewer values than keys", "Tcp: OutSegs RetransSegs\nTcp: 10\n", "Tcp", "OutSegs", -EBADMSG,
     0},
    {"more values than keys", "Tcp: OutSegs\nTcp: 10 11\n", "Tcp", "OutSegs", -EBADMSG, 0},
    {"a value that is not a number", "Tcp: OutSegs\nTcp: ten\n", "Tcp", "OutSegs", -EBADMSG, 0},
    {"a value past 64 bits", "Tcp: OutSegs\nTcp: 18446744073709551616\n", "Tcp", "OutSegs",
     -EBADMSG, 0},
    {"a broken pair elsewhere is still an error", "Ip: A B\nIp: 1\n" TCP_KEYS TCP_VALS, "Tcp",
     "OutSegs", -EBADMSG, 0},
    {"keys without values", "Tcp: OutSegs\n", "Tcp", "OutSegs", -EBADMSG, 0},
    {"values of another section", "Tcp: OutSegs\nUdp: 10\n", "Tcp", "OutSegs", -EBADMSG, 0},
    {"a line without a section", "Tcp: OutSegs\n 10\n", "Tcp", "OutSegs", -EBADMSG, 0},
    {"a lone minus", "Tcp: OutSegs\nTcp: -\n", "Tcp", "OutSegs", -EBADMSG, 0},
};

static void test_table(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        uint64_t v = 12345;
        int r = ks_netstat_get(cases[i].text, strlen(cases[i].text), cases[i].section, cases[i].key,
                               &v);
        CHECK_MSG(r == cases[i].ret, "%s: %d", cases[i].name, r);
        if (cases[i].ret == 0)
            CHECK_MSG(v == cases[i].value, "%s: %llu", cases[i].name, (unsigned long long)v);
        else
            CHECK_MSG(v == 12345, "%s: the value is untouched on failure", cases[i].name);
    }
}

/* This machine's files (Linux 6.18, in a network namespace after a test's traffic). */
static void test_real(void)
{
    _cleanup_free_ char *sp = ks_asprintf("%s/tcp/snmp-6.18", ks_fixture_dir());
    _cleanup_free_ char *np = ks_asprintf("%s/tcp/netstat-6.18", ks_fixture_dir());
    _cleanup_free_ char *snmp = NULL, *netstat = NULL;
    size_t sl = 0, nl = 0;
    ks_tcp_counters c = {0};

    snmp = ks_test_slurp(sp, &sl);
    netstat = ks_test_slurp(np, &nl);
    CHECK(snmp && netstat);
    if (!snmp || !netstat)
        return;
    CHECK_INTEQ(ks_tcp_counters_parse(snmp, sl, netstat, nl, &c), 0);
    CHECK_INTEQ(c.out_segs, 642);
    CHECK_INTEQ(c.retrans_segs, 0);
    CHECK_INTEQ(c.in_segs, 39);
    CHECK(c.has_ext);
    CHECK_INTEQ(c.timeouts, 0);
    CHECK_INTEQ(c.lost_retransmit, 0);
    /* Without netstat: the Tcp: counters alone. */
    CHECK_INTEQ(ks_tcp_counters_parse(snmp, sl, NULL, 0, &c), 0);
    CHECK(!c.has_ext);
    /* A netstat without TcpExt: the same. */
    CHECK_INTEQ(ks_tcp_counters_parse(snmp, sl, "IpExt: A\nIpExt: 1\n", 18, &c), 0);
    CHECK(!c.has_ext);
    /* snmp without Tcp: not the kernel's file. */
    CHECK_INTEQ(ks_tcp_counters_parse(IP_PAIR, strlen(IP_PAIR), netstat, nl, &c), -EBADMSG);
    /* A damaged netstat is an error, not a silent has_ext false. */
    CHECK_INTEQ(ks_tcp_counters_parse(snmp, sl, "TcpExt: A B\nTcpExt: 1\n", 22, &c), -EBADMSG);
}

int main(void)
{
    test_table();
    test_real();
    TEST_DONE();
}
