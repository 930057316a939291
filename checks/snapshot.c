/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The snapshot of what runs: the kinds' takers in registry order (checks/registry.c), kept in
 * the state journal as JSON, and the checks of its items after the trial.
 */
#include <fnmatch.h>

#include "checks/snapshot.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

static bool matches(const char *id, const char *const *patterns)
{
    for (const char *const *p = patterns; p && *p; p++)
        if (fnmatch(*p, id, 0) == 0)
            return true;
    return false;
}

bool ks_snapshot_ignored(const char *id, char *const *extra)
{
    const ks_check_kind *kind = ks_check_kind_of(id, NULL);

    return (kind && matches(id, kind->ignore)) || matches(id, (const char *const *)extra);
}

void ks_run_snapshot_done(ks_run_snapshot *s)
{
    free(s->kernel);
    ks_strv_free(s->items);
    ks_strv_free(s->skipped);
    ks_strv_free(s->wanted);
    free(s->conns);
    *s = (ks_run_snapshot){0};
}

/* Adds the id v (taken over) to items or wanted, once; required wins over wanted. */
static int add_id(ks_run_snapshot *s, bool required, char *v)
{
    if (!v)
        return -ENOMEM;
    if (ks_strv_contains(s->items, v) || (!required && ks_strv_contains(s->wanted, v))) {
        free(v);
        return 0;
    }
    if (required && ks_strv_contains(s->wanted, v)) {
        size_t w = 0;
        for (size_t i = 0; s->wanted[i]; i++)
            if (streq(s->wanted[i], v))
                free(s->wanted[i]);
            else
                s->wanted[w++] = s->wanted[i];
        s->wanted[w] = NULL;
    }
    return ks_strv_push(required ? &s->items : &s->wanted, v);
}

int ks_run_snapshot_add_item(ks_run_snapshot *s, bool required, const char *kind, ...)
{
    const char *fields[8];
    size_t n = 0;
    va_list ap;

    va_start(ap, kind);
    for (const char *f = va_arg(ap, const char *); f; f = va_arg(ap, const char *))
        if (n < ARRAY_SIZE(fields) - 1)
            fields[n++] = f;
    va_end(ap);
    fields[n] = NULL;
    return add_id(s, required, ks_check_id_join(kind, (char *const *)fields));
}

int ks_run_snapshot_skip(ks_run_snapshot *s, const char *what, int err)
{
    /* Programs are named "wireguard", "qdisc", ...; files "interfaces (sys/class/net)". */
    bool file = strchr(what, '(') != NULL;
    const char *why = err == -ENOENT  ? (file ? "not found" : "the program is not installed")
                      : err == -EPERM ? "under --root only a program outside /usr, /bin and /sbin "
                                        "may answer (the system's would describe this machine)"
                                      : strerror(-err);
    char *v = ks_asprintf("%s: %s", what, why);
    return v ? ks_strv_push(&s->skipped, v) : -ENOMEM;
}

int ks_run_snapshot_program(const ks_check_ctx *c, ks_run_snapshot *s, const char *what,
                            char **argv, char **ret_output)
{
    ks_spawn_result res = {0};
    int r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, what, r);
    if (!ks_spawn_succeeded(&res)) {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        char *v = ks_asprintf("%s: %s %s: %s", what, argv[0],
                              res.timed_out ? "did not answer in time" : "failed",
                              last && *last ? last : "(no output)");
        ks_spawn_result_done(&res);
        return v ? ks_strv_push(&s->skipped, v) : -ENOMEM;
    }
    *ret_output = strndup(res.output ? res.output : "", res.output_len);
    ks_spawn_result_done(&res);
    return *ret_output ? 1 : -ENOMEM;
}

int ks_run_snapshot_take(const ks_check_ctx *c, ks_run_snapshot *ret)
{
    size_t n;
    const ks_check_kind *const *kinds = ks_check_kinds(&n);
    ks_run_snapshot s = {0};
    int r;

    if (c->kernel && !(s.kernel = strdup(c->kernel)))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        r = kinds[i]->take ? kinds[i]->take(c, &s) : 0;
        if (r < 0) {
            ks_run_snapshot_done(&s);
            return r;
        }
    }
    if (!s.items && !(s.items = calloc(1, sizeof(char *)))) {
        ks_run_snapshot_done(&s);
        return -ENOMEM;
    }
    ks_strv_sort(s.items);
    ks_strv_sort(s.wanted);
    *ret = s;
    return 0;
}

static int cmp_port_conns(const void *a, const void *b)
{
    const ks_port_conns *x = a, *y = b;
    return (int)x->port - (int)y->port;
}

void ks_port_conns_sort(ks_port_conns *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_port_conns);
}

static json_object *strv_json(char *const *v)
{
    json_object *a = json_object_new_array();

    for (; a && v && *v; v++)
        if (json_object_array_add(a, json_object_new_string(*v)) < 0) {
            json_object_put(a);
            return NULL;
        }
    return a;
}

/* {"tcp:443": 12, ...} */
static json_object *conns_json(const ks_run_snapshot *s)
{
    json_object *o = json_object_new_object();

    for (size_t i = 0; o && i < s->n_conns; i++) {
        char key[16];
        snprintf(key, sizeof(key), "tcp:%u", (unsigned)s->conns[i].port);
        if (json_object_object_add(o, key, json_object_new_int64(s->conns[i].established)) < 0) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

json_object *ks_run_snapshot_to_json(const ks_run_snapshot *s)
{
    json_object *o = json_object_new_object();

    if (!o)
        return NULL;
    if (json_object_object_add(o, "kernel", s->kernel ? json_object_new_string(s->kernel) : NULL) <
            0 ||
        json_object_object_add(o, "id_version", json_object_new_int(KS_SNAPSHOT_ID_VERSION)) < 0 ||
        json_object_object_add(o, "items", strv_json(s->items)) < 0 ||
        json_object_object_add(o, "skipped", strv_json(s->skipped)) < 0 ||
        json_object_object_add(o, "wanted", strv_json(s->wanted)) < 0 ||
        json_object_object_add(o, "established", json_object_new_int64(s->established)) < 0 ||
        json_object_object_add(o, "connections", conns_json(s)) < 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static int strv_from_json(json_object *a, char ***ret)
{
    _cleanup_strv_free_ char **out = calloc(1, sizeof(char *));
    int r;

    if (!out)
        return -ENOMEM;
    if (!a) {
        *ret = TAKE_PTR(out);
        return 0;
    }
    if (json_object_get_type(a) != json_type_array)
        return -EBADMSG;
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *v = json_object_array_get_idx(a, i);
        if (json_object_get_type(v) != json_type_string)
            return -EBADMSG;
        if ((r = ks_strv_extend(&out, json_object_get_string(v))) < 0)
            return r;
    }
    *ret = TAKE_PTR(out);
    return 0;
}

/* "connections": absent or null (an older kswap) is none; else "tcp:PORT": count pairs. */
static int conns_from_json(json_object *o, ks_run_snapshot *s)
{
    if (!o)
        return 0;
    if (json_object_get_type(o) != json_type_object)
        return -EBADMSG;
    s->conns = calloc(json_object_object_length(o) + 1, sizeof(*s->conns));
    if (!s->conns)
        return -ENOMEM;
    json_object_object_foreach(o, key, v)
    {
        const char *p = ks_startswith(key, "tcp:");
        unsigned long long port;
        int64_t n = json_object_get_int64(v);

        if (!p || ks_safe_atou64(p, &port) < 0 || port == 0 || port > 65535 ||
            json_object_get_type(v) != json_type_int || n < 0 || n > UINT32_MAX)
            return -EBADMSG;
        for (size_t i = 0; i < s->n_conns; i++)
            if (s->conns[i].port == port)
                return -EBADMSG;
        s->conns[s->n_conns++] =
            (ks_port_conns){.port = (uint16_t)port, .established = (unsigned)n};
    }
    ks_port_conns_sort(s->conns, s->n_conns);
    return 0;
}

/* Each id of a list in today's form (ks_check_id_upgrade()). */
static int upgrade_ids(char **ids)
{
    for (char **p = ids; p && *p; p++) {
        char *u = ks_check_id_upgrade(*p);
        if (!u)
            return -ENOMEM;
        free(*p);
        *p = u;
    }
    return 0;
}

/*
 * "id_version": absent in journals written before ids were escaped: their ids are read as
 * that kswap wrote them and brought to today's form, so that an item of theirs meets the same
 * item of a snapshot taken now. A version above ours: -EBADMSG (a newer kswap wrote it).
 */
static int ids_from_json(json_object *o, ks_run_snapshot *s)
{
    json_object *v;
    int64_t version = 1;
    int r;

    if (json_object_object_get_ex(o, "id_version", &v) && v) {
        version = json_object_get_int64(v);
        if (json_object_get_type(v) != json_type_int || version < 1 ||
            version > KS_SNAPSHOT_ID_VERSION)
            return -EBADMSG;
    }
    if (version == KS_SNAPSHOT_ID_VERSION)
        return 0;
    r = upgrade_ids(s->items);
    return r < 0 ? r : upgrade_ids(s->wanted);
}

int ks_run_snapshot_from_json(json_object *o, ks_run_snapshot *ret)
{
    ks_run_snapshot s = {0};
    json_object *v;
    int r;

    if (!o || json_object_get_type(o) != json_type_object)
        return -EBADMSG;
    if (json_object_object_get_ex(o, "kernel", &v) && v &&
        (json_object_get_type(v) != json_type_string ||
         !(s.kernel = strdup(json_object_get_string(v)))))
        return json_object_get_type(v) != json_type_string ? -EBADMSG : -ENOMEM;
    json_object_object_get_ex(o, "items", &v);
    r = strv_from_json(json_object_object_get_ex(o, "items", &v) ? v : NULL, &s.items);
    if (r >= 0)
        r = strv_from_json(json_object_object_get_ex(o, "skipped", &v) ? v : NULL, &s.skipped);
    /* Absent in journals of an older kswap: everything was required. */
    if (r >= 0)
        r = strv_from_json(json_object_object_get_ex(o, "wanted", &v) ? v : NULL, &s.wanted);
    if (r >= 0 && json_object_object_get_ex(o, "established", &v) && v) {
        int64_t n = json_object_get_int64(v);
        if (json_object_get_type(v) != json_type_int || n < 0 || n > UINT32_MAX)
            r = -EBADMSG;
        else
            s.established = (unsigned)n;
    }
    if (r >= 0)
        r = conns_from_json(json_object_object_get_ex(o, "connections", &v) ? v : NULL, &s);
    if (r >= 0)
        r = ids_from_json(o, &s);
    if (r < 0) {
        ks_run_snapshot_done(&s);
        return r;
    }
    *ret = s;
    return 0;
}

/*
 * Whether an item of the snapshot is left out: an ignore pattern (the kind's or [accept]
 * ignore) matches it, or the interface it names (the kind's ifname_field) is ignored:
 * interface:veth* takes a veth's address, network and qdisc items with it, and
 * interface:docker0 takes interface:docker0:no-carrier.
 */
static bool item_ignored(const ks_check_kind *kind, const char *id, const char *arg,
                         char *const *ignore)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *itf = NULL;

    if (ks_snapshot_ignored(id, ignore))
        return true;
    if (!kind->ifname_field || ks_check_arg_fields(arg, kind->max_fields, &f) < 0 ||
        ks_strv_length(f) < kind->ifname_field)
        return false;
    itf = ks_check_id_join("interface", (char *[]){f[kind->ifname_field - 1], NULL});
    return itf && !streq(itf, id) && ks_snapshot_ignored(itf, ignore);
}

/* A configured check of the kind makes the item redundant (kind->replaced_by). */
static bool item_replaced(const ks_checklist *l, const ks_check_kind *kind, const char *arg)
{
    size_t nl = strlen(kind->name);

    for (size_t i = 0; kind->replaced_by && i < l->n; i++)
        if (!l->v[i].from_snapshot && l->v[i].arg && strncmp(l->v[i].id, kind->name, nl) == 0 &&
            l->v[i].id[nl] == ':' && kind->replaced_by(&l->v[i], arg))
            return true;
    return false;
}

/* One check per item that nothing ignores or replaces and l has not already. */
static int add_items(ks_checklist *l, char *const *items, bool required, char *const *ignore)
{
    for (char *const *p = items; p && *p; p++) {
        const char *arg;
        const ks_check_kind *kind = ks_check_kind_of(*p, &arg);
        int r;

        /* Unknown kinds (a journal of a newer kswap) and empty items are not checks. */
        if (!kind || !arg || !*arg || !kind->max_fields)
            continue;
        if (ks_checklist_find(l, *p) || item_ignored(kind, *p, arg, ignore) ||
            item_replaced(l, kind, arg))
            continue;
        r = ks_checklist_add(l, kind->name, arg, required, kind->run);
        if (r < 0)
            return r;
        l->v[l->n - 1].from_snapshot = true;
    }
    return 0;
}

int ks_checklist_add_snapshot(ks_checklist *l, const ks_run_snapshot *s, const ks_config *cfg)
{
    _cleanup_strv_free_ char **ignore = NULL;
    size_t n;
    const ks_check_kind *const *kinds = ks_check_kinds(&n);
    int r;

    r = ks_config_get_strv(cfg, "accept", "ignore", NULL, &ignore);
    if (r < 0)
        return r;
    r = add_items(l, s->items, true, ignore);
    if (r < 0)
        return r;
    r = add_items(l, s->wanted, false, ignore);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (kinds[i]->add_from_snapshot)
            r = kinds[i]->add_from_snapshot(l, s, cfg, ignore);
    return r;
}
