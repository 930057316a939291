/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * script: custom checks, the executables in etc/kswap/checks.d/required/ (required) and
 * wanted/ (reported) inside the root, in name order ("script:required/NAME"); exit 0 passes.
 */
#include <sys/stat.h>

#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

#define SCRIPT_OUTPUT_MAX 4096u
#define CHECKS_DIR "etc/kswap/checks.d"

int ks_check_script(const ks_check_ctx *c, ks_check *chk)
{
    unsigned tmo = c->script_timeout_ms ? c->script_timeout_ms : 60000;
    _cleanup_free_ char *path = NULL, *last = NULL, *detail = NULL, *root_env = NULL, *why = NULL;
    char *argv[2] = {NULL, NULL}, *env[2] = {NULL, NULL};
    ks_spawn_result res = {0};
    _cleanup_close_ int exe = -1;
    bool ok;
    int r;

    /* chk->arg is the path inside the root; argv[0] says where it is on the running machine. */
    path = ks_asprintf("%s/%s", c->root_abs ? c->root_abs : "",
                       chk->arg[0] == '/' ? chk->arg + 1 : chk->arg);
    if (!path)
        return -ENOMEM;
    if (c->root_abs) {
        root_env = ks_asprintf("KSWAP_ROOT=%s", c->root_abs);
        if (!root_env)
            return -ENOMEM;
        env[0] = root_env;
    }
    argv[0] = path;
    /* Run as opened inside the root (execveat): a symlink to an absolute path names the root's
     * file, never the running machine's. */
    exe = ks_spawn_open_in_root_full(c->root, chk->arg, &why);
    if (exe < 0 && why) {
        /* Its #! interpreter is not allowed: waiting does not change that. */
        free(chk->detail);
        chk->detail = ks_asprintf("'%s': %s", chk->arg, why);
        if (!chk->detail)
            return -ENOMEM;
        chk->final = true;
        return 0;
    }
    if (exe < 0)
        return exe;
    r = ks_spawn(argv,
                 KS_SPAWN_OPTS(.timeout_ms = tmo, .env = env, .max_output = SCRIPT_OUTPUT_MAX,
                               .exec_fd = exe),
                 &res);
    if (r < 0)
        return r;
    ok = ks_spawn_succeeded(&res);
    last = ks_spawn_last_line(&res);
    if (res.timed_out)
        detail = ks_asprintf("did not finish in %u s and was stopped", tmo / 1000);
    else if (res.term_signal)
        detail = ks_asprintf("killed by signal %d", res.term_signal);
    else if (last && *last)
        detail = ks_asprintf("exit %d: %s", res.exit_code, last);
    else
        detail = ks_asprintf("exit %d", res.exit_code);
    if (!detail) {
        ks_spawn_result_done(&res);
        return -ENOMEM;
    }
    free(chk->detail);
    chk->detail = TAKE_PTR(detail);
    free(chk->output);
    chk->output = TAKE_PTR(res.output);
    ks_spawn_result_done(&res);
    return ok;
}

static int add_scripts(const ks_root *root, ks_checklist *l, const char *which, bool required)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/%s", CHECKS_DIR, which);
    _cleanup_strv_free_ char **names = NULL;
    int r;

    if (!dir)
        return -ENOMEM;
    r = ks_root_list_dir(root, dir, &names);
    if (r == -ENOENT || r == -ENOTDIR)
        return 0;
    if (r < 0)
        return r;
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *path = NULL, *arg = NULL, *name = NULL;
        struct stat st;
        ks_check *chk;

        /* Editor backups and disabled scripts (not executable) are not checks. */
        if ((*n)[0] == '.' || ks_endswith(*n, "~"))
            continue;
        path = ks_asprintf("%s/%s", dir, *n);
        if (!path)
            return -ENOMEM;
        if (ks_root_stat(root, path, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
            continue;
        /* The id names it relative to checks.d, escaped as every id (checks/ids.c). */
        name = ks_check_id_escape(*n, true);
        arg = name ? ks_asprintf("%s/%s", which, name) : NULL;
        if (!arg)
            return -ENOMEM;
        r = ks_checklist_add(l, "script", arg, required, ks_check_script);
        if (r < 0)
            return r;
        /* The check runs the file; its id names it relative to checks.d. */
        chk = &l->v[l->n - 1];
        free(chk->arg);
        chk->arg = TAKE_PTR(path);
    }
    return 0;
}

static int add_configured(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                          char **ret_error)
{
    int r = add_scripts(root, l, "required", true);

    (void)cfg;
    (void)ret_error;
    return r < 0 ? r : add_scripts(root, l, "wanted", false);
}

const ks_check_kind ks_check_kind_script = {
    .name = "script",
    .max_fields = 1,
    .run = ks_check_script,
    .add_configured = add_configured,
};
