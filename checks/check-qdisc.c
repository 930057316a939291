/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qdisc: the [accept] key qdisc and the root qdisc of every interface of what runs
 * ("qdisc:IF:KIND"): the root qdisc of IF in `tc -j qdisc show dev IF` is KIND.
 */
#include <json-c/json.h>

#include "checks/snapshot.h"
#include "lib/basic/util.h"

/* The kind of the qdisc marked "root" in tc's JSON array; NULL when none. */
static const char *root_kind(json_object *arr)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *q = json_object_array_get_idx(arr, i), *root;
        if (json_object_get_type(q) != json_type_object)
            continue;
        if (json_object_object_get_ex(q, "root", &root) && json_object_get_boolean(root) &&
            ks_json_member_string(q, "kind"))
            return ks_json_member_string(q, "kind");
    }
    return NULL;
}

int ks_check_qdisc(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *out = NULL, *failure = NULL, *detail = NULL;
    _cleanup_strv_free_ char **f = NULL;
    const char *dev, *want, *kind;
    json_object *doc;
    int r;

    /* IF:KIND */
    r = ks_check_arg_fields(chk->arg, 2, &f);
    if (r < 0)
        return r;
    if (ks_strv_length(f) != 2 || !*f[0] || !*f[1] || f[0][0] == '-')
        return -EINVAL;
    dev = f[0];
    want = f[1];
    r = ks_check_program(c,
                         (char *[]){(char *)"tc", (char *)"-j", (char *)"qdisc", (char *)"show",
                                    (char *)"dev", (char *)dev, NULL},
                         true, &out, &failure);
    if (r == -EIO)
        return ks_check_detail(chk, ks_asprintf("tc qdisc show dev %s: %s", dev, failure), 0);
    if (r < 0)
        return r;
    doc = json_tokener_parse(out);
    if (!doc || json_object_get_type(doc) != json_type_array) {
        json_object_put(doc);
        return -EBADMSG;
    }
    kind = root_kind(doc);
    detail = kind ? ks_asprintf("root qdisc of %s is %s%s%s", dev, kind,
                                streq(kind, want) ? "" : ", wanted ", streq(kind, want) ? "" : want)
                  : ks_asprintf("%s has no root qdisc", dev);
    r = kind && streq(kind, want);
    json_object_put(doc);
    return ks_check_detail(chk, TAKE_PTR(detail), r);
}

/* `tc -j qdisc show`: [{"kind", "handle", "dev", "root": true, ...}, ...] */
static int take_qdiscs(const ks_check_ctx *c, ks_run_snapshot *s)
{
    char *argv[] = {(char *)"tc", (char *)"-j", (char *)"qdisc", (char *)"show", NULL};
    _cleanup_free_ char *out = NULL;
    json_object *doc;
    int r = ks_run_snapshot_program(c, s, "qdisc", argv, &out);

    if (r <= 0)
        return r;
    doc = json_tokener_parse(out);
    if (!doc || json_object_get_type(doc) != json_type_array) {
        json_object_put(doc);
        return ks_run_snapshot_skip(s, "qdisc", -EBADMSG);
    }
    for (size_t i = 0; i < json_object_array_length(doc); i++) {
        json_object *q = json_object_array_get_idx(doc, i), *root;
        const char *dev = ks_json_member_string(q, "dev"), *kind = ks_json_member_string(q, "kind");
        if (dev && kind && json_object_object_get_ex(q, "root", &root) &&
            json_object_get_boolean(root) && !strchr(dev, '/') &&
            (r = ks_run_snapshot_add_item(s, true, "qdisc", dev, kind, NULL)) < 0)
            break;
    }
    json_object_put(doc);
    return r < 0 ? r : 0;
}

static bool item_ok(const char *v)
{
    const char *colon = strrchr(v, ':');
    return colon && colon != v && colon[1] && !strchr(v, '/');
}

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "qdisc", item_ok, NULL, "IF:KIND"),
    {0},
};

const ks_check_kind ks_check_kind_qdisc = {
    .name = "qdisc",
    .max_fields = 2,
    .run = ks_check_qdisc,
    .keys = keys,
    .item_key = "qdisc",
    .ifname_field = 1,
    .take = take_qdiscs,
};
