/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Custom checks: an executable in etc/kswap/checks.d/{required,wanted}/; exit 0 passes. */
#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

#define SCRIPT_OUTPUT_MAX 4096u

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
