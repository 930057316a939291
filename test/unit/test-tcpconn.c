/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The connections' JSON (lib/host/tcpconn.c): the fixture that stands in for sock_diag under
 * --root, a table of documents good and bad; a round trip through the writer; endpoints.
 */
#include <arpa/inet.h>

#include "lib/basic/util.h"
#include "lib/host/tcpdiag.h"
#include "test.h"

#define ONE(fields) "{\"connections\": [{" fields "}]}"
#define V4 "\"local\": \"10.0.0.1:443\", \"remote\": \"203.0.113.5:51234\", "

static const struct {
    const char *name;
    const char *text;
    int ret;
    size_t n;
    const char *cc;    /* the first connection's */
    int family;        /* its family */
    bool has_info;     /* rtt_us was there */
    uint32_t rtt_us;   /* its RTT */
    uint64_t delivery; /* its delivery rate */
    bool loopback;     /* its peer is on this node */
    const char *error; /* a part of the message of a malformed document */
} cases[] = {
    {"the report's document: other keys are not read",
     "{\"command\": \"report\", \"now\": {}, \"connections\": [{" V4
     "\"congestion_control\": \"bbr\", \"rtt_us\": 23000, \"delivery_rate\": 1250000, "
     "\"retransmit_ratio\": 0.01, \"family\": \"ipv4\"}]}",
     0, 1, "bbr", AF_INET, true, 23000, 1250000, false, NULL},
    {"IPv6",
     ONE("\"local\": \"[2001:db8::1]:443\", \"remote\": \"[2001:db8::2]:50000\", "
         "\"congestion_control\": \"cubic\", \"rtt_us\": 5"),
     0, 1, "cubic", AF_INET6, true, 5, 0, false, NULL},
    {"without tcp_info", ONE(V4 "\"congestion_control\": null"), 0, 1, "", AF_INET, false, 0, 0,
     false, NULL},
    {"loopback",
     ONE("\"local\": \"127.0.0.1:8080\", \"remote\": \"127.0.0.1:40000\", "
         "\"congestion_control\": \"bbr\""),
     0, 1, "bbr", AF_INET, false, 0, 0, true, NULL},
    {"figures without rtt_us are no tcp_info (the fuzzer's round trip)",
     ONE(V4 "\"congestion_control\": \"bbr\", \"rttvar_us\": 5, \"delivery_rate\": 9"), 0, 1, "bbr",
     AF_INET, false, 0, 0, false, NULL},
    {"none", "{\"connections\": []}", 0, 0, NULL, 0, false, 0, 0, false, NULL},
    {"not JSON", "connections", -EBADMSG, 0, NULL, 0, false, 0, 0, false, "not valid JSON"},
    {"empty", "", -EBADMSG, 0, NULL, 0, false, 0, 0, false, NULL},
    {"no connections", "{\"now\": 1}", -EBADMSG, 0, NULL, 0, false, 0, 0, false,
     "'connections' is missing"},
    {"connections not an array", "{\"connections\": {}}", -EBADMSG, 0, NULL, 0, false, 0, 0, false,
     "not an array"},
    {"a connection that is not an object", "{\"connections\": [1]}", -EBADMSG, 0, NULL, 0, false, 0,
     0, false, "connections[0]: not an object"},
    {"local missing", ONE("\"remote\": \"10.0.0.2:1\", \"congestion_control\": \"bbr\""), -EBADMSG,
     0, NULL, 0, false, 0, 0, false, "'local' is missing"},
    {"an address without a port",
     ONE("\"local\": \"10.0.0.1\", \"remote\": \"10.0.0.2:1\", "
         "\"congestion_control\": \"bbr\""),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "'local': not an address and port"},
    {"a port past 65535",
     ONE("\"local\": \"10.0.0.1:70000\", \"remote\": \"10.0.0.2:1\", "
         "\"congestion_control\": \"bbr\""),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "'local'"},
    {"not an address",
     ONE("\"local\": \"example.com:80\", \"remote\": \"10.0.0.2:1\", "
         "\"congestion_control\": \"bbr\""),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "'local'"},
    {"IPv6 without brackets",
     ONE("\"local\": \"2001:db8::1:443\", \"remote\": \"10.0.0.2:1\", "
         "\"congestion_control\": \"bbr\""),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "'local'"},
    {"two families",
     ONE("\"local\": \"10.0.0.1:1\", \"remote\": \"[::1]:1\", "
         "\"congestion_control\": \"bbr\""),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "not of one address family"},
    {"congestion control missing", ONE(V4 "\"rtt_us\": 1"), -EBADMSG, 0, NULL, 0, false, 0, 0,
     false, "'congestion_control' is missing"},
    {"congestion control too long", ONE(V4 "\"congestion_control\": \"abcdefghijklmnopq\""),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "'congestion_control'"},
    {"congestion control with a space", ONE(V4 "\"congestion_control\": \"b br\""), -EBADMSG, 0,
     NULL, 0, false, 0, 0, false, "'congestion_control'"},
    {"congestion control with a control character",
     ONE(V4 "\"congestion_control\": \"bbr\\u001b[31m\""), -EBADMSG, 0, NULL, 0, false, 0, 0, false,
     "'congestion_control'"},
    {"congestion control a number", ONE(V4 "\"congestion_control\": 3"), -EBADMSG, 0, NULL, 0,
     false, 0, 0, false, "'congestion_control'"},
    {"a negative figure", ONE(V4 "\"congestion_control\": \"bbr\", \"rtt_us\": -1"), -EBADMSG, 0,
     NULL, 0, false, 0, 0, false, "'rtt_us': out of range"},
    {"a figure past 32 bits", ONE(V4 "\"congestion_control\": \"bbr\", \"segs_out\": 4294967296"),
     -EBADMSG, 0, NULL, 0, false, 0, 0, false, "'segs_out': out of range"},
    {"a figure as a string", ONE(V4 "\"congestion_control\": \"bbr\", \"rtt_us\": \"5\""), -EBADMSG,
     0, NULL, 0, false, 0, 0, false, "'rtt_us': not a whole number"},
    {"a figure as a fraction", ONE(V4 "\"congestion_control\": \"bbr\", \"rtt_us\": 5.5"), -EBADMSG,
     0, NULL, 0, false, 0, 0, false, "'rtt_us': not a whole number"},
    {"app_limited not a boolean",
     ONE(V4 "\"congestion_control\": \"bbr\", \"delivery_rate_app_limited\": 1"), -EBADMSG, 0, NULL,
     0, false, 0, 0, false, "not true or false"},
    {"a second connection broken: nothing",
     "{\"connections\": [{" V4 "\"congestion_control\": \"bbr\"}, {\"local\": 1}]}", -EBADMSG, 0,
     NULL, 0, false, 0, 0, false, "connections[1]: "},
    {"a NUL byte", "{\"connections\": []}\0x", -EBADMSG, 0, NULL, 0, false, 0, 0, false, NULL},
};

static void test_table(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_tcp_conns c = {0};
        _cleanup_free_ char *err = NULL;
        size_t len = strlen(cases[i].text);
        int r;

        if (streq(cases[i].name, "a NUL byte"))
            len += 2;
        r = ks_tcp_conns_parse_json(cases[i].text, len, &c, &err);
        CHECK_MSG(r == cases[i].ret, "%s: %d (%s)", cases[i].name, r, strempty(err));
        CHECK_MSG(c.n == cases[i].n, "%s: %zu", cases[i].name, c.n);
        if (cases[i].error)
            CHECK_MSG(err && strstr(err, cases[i].error), "%s: error '%s'", cases[i].name,
                      strempty(err));
        if (r < 0)
            CHECK_MSG(err, "%s: a malformed document says why", cases[i].name);
        if (c.n > 0) {
            CHECK_MSG(streq(c.v[0].cc, cases[i].cc), "%s: cc '%s'", cases[i].name, c.v[0].cc);
            CHECK_MSG(c.v[0].family == cases[i].family, "%s: family", cases[i].name);
            CHECK_MSG(c.v[0].has_info == cases[i].has_info, "%s: has_info", cases[i].name);
            CHECK_MSG(c.v[0].rtt_us == cases[i].rtt_us, "%s: rtt", cases[i].name);
            CHECK_MSG(c.v[0].delivery_rate == cases[i].delivery, "%s: delivery", cases[i].name);
            CHECK_MSG(ks_tcp_conn_is_loopback(&c.v[0]) == cases[i].loopback, "%s: loopback",
                      cases[i].name);
        }
        ks_tcp_conns_done(&c);
    }
}

/* What the report writes, the fixture reads back the same. */
static void test_round_trip(void)
{
    ks_tcp_conn a = {
        .family = AF_INET6,
        .local_port = 443,
        .remote_port = 50123,
        .uid = 33,
        .inode = 987654,
        .cc = "bbr",
        .has_info = true,
        .rtt_us = 41000,
        .rttvar_us = 2000,
        .min_rtt_us = 38000,
        .retrans = 1,
        .total_retrans = 12,
        .segs_out = 3000,
        .data_segs_out = 2990,
        .bytes_acked = 4000000,
        .bytes_retrans = 17000,
        .pacing_rate = 3000000,
        .delivery_rate = 2500000,
        .delivery_rate_app_limited = true,
    };
    json_object *o, *doc, *arr;
    ks_tcp_conns c = {0};
    const char *text;

    inet_pton(AF_INET6, "2001:db8::1", a.local);
    inet_pton(AF_INET6, "::ffff:198.51.100.7", a.remote);
    o = ks_tcp_conn_to_json(&a);
    CHECK(o);
    doc = json_object_new_object();
    arr = json_object_new_array();
    json_object_array_add(arr, o);
    json_object_object_add(doc, "connections", arr);
    text = json_object_to_json_string(doc);
    CHECK_INTEQ(ks_tcp_conns_parse_json(text, strlen(text), &c, NULL), 0);
    CHECK_INTEQ(c.n, 1);
    if (c.n == 1)
        CHECK(memcmp(&c.v[0], &a, sizeof(a)) == 0);
    ks_tcp_conns_done(&c);
    json_object_put(doc);
}

static void test_endpoints(void)
{
    ks_tcp_conn c = {.family = AF_INET};
    _cleanup_free_ char *v4 = NULL, *v6 = NULL;
    double ratio;

    inet_pton(AF_INET, "192.0.2.1", c.local);
    v4 = ks_tcp_endpoint_format(AF_INET, c.local, 65535);
    CHECK_STREQ(v4, "192.0.2.1:65535");
    inet_pton(AF_INET6, "::1", c.remote);
    v6 = ks_tcp_endpoint_format(AF_INET6, c.remote, 22);
    CHECK_STREQ(v6, "[::1]:22");
    c.family = AF_INET6;
    CHECK(ks_tcp_conn_is_loopback(&c));
    inet_pton(AF_INET6, "::ffff:10.0.0.1", c.remote);
    CHECK(!ks_tcp_conn_is_loopback(&c));
    c.family = AF_INET;
    inet_pton(AF_INET, "127.3.2.1", c.remote);
    CHECK(ks_tcp_conn_is_loopback(&c));
    CHECK(!ks_tcp_conn_retrans_ratio(&c, &ratio)); /* no tcp_info */
    c.has_info = true;
    CHECK(!ks_tcp_conn_retrans_ratio(&c, &ratio)); /* nothing sent */
    c.segs_out = 200;
    c.total_retrans = 5;
    CHECK(ks_tcp_conn_retrans_ratio(&c, &ratio) && ratio == 0.025);
}

int main(void)
{
    test_table();
    test_round_trip();
    test_endpoints();
    TEST_DONE();
}
