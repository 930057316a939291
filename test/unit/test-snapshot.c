/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The snapshot of what runs: JSON round trip, refusals, the ignore lists, checklist items. */
#include "checks/snapshot.h"
#include "lib/basic/config.h"
#include "lib/basic/util.h"
#include "test.h"

int main(void)
{
    char *items[] = {(char *)"listen:tcp:22",
                     (char *)"module:wireguard",
                     (char *)"service:user@0.service",
                     (char *)"service:xray.service",
                     (char *)"interface:veth12",
                     (char *)"strange:thing",
                     (char *)"service:",
                     NULL};
    char *skipped[] = {(char *)"wireguard: the program is not installed", NULL};
    ks_port_conns conns[] = {{.port = 22, .established = 1},
                             {.port = 443, .established = 12},
                             {.port = 8443, .established = 2}};
    ks_run_snapshot s = {.kernel = (char *)"6.8.0-48-generic",
                         .items = items,
                         .skipped = skipped,
                         .established = 7,
                         .conns = conns,
                         .n_conns = ARRAY_SIZE(conns)},
                    back = {0};
    static const struct {
        const char *json;
        int ret;
    } bad[] = {
        {"[]", -EBADMSG},
        {"{\"items\": \"x\"}", -EBADMSG},
        {"{\"items\": [1]}", -EBADMSG},
        {"{\"kernel\": 5}", -EBADMSG},
        {"{\"established\": -1}", -EBADMSG},
        {"{\"established\": \"3\"}", -EBADMSG},
        /* The connections per port: absent or null in journals of an older kswap. */
        {"{\"connections\": null}", 0},
        {"{\"connections\": {}}", 0},
        {"{\"connections\": []}", -EBADMSG},
        {"{\"connections\": {\"tcp:443\": \"2\"}}", -EBADMSG},
        {"{\"connections\": {\"tcp:443\": -1}}", -EBADMSG},
        {"{\"connections\": {\"tcp:443\": 4294967296}}", -EBADMSG},
        {"{\"connections\": {\"udp:443\": 2}}", -EBADMSG},
        {"{\"connections\": {\"tcp:0\": 2}}", -EBADMSG},
        {"{\"connections\": {\"tcp:65536\": 2}}", -EBADMSG},
        {"{\"connections\": {\"tcp:\": 2}}", -EBADMSG},
        {"{}", 0},
        /* The form of the ids: 1 (or none) from a kswap that did not escape them, 2 now. */
        {"{\"id_version\": 3}", -EBADMSG},
        {"{\"id_version\": 0}", -EBADMSG},
        {"{\"id_version\": \"2\"}", -EBADMSG},
        {"{\"id_version\": 2}", 0},
        {"{\"id_version\": 1}", 0},
    };
    char *extra[] = {(char *)"module:wire*", NULL};
    _cleanup_(ks_config_freep) ks_config *cfg = ks_config_new();
    ks_checklist l = {0};
    json_object *o;

    CHECK(ks_checks_register_config() == 0);
    CHECK(cfg && ks_config_parse(cfg, "[accept]\nignore = module:wire*\n", "test", NULL) == 0);
    o = ks_run_snapshot_to_json(&s);
    CHECK(o != NULL);
    CHECK(ks_run_snapshot_from_json(o, &back) == 0);
    CHECK_STREQ(back.kernel, "6.8.0-48-generic");
    CHECK_INTEQ(ks_strv_length(back.items), 7);
    CHECK_STREQ(back.items[3], "service:xray.service");
    CHECK_STREQ(back.skipped[0], "wireguard: the program is not installed");
    CHECK_INTEQ(back.established, 7);
    CHECK(back.n_conns == 3 && back.conns[1].port == 443 && back.conns[1].established == 12);
    json_object_put(o);

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        json_object *j = json_tokener_parse(bad[i].json);
        ks_run_snapshot x = {0};
        CHECK_MSG(ks_run_snapshot_from_json(j, &x) == bad[i].ret, "%s", bad[i].json);
        if (bad[i].ret == 0)
            CHECK(x.items && !x.items[0]);
        ks_run_snapshot_done(&x);
        json_object_put(j);
    }

    /* A journal of a kswap that did not escape ids: its items meet today's ids. */
    {
        static const struct {
            const char *json;
            const char *item0, *wanted0;
        } old[] = {
            {"{\"items\": [\"sysctl:net.ipv4.tcp_rmem=4096 131072 6291456\"], \"wanted\": "
             "[\"interface:e\\u001bx\"]}",
             "sysctl:net.ipv4.tcp_rmem=4096%20131072%206291456", "interface:e%1Bx"},
            {"{\"items\": [\"nft-chain:inet:filter:allow:ssh\"]}",
             "nft-chain:inet:filter:allow:ssh", NULL},
            {"{\"id_version\": 1, \"items\": [\"service:100%.service\"]}", "service:100%25.service",
             NULL},
            /* Written in today's form: read as it is, never escaped twice. */
            {"{\"id_version\": 2, \"items\": [\"service:100%25.service\"]}",
             "service:100%25.service", NULL},
        };
        for (size_t i = 0; i < ARRAY_SIZE(old); i++) {
            json_object *j = json_tokener_parse(old[i].json);
            ks_run_snapshot x = {0};
            CHECK_MSG(ks_run_snapshot_from_json(j, &x) == 0, "%s", old[i].json);
            CHECK_MSG(x.items && x.items[0] && streq(x.items[0], old[i].item0), "%zu: %s", i,
                      x.items && x.items[0] ? x.items[0] : "(none)");
            if (old[i].wanted0)
                CHECK_MSG(x.wanted && x.wanted[0] && streq(x.wanted[0], old[i].wanted0),
                          "%zu: wanted %s", i, x.wanted && x.wanted[0] ? x.wanted[0] : "(none)");
            ks_run_snapshot_done(&x);
            json_object_put(j);
        }
    }

    /* What is expected to differ between boots, and what is not. */
    {
        static const struct {
            const char *id;
            bool ignored;
        } ign[] = {
            {"service:user@1000.service", true},
            {"interface:veth0a1b", true},
            {"service:xray.service", false},
            {"module:wireguard", false},
            /* Docker's per-network bridges, its iptables chains and its nftables backend. */
            {"interface:br-5e2f3a9c0d1b", true},
            {"interface:br-lan", false},
            {"interface:br-5e2f3a9c0d1", false},
            {"interface:docker0", false},
            {"nft-chain:ip:filter:DOCKER", true},
            {"nft-chain:ip:filter:DOCKER-USER", true},
            {"nft-chain:ip:filter:DOCKER-ISOLATION-STAGE-1", true},
            {"nft-chain:ip:nat:DOCKER", true},
            {"nft-chain:ip6:filter:DOCKER-FORWARD", true},
            {"nft-chain:ip:docker-bridges:filter-forward-in__docker0", true},
            {"nft-chain:ip:filter:FORWARD", false},
            {"nft-chain:inet:filter:input", false},
            {"nft-table:ip:nat", false},
            {"service:docker.service", false},
            /* Socket-activated sshd counts as its socket now (check-service.c): required. */
            {"service:ssh.service", false},
        };
        for (size_t i = 0; i < ARRAY_SIZE(ign); i++)
            CHECK_MSG(ks_snapshot_ignored(ign[i].id, NULL) == ign[i].ignored, "%s", ign[i].id);
    }
    CHECK(ks_snapshot_ignored("module:wireguard", extra));

    /* Configured checks first: the same id once; ignored, unknown and empty items left out. */
    CHECK(ks_checklist_add(&l, "listen", "tcp:22", true, ks_check_listen) == 0);
    CHECK(ks_checklist_add_snapshot(&l, &back, cfg) == 0);
    CHECK_INTEQ(l.n, 5);
    CHECK_STREQ(l.v[0].id, "listen:tcp:22");
    CHECK(!l.v[0].from_snapshot);
    CHECK_STREQ(l.v[1].id, "service:xray.service");
    CHECK_STREQ(l.v[1].arg, "xray.service");
    CHECK(l.v[1].from_snapshot && l.v[1].required && l.v[1].run == ks_check_service);
    /* Then the users per port: wanted by default, with what arming counted. */
    for (size_t i = 2; i < l.n && i < 5; i++)
        CHECK_MSG(!l.v[i].required && !l.v[i].from_snapshot && l.v[i].run == ks_check_connections &&
                      l.v[i].baseline == conns[i - 2].established,
                  "%s: wanted, %u at arming", l.v[i].id, l.v[i].baseline);
    CHECK(l.n == 5 && streq(l.v[3].id, "connections:tcp:443") && streq(l.v[3].arg, "tcp:443"));
    ks_checklist_done(&l);

    /* connections_required = 2: ports with at least 2 at arming, never the management port;
     * an ignored port is not a check. */
    {
        static const struct {
            const char *conf;
            bool req22, req443, req8443;
            size_t n;
        } pol[] = {
            {"[accept]\nconnections_required = 2\n", false, true, true, 3},
            {"[accept]\nconnections_required = 1\n", false, true, true, 3},
            {"[accept]\nconnections_required = 1\nmanagement = 2222\n", true, true, true, 3},
            {"[accept]\nconnections_required = 12\n", false, true, false, 3},
            {"[accept]\nconnections_required = 13\n", false, false, false, 3},
            {"[accept]\nconnections_required = 0\n", false, false, false, 3},
            {"[accept]\nconnections_required = 2\nignore = connections:tcp:8443\n", false, true,
             false, 2},
        };
        for (size_t i = 0; i < ARRAY_SIZE(pol); i++) {
            _cleanup_(ks_config_freep) ks_config *c = ks_config_new();
            ks_checklist x = {0};
            ks_check *a, *b, *d;
            CHECK(c && ks_config_parse(c, pol[i].conf, "test", NULL) == 0);
            CHECK(ks_checklist_add_snapshot(&x, &back, c) == 0);
            a = ks_checklist_find(&x, "connections:tcp:22");
            b = ks_checklist_find(&x, "connections:tcp:443");
            d = ks_checklist_find(&x, "connections:tcp:8443");
            CHECK_MSG(a && b && a->required == pol[i].req22 && b->required == pol[i].req443 &&
                          (d ? d->required == pol[i].req8443 : !pol[i].req8443) &&
                          (pol[i].n == 3) == (d != NULL),
                      "policy %zu", i);
            ks_checklist_done(&x);
        }
    }
    ks_run_snapshot_done(&back);
    TEST_DONE();
}
