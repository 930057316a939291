/* SPDX-License-Identifier: GPL-2.0-or-later */
/* services: `systemctl is-active UNIT`, the state the service manager has now. */
#include "checks/check.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

/* The value of KEY in `systemctl show` output ("KEY=VALUE" lines), NULL when absent. */
static char *show_value(const char *output, const char *key)
{
    size_t kl = strlen(key);
    const char *l = output;

    while (l && *l) {
        if (strncmp(l, key, kl) == 0 && l[kl] == '=')
            return strndup(l + kl + 1, strcspn(l + kl + 1, "\n"));
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    return NULL;
}

/*
 * Whether systemd skipped the unit on this boot because one of its Condition*= does not hold:
 * ConditionResult=no with a condition time (a unit never started has ConditionResult=no and a
 * zero time). *ret_oneshot: a boot task (Type=oneshot) rather than a daemon. 0 on success
 * (*ret_skipped set), negative errno when systemctl could not answer.
 */
static int condition_skipped(const ks_check_ctx *c, const char *unit, bool *ret_skipped,
                             bool *ret_oneshot)
{
    char *argv[] = {(char *)"systemctl", (char *)"show",
                    (char *)"--property=Type,ConditionResult,ConditionTimestampMonotonic",
                    (char *)unit, NULL};
    _cleanup_free_ char *type = NULL, *result = NULL, *when = NULL;
    ks_spawn_result res = {0};
    int r;

    r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    if (r < 0)
        return r;
    if (!ks_spawn_succeeded(&res)) {
        ks_spawn_result_done(&res);
        return -EIO;
    }
    type = show_value(res.output, "Type");
    result = show_value(res.output, "ConditionResult");
    when = show_value(res.output, "ConditionTimestampMonotonic");
    ks_spawn_result_done(&res);
    *ret_skipped = result && streq(result, "no") && when && *when && !streq(when, "0");
    *ret_oneshot = type && streq(type, "oneshot");
    return 0;
}

/*
 * An inactive unit that systemd skipped by its own condition on this boot. A boot task
 * (Type=oneshot) that ran before the trial and is skipped now did what systemd decided this
 * boot needs: systemd-fsck-root.service is skipped whenever the initramfs checked the root
 * file system (ConditionPathExists=!/run/initramfs/fsck-root), and the old and the new
 * kernel's initramfs may differ in that (seen on a whole VM: the old initrd had no fsck, the
 * one apt built for the trial kernel had). That passes, for items of the snapshot only. A
 * daemon skipped so did not come back, and no waiting brings it: a final failure that says why.
 * Returns 1 (pass), 0 (fail) with the detail set, or -1 when the unit was not skipped so.
 */
static int judge_skipped(const ks_check_ctx *c, ks_check *chk, char **detail)
{
    bool skipped = false, oneshot = false;

    if (condition_skipped(c, chk->arg, &skipped, &oneshot) < 0 || !skipped)
        return -1;
    free(*detail);
    if (oneshot && chk->from_snapshot) {
        *detail = ks_asprintf("%s was skipped on this boot: one of its conditions does not hold "
                              "(a boot task; 'systemctl status %s' names the condition)",
                              chk->arg, chk->arg);
        return 1;
    }
    chk->final = true;
    *detail = ks_asprintf("%s was skipped on this boot: one of its conditions does not hold "
                          "('systemctl status %s' names it); waiting will not start it",
                          chk->arg, chk->arg);
    return 0;
}

int ks_check_service(const ks_check_ctx *c, ks_check *chk)
{
    char *argv[] = {(char *)"systemctl", (char *)"is-active", chk->arg, NULL};
    _cleanup_free_ char *last = NULL, *detail = NULL;
    ks_spawn_result res = {0};
    int verdict;
    int r;

    /* A unit name never starts with '-': it must not become an option of systemctl. */
    if (chk->arg[0] == '-')
        return -EINVAL;
    r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
    if (r < 0)
        return r;
    last = ks_spawn_last_line(&res);
    verdict = ks_spawn_succeeded(&res);
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
    if (!verdict && last && streq(last, "inactive")) {
        int skipped = judge_skipped(c, chk, &detail);
        if (skipped >= 0) {
            if (!detail)
                return -ENOMEM;
            verdict = skipped;
        }
    }
    free(chk->detail);
    chk->detail = TAKE_PTR(detail);
    return verdict;
}
