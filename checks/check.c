/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check list, and running programs for checks. */
#include <assert.h>
#include <json-c/json.h>

#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/string-table.h"
#include "lib/basic/util.h"

static const char *const ks_check_status_table[_KS_CHECK_STATUS_MAX] = {
    [KS_CHECK_SKIP] = "skip",
    [KS_CHECK_PASS] = "pass",
    [KS_CHECK_FAIL] = "fail",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_check_status, ks_check_status);

int ks_checklist_add(ks_checklist *l, const char *kind, const char *arg, bool required,
                     ks_check_fn fn)
{
    _cleanup_free_ char *id = arg ? ks_asprintf("%s:%s", kind, arg) : strdup(kind);
    _cleanup_free_ char *a = arg ? strdup(arg) : NULL;

    assert(l);
    assert(kind);
    if (!id || (arg && !a))
        return -ENOMEM;
    if (!GREEDY_REALLOC(l->v, l->cap, l->n + 1))
        return -ENOMEM;
    l->v[l->n++] = (ks_check){
        .id = TAKE_PTR(id),
        .arg = TAKE_PTR(a),
        .required = required,
        .run = fn,
        .status = KS_CHECK_SKIP,
    };
    return 0;
}

void ks_checklist_done(ks_checklist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].id);
        free(l->v[i].arg);
        free(l->v[i].detail);
        free(l->v[i].output);
    }
    free(l->v);
    *l = (ks_checklist){0};
}

ks_check *ks_checklist_find(const ks_checklist *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (streq(l->v[i].id, id))
            return &l->v[i];
    return NULL;
}

int ks_check_set(ks_check *chk, ks_check_status status, const char *detail)
{
    char *d = detail ? strdup(detail) : NULL;

    if (detail && !d)
        return -ENOMEM;
    free(chk->detail);
    chk->detail = d;
    chk->status = status;
    return 0;
}

int ks_check_spawn(const ks_check_ctx *c, char *const argv[], unsigned timeout_ms,
                   ks_spawn_result *ret)
{
    static const char *const system_dirs[] = {"/usr/", "/bin/", "/sbin/"};
    _cleanup_free_ char *path = NULL, *root_env = NULL;
    _cleanup_free_ char **args = NULL;
    char *env[2] = {NULL, NULL};
    size_t n = 0;
    int r;

    r = ks_find_program(argv[0], &path);
    if (r < 0)
        return r;
    /* Under a root that is not this machine, tc or systemctl would answer for this machine. */
    if (c->root_abs) {
        for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
            if (ks_startswith(path, system_dirs[i]))
                return -EPERM;
        root_env = ks_asprintf("KSWAP_ROOT=%s", c->root_abs);
        if (!root_env)
            return -ENOMEM;
        env[0] = root_env;
    }
    while (argv[n])
        n++;
    args = calloc(n + 1, sizeof(char *));
    if (!args)
        return -ENOMEM;
    memcpy(args, argv, n * sizeof(char *));
    args[0] = path;
    return ks_spawn(
        args, KS_SPAWN_OPTS(.timeout_ms = timeout_ms, .env = env, .max_output = 64 * 1024), ret);
}

int ks_check_detail(ks_check *chk, char *detail, int verdict)
{
    if (!detail)
        return -ENOMEM;
    free(chk->detail);
    chk->detail = detail;
    return verdict;
}

const char *ks_json_member_string(json_object *o, const char *key)
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) != json_type_string)
        return NULL;
    return json_object_get_string(v);
}

struct ks_check_cache {
    struct cached {
        char *key; /* argv joined with US (0x1f) */
        int r;
        char *output, *failure;
    } * v;
    size_t n, cap;
};

ks_check_cache *ks_check_cache_new(void)
{
    return calloc(1, sizeof(ks_check_cache));
}

void ks_check_cache_clear(ks_check_cache *cache)
{
    for (size_t i = 0; cache && i < cache->n; i++) {
        free(cache->v[i].key);
        free(cache->v[i].output);
        free(cache->v[i].failure);
    }
    if (cache)
        cache->n = 0;
}

ks_check_cache *ks_check_cache_free(ks_check_cache *cache)
{
    ks_check_cache_clear(cache);
    if (cache)
        free(cache->v);
    free(cache);
    return NULL;
}

static int program_answer(const ks_check_ctx *c, char *const argv[], int *ret_r, char **ret_output,
                          char **ret_failure)
{
    ks_spawn_result res = {0};
    int r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);

    *ret_output = *ret_failure = NULL;
    if (r < 0) {
        *ret_r = r;
        return r == -ENOMEM ? r : 0;
    }
    if (ks_spawn_succeeded(&res)) {
        *ret_r = 0;
        *ret_output = strndup(res.output ? res.output : "", res.output_len);
    } else {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        *ret_r = -EIO;
        *ret_failure = res.timed_out ? ks_asprintf("%s did not answer in time", argv[0])
                                     : ks_asprintf("%s failed: %s", argv[0],
                                                   last && *last ? last : "(no output)");
    }
    ks_spawn_result_done(&res);
    return *ret_output || *ret_failure ? 0 : -ENOMEM;
}

int ks_check_program(const ks_check_ctx *c, char *const argv[], bool cacheable, char **ret_output,
                     char **ret_failure)
{
    _cleanup_free_ char *key = NULL, *output = NULL, *failure = NULL;
    int answer = 0, r;

    if (cacheable && c->cache) {
        key = ks_strv_join((char **)argv, "\x1f");
        if (!key)
            return -ENOMEM;
        for (size_t i = 0; i < c->cache->n; i++) {
            struct cached *e = &c->cache->v[i];
            if (!streq(e->key, key))
                continue;
            if (e->r < 0) {
                if (ret_failure && e->failure && !(*ret_failure = strdup(e->failure)))
                    return -ENOMEM;
                return e->r;
            }
            *ret_output = strdup(e->output);
            return *ret_output ? 0 : -ENOMEM;
        }
    }
    r = program_answer(c, argv, &answer, &output, &failure);
    if (r < 0)
        return r;
    if (key && GREEDY_REALLOC(c->cache->v, c->cache->cap, c->cache->n + 1)) {
        struct cached e = {.key = TAKE_PTR(key), .r = answer};
        if ((output && !(e.output = strdup(output))) ||
            (failure && !(e.failure = strdup(failure)))) {
            free(e.key);
            free(e.output);
            free(e.failure);
        } else
            c->cache->v[c->cache->n++] = e;
    }
    if (answer < 0) {
        if (ret_failure)
            *ret_failure = TAKE_PTR(failure);
        return answer;
    }
    *ret_output = TAKE_PTR(output);
    return 0;
}
