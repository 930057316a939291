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
    CHECK_STREQ(ks_sock_proto_to_string(KS_SOCK_UDP6), "udp6");
    CHECK(ks_sock_proto_from_string("tcp6") == KS_SOCK_TCP6);
    CHECK(ks_sock_proto_from_string("sctp") < 0);
    CHECK(ks_sock_proto_from_string(NULL) < 0);
    TEST_DONE();
}
