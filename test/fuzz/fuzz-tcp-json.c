/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The JSON of TCP connections (the fixture under --root) and of a swap's TCP samples (journal,
 * history): any text; a refusal says why; what parses is written and read back the same.
 */
#include <stdint.h>

#include "lib/basic/json-util.h"
#include "lib/basic/util.h"
#include "lib/host/tcpdiag.h"
#include "lib/host/tcpsample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void conns(const char *text, size_t size)
{
    ks_tcp_conns c = {0};
    char *err = NULL;
    int r = ks_tcp_conns_parse_json(text, size, &c, &err);

    if (r < 0) {
        if (r != -ENOMEM && !err)
            abort();
        if (c.n)
            abort();
    }
    for (size_t i = 0; i < c.n; i++) {
        json_object *o = ks_tcp_conn_to_json(&c.v[i]), *doc = json_object_new_object(),
                    *a = json_object_new_array();
        ks_tcp_conns back = {0};
        const char *t;

        json_object_array_add(a, o);
        json_object_object_add(doc, "connections", a);
        t = json_object_to_json_string(doc);
        if (ks_tcp_conns_parse_json(t, strlen(t), &back, NULL) != 0 || back.n != 1 ||
            memcmp(&back.v[0], &c.v[i], sizeof(ks_tcp_conn)) != 0)
            abort();
        ks_tcp_conns_done(&back);
        json_object_put(doc);
    }
    free(err);
    ks_tcp_conns_done(&c);
}

static void effect(const char *text, size_t size)
{
    json_object *o = NULL, *out, *again;
    ks_tcp_effect e = {0}, e2 = {0};
    char *err = NULL;
    int r;

    if (ks_json_parse_document(
            text, size, &(ks_json_limits){.bytes = 1u << 20, .containers = 4096, .values = 65536},
            &o, &err) < 0) {
        free(err);
        return;
    }
    r = ks_tcp_effect_from_json(o, &e, &err);
    json_object_put(o);
    if (r < 0) {
        if (r != -ENOMEM && !err)
            abort();
        free(err);
        return;
    }
    out = ks_tcp_effect_to_json(&e);
    if (!out || ks_tcp_effect_from_json(out, &e2, NULL) != 0)
        abort();
    again = ks_tcp_effect_to_json(&e2);
    if (!again || !json_object_equal(out, again))
        abort();
    for (ks_tcp_slot s = 0; s < _KS_TCP_SLOT_MAX; s++)
        if (ks_tcp_effect_get(&e, s)) {
            ks_tcp_figures f;
            ks_tcp_figures_of(ks_tcp_effect_get(&e, KS_TCP_BASELINE), ks_tcp_effect_get(&e, s), &f);
            if (f.has_ratio && f.ratio < 0)
                abort();
        }
    json_object_put(out);
    json_object_put(again);
    ks_tcp_effect_done(&e);
    ks_tcp_effect_done(&e2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    conns((const char *)data, size);
    effect((const char *)data, size);
    return 0;
}
