/* SPDX-License-Identifier: GPL-2.0-or-later */
/* services: `systemctl is-active UNIT`, the state the service manager has now. */
#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

int ks_check_service(const ks_check_ctx *c, ks_check *chk)
{
    char *argv[] = {(char *)"systemctl", (char *)"is-active", chk->arg, NULL};
    _cleanup_free_ char *last = NULL, *detail = NULL;
    ks_spawn_result res = {0};
    bool active;
    int r;

    /* A unit name never starts with '-': it must not become an option of systemctl. */
    if (chk->arg[0] == '-')
        return -EINVAL;
    r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    if (r < 0)
        return r;
    last = ks_spawn_last_line(&res);
    active = ks_spawn_succeeded(&res);
    if (res.timed_out)
        detail = ks_asprintf("systemctl is-active %s did not answer in time", chk->arg);
    else if (last && streq(last, "failed")) {
        /* systemd restarts a unit with Restart= while it is "activating (auto-restart)";
         * "failed" means it gave up, and nothing will bring the unit back by waiting. */
        chk->final = true;
        detail = ks_asprintf("%s is failed (systemd will not restart it)", chk->arg);
    } else
        detail = ks_asprintf("%s is %s", chk->arg, last && *last ? last : "unknown");
    ks_spawn_result_done(&res);
    if (!detail)
        return -ENOMEM;
    free(chk->detail);
    chk->detail = TAKE_PTR(detail);
    return active;
}
