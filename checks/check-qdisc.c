/* SPDX-License-Identifier: GPL-2.0-or-later */
/* qdisc: IF:KIND, the root qdisc of an interface, from `tc -j qdisc show dev IF`. */
#include <json-c/json.h>

#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

/* The kind of the qdisc marked "root" in tc's JSON array; NULL when none. */
static const char *root_kind(json_object *arr)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *q = json_object_array_get_idx(arr, i), *root, *kind;
        if (json_object_get_type(q) != json_type_object)
            continue;
        if (json_object_object_get_ex(q, "root", &root) && json_object_get_boolean(root) &&
            json_object_object_get_ex(q, "kind", &kind) &&
            json_object_get_type(kind) == json_type_string)
            return json_object_get_string(kind);
    }
    return NULL;
}

int ks_check_qdisc(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *dev = NULL, *detail = NULL;
    const char *colon = strrchr(chk->arg, ':'), *kind;
    ks_spawn_result res = {0};
    json_object *doc;
    int r;

    if (!colon || colon == chk->arg || !colon[1] || chk->arg[0] == '-')
        return -EINVAL;
    dev = strndup(chk->arg, (size_t)(colon - chk->arg));
    if (!dev)
        return -ENOMEM;
    {
        char *argv[] = {(char *)"tc", (char *)"-j", (char *)"qdisc", (char *)"show", (char *)"dev",
                        dev,          NULL};
        r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    }
    if (r < 0)
        return r;
    if (!ks_spawn_succeeded(&res)) {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        detail = ks_asprintf("tc qdisc show dev %s failed: %s", dev,
                             last && *last ? last : "(no output)");
        ks_spawn_result_done(&res);
        free(chk->detail);
        chk->detail = TAKE_PTR(detail);
        return chk->detail ? 0 : -ENOMEM;
    }
    doc = json_tokener_parse(res.output);
    ks_spawn_result_done(&res);
    if (!doc || json_object_get_type(doc) != json_type_array) {
        json_object_put(doc);
        return -EBADMSG;
    }
    kind = root_kind(doc);
    detail = kind ? ks_asprintf("root qdisc of %s is %s%s%s", dev, kind,
                                streq(kind, colon + 1) ? "" : ", wanted ",
                                streq(kind, colon + 1) ? "" : colon + 1)
                  : ks_asprintf("%s has no root qdisc", dev);
    r = kind && streq(kind, colon + 1);
    json_object_put(doc);
    if (!detail)
        return -ENOMEM;
    free(chk->detail);
    chk->detail = TAKE_PTR(detail);
    return r;
}
