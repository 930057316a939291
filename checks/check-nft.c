/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nft-table, nft-chain: nftables as `nft -j list tables` and `nft -j list chains` show it. The
 * [accept] key nft_tables ("nft-table:[FAMILY:]NAME", a table in any family without FAMILY) and
 * every table ("nft-table:FAMILY:NAME") and chain ("nft-chain:FAMILY:TABLE:NAME") of what runs.
 */
#include <json-c/json.h>

#include "checks/snapshot.h"
#include "lib/basic/util.h"

/*
 * The "nftables" array of nft's JSON document: [{"metainfo": {...}}, {"table": {"family":
 * "inet", "name": "filter", ...}}, ...]. No tables at all: a document with metainfo only, or
 * (older nft) no output. -EBADMSG for what is not such a document.
 */
static int nft_array(const char *out, json_object **ret)
{
    json_object *doc = *out ? json_tokener_parse(out) : json_object_new_object(), *arr;

    if (!doc || json_object_get_type(doc) != json_type_object) {
        json_object_put(doc);
        return -EBADMSG;
    }
    if (json_object_object_get_ex(doc, "nftables", &arr) &&
        json_object_get_type(arr) == json_type_array)
        *ret = json_object_get(arr);
    else
        *ret = json_object_new_array();
    json_object_put(doc);
    return *ret ? 0 : -ENOMEM;
}

/* `nft -j list WHAT` for a check, kept for the round: -EIO with *ret_failure when nft failed. */
static int nft_ask(const ks_check_ctx *c, const char *what, json_object **ret, char **ret_failure)
{
    _cleanup_free_ char *out = NULL;
    int r = ks_check_program(
        c, (char *[]){(char *)"nft", (char *)"-j", (char *)"list", (char *)what, NULL}, true, &out,
        ret_failure);

    return r < 0 ? r : nft_array(out, ret);
}

/* `nft -j list WHAT` for the snapshot: 1 with the array, 0 when not snapshotted (recorded). */
static int nft_take(const ks_check_ctx *c, ks_run_snapshot *s, const char *what, json_object **ret)
{
    char *argv[] = {(char *)"nft", (char *)"-j", (char *)"list", (char *)what, NULL};
    _cleanup_free_ char *out = NULL, *label = ks_asprintf("nftables %s", what);
    int r;

    if (!label)
        return -ENOMEM;
    r = ks_run_snapshot_program(c, s, label, argv, &out);
    if (r <= 0)
        return r;
    r = nft_array(out, ret);
    if (r == -EBADMSG)
        return ks_run_snapshot_skip(s, label, r);
    return r < 0 ? r : 1;
}

/* The object of type ("table", "chain") of the array's element i, NULL when it is another. */
static json_object *nft_element(json_object *arr, size_t i, const char *type)
{
    json_object *o;

    return json_object_object_get_ex(json_object_array_get_idx(arr, i), type, &o) ? o : NULL;
}

static int take_tables(const ks_check_ctx *c, ks_run_snapshot *s)
{
    json_object *arr = NULL;
    int r = nft_take(c, s, "tables", &arr);

    for (size_t i = 0; r > 0 && i < json_object_array_length(arr); i++) {
        json_object *t = nft_element(arr, i, "table");
        const char *fam = ks_json_member_string(t, "family"),
                   *name = ks_json_member_string(t, "name");
        if (t && fam && name)
            r = ks_run_snapshot_add_item(s, true, "nft-table", fam, name, NULL) < 0 ? -ENOMEM : 1;
    }
    json_object_put(arr);
    return r < 0 ? r : 0;
}

static int take_chains(const ks_check_ctx *c, ks_run_snapshot *s)
{
    json_object *arr = NULL;
    int r = nft_take(c, s, "chains", &arr);

    for (size_t i = 0; r > 0 && i < json_object_array_length(arr); i++) {
        json_object *t = nft_element(arr, i, "chain");
        const char *fam = ks_json_member_string(t, "family"),
                   *table = ks_json_member_string(t, "table"),
                   *name = ks_json_member_string(t, "name");
        if (t && fam && table && name)
            r = ks_run_snapshot_add_item(s, true, "nft-chain", fam, table, name, NULL) < 0 ? -ENOMEM
                                                                                           : 1;
    }
    json_object_put(arr);
    return r < 0 ? r : 0;
}

int ks_check_nft_table(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *failure = NULL;
    const char *family, *name;
    json_object *arr = NULL;
    bool found = false;
    int r;

    /* [FAMILY:]NAME */
    r = ks_check_arg_fields(chk->arg, 2, &f);
    if (r < 0)
        return r;
    family = f[1] ? f[0] : NULL;
    name = f[1] ? f[1] : f[0];
    if (!*name || (family && !*family))
        return -EINVAL;
    r = nft_ask(c, "tables", &arr, &failure);
    if (r == -EIO)
        return ks_check_detail(chk, ks_asprintf("nft list tables: %s", failure), 0);
    if (r < 0)
        return r;
    for (size_t i = 0; i < json_object_array_length(arr) && !found; i++) {
        json_object *t = nft_element(arr, i, "table");
        found = t && streq_ptr(ks_json_member_string(t, "name"), name) &&
                (!family || streq_ptr(ks_json_member_string(t, "family"), family));
    }
    json_object_put(arr);
    return ks_check_detail(chk,
                           ks_asprintf("nftables table %s%s%s %s", strempty(family),
                                       family ? " " : "", name, found ? "present" : "missing"),
                           found);
}

int ks_check_nft_chain(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *failure = NULL;
    json_object *arr = NULL;
    bool found = false;
    int r;

    /* FAMILY:TABLE:NAME; a chain's name may hold ':' (nft allows any character in quotes) */
    r = ks_check_arg_fields(chk->arg, 3, &f);
    if (r < 0)
        return r;
    if (ks_strv_length(f) != 3)
        return -EINVAL;
    r = nft_ask(c, "chains", &arr, &failure);
    if (r == -EIO)
        return ks_check_detail(chk, ks_asprintf("nft list chains: %s", failure), 0);
    if (r < 0)
        return r;
    for (size_t i = 0; i < json_object_array_length(arr) && !found; i++) {
        json_object *t = nft_element(arr, i, "chain");
        found = t && streq_ptr(ks_json_member_string(t, "family"), f[0]) &&
                streq_ptr(ks_json_member_string(t, "table"), f[1]) &&
                streq_ptr(ks_json_member_string(t, "name"), f[2]);
    }
    json_object_put(arr);
    return ks_check_detail(
        chk,
        ks_asprintf("nftables chain %s %s %s %s", f[0], f[1], f[2], found ? "present" : "missing"),
        found);
}

static bool item_ok(const char *v)
{
    size_t n = strlen(v);
    return n && v[0] != ':' && v[n - 1] != ':';
}

static const ks_config_key table_keys[] = {
    KS_CONFIG_LIST("accept", "nft_tables", item_ok, NULL, "[FAMILY:]NAME"),
    {0},
};

const ks_check_kind ks_check_kind_nft_table = {
    .name = "nft-table",
    .max_fields = 2,
    .run = ks_check_nft_table,
    .keys = table_keys,
    .item_key = "nft_tables",
    .take = take_tables,
};

/*
 * Docker's chains: made anew when dockerd starts (after network-online.target), its
 * iptables chains (iptables-nft puts them into nftables' ip and ip6 tables) and the chains of
 * its nftables backend, one set per network. docker.service, the ports it publishes and the
 * forwarding it turns on are items of their own.
 */
static const char *const chain_ignore[] = {
    "nft-chain:ip:*:DOCKER*",
    "nft-chain:ip6:*:DOCKER*",
    "nft-chain:ip:docker-bridges:*",
    "nft-chain:ip6:docker-bridges:*",
    NULL,
};

const ks_check_kind ks_check_kind_nft_chain = {
    .name = "nft-chain",
    .max_fields = 3,
    .run = ks_check_nft_chain,
    .ignore = chain_ignore,
    .take = take_chains,
};
