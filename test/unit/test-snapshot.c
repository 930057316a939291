/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The snapshot of what runs: JSON round trip, refusals, the ignore lists, checklist items. */
#include "checks/snapshot.h"
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
    ks_run_snapshot s = {.kernel = (char *)"6.8.0-48-generic",
                         .items = items,
                         .skipped = skipped,
                         .established = 7},
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
        {"{}", 0},
    };
    char *extra[] = {(char *)"module:wire*", NULL};
    ks_checklist l = {0};
    json_object *o;

    o = ks_run_snapshot_to_json(&s);
    CHECK(o != NULL);
    CHECK(ks_run_snapshot_from_json(o, &back) == 0);
    CHECK_STREQ(back.kernel, "6.8.0-48-generic");
    CHECK_INTEQ(ks_strv_length(back.items), 7);
    CHECK_STREQ(back.items[3], "service:xray.service");
    CHECK_STREQ(back.skipped[0], "wireguard: the program is not installed");
    CHECK_INTEQ(back.established, 7);
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

    CHECK(ks_snapshot_ignored("service:user@1000.service", NULL));
    CHECK(ks_snapshot_ignored("interface:veth0a1b", NULL));
    CHECK(!ks_snapshot_ignored("service:xray.service", NULL));
    CHECK(!ks_snapshot_ignored("module:wireguard", NULL));
    CHECK(ks_snapshot_ignored("module:wireguard", extra));

    /* Configured checks first: the same id once; ignored, unknown and empty items left out. */
    CHECK(ks_checklist_add(&l, "listen", "tcp:22", true, ks_check_listen) == 0);
    CHECK(ks_checklist_add_snapshot(&l, &back, extra) == 0);
    CHECK_INTEQ(l.n, 2);
    CHECK_STREQ(l.v[0].id, "listen:tcp:22");
    CHECK(!l.v[0].from_snapshot);
    CHECK_STREQ(l.v[1].id, "service:xray.service");
    CHECK_STREQ(l.v[1].arg, "xray.service");
    CHECK(l.v[1].from_snapshot && l.v[1].required && l.v[1].run == ks_check_service);
    ks_checklist_done(&l);
    ks_run_snapshot_done(&back);
    TEST_DONE();
}
