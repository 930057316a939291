/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc/net/{tcp,tcp6,udp,udp6}: table of texts, mutated ones, and the listen/count helpers. */
#include "checks/procnet.h"
#include "lib/basic/util.h"
#include "test.h"

#define TCP_HDR                                                                                    \
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "          \
    "timeout inode\n"
#define TCP6_HDR                                                                                   \
    "  sl  local_address                         remote_address                        st "        \
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
#define UDP_HDR                                                                                    \
    "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "         \
    "timeout inode ref pointer drops\n"

static const struct {
    const char *name;
    const char *text;
    bool v6;
    int ret;         /* parse result */
    size_t n;        /* sockets */
    int listen_port; /* a port that listens (-1: none checked) */
    ks_sock_proto proto;
    size_t established;
    bool first_wildcard;
} cases[] = {
    {"tcp listen and established",
     TCP_HDR "   0: 00000000:01BB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
             "       0 1234 1 0000000000000000 100 0 0 10 0\n"
             "   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000 "
             "       0 1235 1 0000000000000000 20 4 30 10 -1\n",
     false, 0, 2, 443, KS_SOCK_TCP, 1, true},
    {"header only", TCP_HDR, false, 0, 0, -1, KS_SOCK_TCP, 0, false},
    {"tcp6 listen on ::",
     TCP6_HDR "   0: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 "
              "0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0 100 0 0 10 0\n",
     true, 0, 1, 443, KS_SOCK_TCP6, 0, true},
    {"udp bound socket",
     UDP_HDR "  100: 00000000:CA6C 00000000:0000 07 00000000:00000000 00:00000000 00000000     0 "
             "       0 77 2 0000000000000000 0\n",
     false, 0, 1, 51820, KS_SOCK_UDP, 0, true},
    {"tcp in SYN_SENT does not listen",
     TCP_HDR "   0: 0200000A:01BB 0300000A:0050 02 00000000:00000000 00:00000000 00000000 0 0 1\n",
     false, 0, 1, -1, KS_SOCK_TCP, 0, false},
    {"blank lines are skipped", TCP_HDR "\n   \n", false, 0, 0, -1, KS_SOCK_TCP, 0, false},
    {"no trailing newline", TCP_HDR "   0: 0100007F:0016 00000000:0000 0A 0", false, 0, 1, 22,
     KS_SOCK_TCP, 0, false},
    {"empty text", "", false, -EBADMSG, 0, -1, KS_SOCK_TCP, 0, false},
    {"no header", "   0: 0100007F:0016 00000000:0000 0A\n", false, -EBADMSG, 0, -1, KS_SOCK_TCP, 0,
     false},
    {"short address", TCP_HDR "   0: 0100007:0016 00000000:0000 0A\n", false, -EBADMSG, 0, -1,
     KS_SOCK_TCP, 0, false},
    {"v4 line in a v6 file", TCP6_HDR "   0: 0100007F:0016 00000000:0000 0A\n", true, -EBADMSG, 0,
     -1, KS_SOCK_TCP6, 0, false},
    {"not hex", TCP_HDR "   0: 0100007G:0016 00000000:0000 0A\n", false, -EBADMSG, 0, -1,
     KS_SOCK_TCP, 0, false},
    {"missing state", TCP_HDR "   0: 0100007F:0016 00000000:0000\n", false, -EBADMSG, 0, -1,
     KS_SOCK_TCP, 0, false},
    {"three-digit state", TCP_HDR "   0: 0100007F:0016 00000000:0000 0AB\n", false, -EBADMSG, 0, -1,
     KS_SOCK_TCP, 0, false},
    {"no slot number", TCP_HDR "  : 0100007F:0016 00000000:0000 0A\n", false, -EBADMSG, 0, -1,
     KS_SOCK_TCP, 0, false},
};

int main(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_socks s = {0};
        int r = ks_procnet_parse(cases[i].text, strlen(cases[i].text), cases[i].v6, &s);

        CHECK_MSG(r == cases[i].ret, "%s: %d", cases[i].name, r);
        if (r < 0) {
            CHECK(s.v == NULL && s.n == 0);
            continue;
        }
        CHECK_MSG(s.n == cases[i].n, "%s: %zu sockets", cases[i].name, s.n);
        if (cases[i].listen_port >= 0)
            CHECK_MSG(ks_socks_listens(&s, cases[i].proto, (uint16_t)cases[i].listen_port), "%s",
                      cases[i].name);
        /* Port 1 never appears in the table. */
        CHECK(!ks_socks_listens(&s, cases[i].proto, 1));
        CHECK_INTEQ(ks_socks_count_state(&s, KS_TCP_ESTABLISHED), cases[i].established);
        if (s.n)
            CHECK_MSG(ks_sock_is_wildcard(&s.v[0], cases[i].v6) == cases[i].first_wildcard, "%s",
                      cases[i].name);
        ks_socks_done(&s);
    }

    /* Every prefix of a good text parses or fails cleanly (truncated reads). */
    {
        const char *t = cases[0].text;
        for (size_t n = 0; n <= strlen(t); n++) {
            ks_socks s = {0};
            int r = ks_procnet_parse(t, n, false, &s);
            CHECK(r == 0 || r == -EBADMSG);
            ks_socks_done(&s);
        }
    }
    /* A UDP socket in LISTEN state is not "bound"; a TCP socket in CLOSE does not listen. */
    {
        const char *t = TCP_HDR "   0: 00000000:0050 00000000:0000 07 0\n";
        ks_socks s = {0};
        CHECK(ks_procnet_parse(t, strlen(t), false, &s) == 0);
        CHECK(!ks_socks_listens(&s, KS_SOCK_TCP, 80));
        CHECK(ks_socks_listens(&s, KS_SOCK_UDP, 80));
        ks_socks_done(&s);
    }
    /* Inbound connections per port: ESTABLISHED, the local port, peers off loopback only. The
     * addresses as x86 prints them (each 32-bit word little-endian: 127.0.0.1 is 0100007F). */
    {
        const char *t4 = TCP_HDR
            "   0: 00000000:01BB 00000000:0000 0A 0\n"  /* listening on 443 */
            "   1: 0200000A:01BB 0300000A:D431 01 0\n"  /* 10.0.0.3 -> 443 */
            "   2: 0200000A:01BB 0400000A:D432 01 0\n"  /* 10.0.0.4 -> 443 */
            "   3: 0100007F:01BB 0100007F:D433 01 0\n"  /* 127.0.0.1 -> 443: the node itself */
            "   4: 0100007F:01BB 0500007F:D434 01 0\n"  /* 127.0.0.5 -> 443 */
            "   5: 0200000A:01BB 0600000A:D435 06 0\n"  /* TIME_WAIT */
            "   6: 0200000A:D436 0700000A:01BB 01 0\n"; /* outbound to 443 elsewhere */
        const char *t6 = TCP6_HDR "   0: 00000000000000000000000000000000:01BB "
                                  "00000000000000000000000000000000:0000 0A 0\n"
                                  "   1: 0000000000000000FFFF00000200000A:01BB "
                                  "0000000000000000FFFF00000300000A:D431 01 0\n"
                                  "   2: 00000000000000000000000001000000:01BB "
                                  "00000000000000000000000001000000:D432 01 0\n"
                                  "   3: 0000000000000000FFFF00000100007F:01BB "
                                  "0000000000000000FFFF00000100007F:D433 01 0\n"
                                  "   4: B80D0120000000000000000001000000:01BB "
                                  "B80D0120000000000000000002000000:D434 01 0\n";
        ks_socks s4 = {0}, s6 = {0};
        CHECK(ks_procnet_parse(t4, strlen(t4), false, &s4) == 0);
        CHECK(ks_procnet_parse(t6, strlen(t6), true, &s6) == 0);
        CHECK_INTEQ(ks_socks_count_inbound(&s4, false, 443), 2);
        CHECK_INTEQ(ks_socks_count_inbound(&s4, false, 22), 0);
        CHECK_INTEQ(ks_socks_count_inbound(&s6, true, 443), 2); /* ::ffff:10.0.0.3, 2001:db8::2 */
        CHECK(s4.n == 7 && ks_sock_remote_is_loopback(&s4.v[3], false) &&
              ks_sock_remote_is_loopback(&s4.v[4], false) &&
              !ks_sock_remote_is_loopback(&s4.v[1], false));
        CHECK(s6.n == 5 && ks_sock_remote_is_loopback(&s6.v[2], true) &&
              ks_sock_remote_is_loopback(&s6.v[3], true) &&
              !ks_sock_remote_is_loopback(&s6.v[1], true) &&
              !ks_sock_remote_is_loopback(&s6.v[4], true));
        ks_socks_done(&s4);
        ks_socks_done(&s6);
    }
    CHECK_STREQ(ks_sock_proto_to_string(KS_SOCK_UDP6), "udp6");
    CHECK(ks_sock_proto_from_string("tcp6") == KS_SOCK_TCP6);
    CHECK(ks_sock_proto_from_string("sctp") < 0);
    CHECK(ks_sock_proto_from_string(NULL) < 0);
    TEST_DONE();
}
