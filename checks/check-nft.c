/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nft_tables: FAMILY:NAME (or NAME in any family) present, from `nft -j list tables`. */
#include <json-c/json.h>

#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

static const char *str_member(json_object *o, const char *key)
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) != json_type_string)
        return NULL;
    return json_object_get_string(v);
}

/* {"nftables": [{"metainfo": {...}}, {"table": {"family": "inet", "name": "filter"}}]} */
static bool has_table(json_object *doc, const char *family, const char *name)
{
    json_object *arr;

    if (!json_object_object_get_ex(doc, "nftables", &arr) ||
        json_object_get_type(arr) != json_type_array)
        return false;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *t;
        if (!json_object_object_get_ex(json_object_array_get_idx(arr, i), "table", &t))
            continue;
        if (streq_ptr(str_member(t, "name"), name) &&
            (!family || streq_ptr(str_member(t, "family"), family)))
            return true;
    }
    return false;
}

int ks_check_nft_table(const ks_check_ctx *c, ks_check *chk)
{
    char *argv[] = {(char *)"nft", (char *)"-j", (char *)"list", (char *)"tables", NULL};
    _cleanup_free_ char *family = NULL, *detail = NULL;
    const char *colon = strchr(chk->arg, ':'), *name = colon ? colon + 1 : chk->arg;
    ks_spawn_result res = {0};
    json_object *doc;
    bool found;
    int r;

    if (!*name || (colon && colon == chk->arg))
        return -EINVAL;
    if (colon && !(family = strndup(chk->arg, (size_t)(colon - chk->arg))))
        return -ENOMEM;
    r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    if (r < 0)
        return r;
    if (!ks_spawn_succeeded(&res)) {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        detail = ks_asprintf("nft list tables failed: %s", last && *last ? last : "(no output)");
        ks_spawn_result_done(&res);
        free(chk->detail);
        chk->detail = TAKE_PTR(detail);
        return chk->detail ? 0 : -ENOMEM;
    }
    /* No tables at all: nft prints a document with metainfo only, or (older nft) nothing. */
    doc = res.output_len ? json_tokener_parse(res.output) : json_object_new_object();
    ks_spawn_result_done(&res);
    if (!doc || json_object_get_type(doc) != json_type_object) {
        json_object_put(doc);
        return -EBADMSG;
    }
    found = has_table(doc, family, name);
    json_object_put(doc);
    free(chk->detail);
    chk->detail = ks_asprintf("nftables table %s%s%s %s", strempty(family), family ? " " : "", name,
                              found ? "present" : "missing");
    return chk->detail ? found : -ENOMEM;
}
