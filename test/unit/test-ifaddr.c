/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Interface addresses: proc/net/if_inet6 and proc/net/route as the kernel prints them (x86),
 * malformed lines, and which addresses are stable from boot to boot. */
#include "checks/ifaddr.h"
#include "lib/basic/util.h"
#include "test.h"

#define ROUTE_HDR                                                                                  \
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT        "  \
    "                                                   \n"

static void test_inet6(void)
{
    static const struct {
        const char *name, *text;
        int ret;
        size_t n;
        const char *ifname0, *prefix0;
        bool stable0;
    } cases[] = {
        {"a global address", "20010db8000000000000000000000005 02 40 00 80     eth0\n", 0, 1,
         "eth0", "2001:db8::5/64", true},
        {"link-local", "fe80000000000000505400fffe123456 02 40 20 80     eth0\n", 0, 1, "eth0",
         "fe80::5054:ff:fe12:3456/64", false},
        {"loopback", "00000000000000000000000000000001 01 80 10 80       lo\n", 0, 1, "lo",
         "::1/128", false},
        {"temporary (privacy)", "20010db800000000a1b2c3d4e5f60718 02 40 00 01     eth0\n", 0, 1,
         "eth0", "2001:db8::a1b2:c3d4:e5f6:718/64", false},
        {"deprecated", "20010db8000000000000000000000005 02 40 00 20     eth0\n", 0, 1, "eth0",
         "2001:db8::5/64", false},
        {"tentative", "20010db8000000000000000000000005 02 40 00 40     eth0\n", 0, 1, "eth0",
         "2001:db8::5/64", false},
        {"DAD failed", "20010db8000000000000000000000005 02 40 00 08     eth0\n", 0, 1, "eth0",
         "2001:db8::5/64", false},
        {"a ULA on a WireGuard interface, ifindex over 255",
         "fd000000000000000000000000000001 10a 40 00 80      wg0\n", 0, 1, "wg0", "fd00::1/64",
         true},
        {"empty", "", 0, 0, NULL, NULL, false},
        {"blank lines", "\n  \n", 0, 0, NULL, NULL, false},
        {"address too short", "20010db800000000000000000000005 02 40 00 80     eth0\n", -EBADMSG, 0,
         NULL, NULL, false},
        {"address not hex", "20010db800000000000000000000000x 02 40 00 80     eth0\n", -EBADMSG, 0,
         NULL, NULL, false},
        {"prefix over 128", "20010db8000000000000000000000005 02 81 00 80     eth0\n", -EBADMSG, 0,
         NULL, NULL, false},
        {"a field missing", "20010db8000000000000000000000005 02 40 00     eth0\n", -EBADMSG, 0,
         NULL, NULL, false},
        {"a field more", "20010db8000000000000000000000005 02 40 00 80 80     eth0\n", -EBADMSG, 0,
         NULL, NULL, false},
        {"a name with a slash", "20010db8000000000000000000000005 02 40 00 80     a/b\n", -EBADMSG,
         0, NULL, NULL, false},
        {"a name too long", "20010db8000000000000000000000005 02 40 00 80 abcdefghijklmnop\n",
         -EBADMSG, 0, NULL, NULL, false},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_ifaddrs a = {0};
        int r = ks_ifaddr_parse_inet6(cases[i].text, strlen(cases[i].text), &a);
        CHECK_MSG(r == cases[i].ret && a.n == cases[i].n, "%s: %d, %zu", cases[i].name, r, a.n);
        if (r == 0 && a.n > 0) {
            CHECK_MSG(a.v[0].v6 && streq(a.v[0].ifname, cases[i].ifname0) &&
                          streq(a.v[0].prefix, cases[i].prefix0) &&
                          ks_ifaddr_is_stable(&a.v[0]) == cases[i].stable0,
                      "%s: %s %s", cases[i].name, a.v[0].ifname, a.v[0].prefix);
        }
        ks_ifaddrs_done(&a);
    }
}

static void test_route4(void)
{
    static const struct {
        const char *name, *text;
        int ret;
        size_t n;
        const char *ifname0, *prefix0;
    } cases[] = {
        {"the default route and a connected /24",
         ROUTE_HDR "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
                   "eth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n",
         0, 1, "eth0", "10.0.0.0/24"},
        {"a /32 route to a gateway on the link is no network",
         ROUTE_HDR "eth0\t0101A8C0\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n", 0, 0, NULL,
         NULL},
        {"a route via a gateway is no network",
         ROUTE_HDR "eth0\t0000A8C0\t0100000A\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0\n", 0, 0, NULL,
         NULL},
        {"a route that is down",
         ROUTE_HDR "eth0\t0000000A\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", 0, 0, NULL,
         NULL},
        {"a /16 on a WireGuard interface",
         ROUTE_HDR "wg0\t0000090A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n", 0, 1, "wg0",
         "10.9.0.0/16"},
        {"header only", ROUTE_HDR, 0, 0, NULL, NULL},
        {"empty", "", 0, 0, NULL, NULL},
        {"no header", "eth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n", -EBADMSG, 0,
         NULL, NULL},
        {"a field missing", ROUTE_HDR "eth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\n",
         -EBADMSG, 0, NULL, NULL},
        {"a mask not hex",
         ROUTE_HDR "eth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFG\t0\t0\t0\n", -EBADMSG, 0,
         NULL, NULL},
        {"flags of 3 digits",
         ROUTE_HDR "eth0\t0000000A\t00000000\t001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n", -EBADMSG, 0,
         NULL, NULL},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_ifaddrs a = {0};
        int r = ks_ifaddr_parse_route4(cases[i].text, strlen(cases[i].text), &a);
        CHECK_MSG(r == cases[i].ret && a.n == cases[i].n, "%s: %d, %zu", cases[i].name, r, a.n);
        if (r == 0 && a.n > 0)
            CHECK_MSG(!a.v[0].v6 && streq(a.v[0].ifname, cases[i].ifname0) &&
                          streq(a.v[0].prefix, cases[i].prefix0) && ks_ifaddr_is_stable(&a.v[0]),
                      "%s: %s %s", cases[i].name, a.v[0].ifname, a.v[0].prefix);
        ks_ifaddrs_done(&a);
    }
    /* Every prefix of a good text parses or fails cleanly (truncated reads). */
    {
        const char *t = cases[0].text;
        for (size_t n = 0; n <= strlen(t); n++) {
            ks_ifaddrs a = {0};
            int r = ks_ifaddr_parse_route4(t, n, &a);
            CHECK(r == 0 || r == -EBADMSG);
            ks_ifaddrs_done(&a);
        }
    }
}

int main(void)
{
    test_inet6();
    test_route4();
    TEST_DONE();
}
