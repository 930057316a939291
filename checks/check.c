/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check list, and running programs for checks. */
#include <assert.h>

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
