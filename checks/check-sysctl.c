/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sysctl: the [accept] key sysctl and the net.* sysctls of what runs ("sysctl:KEY=VALUE"):
 * KEY=VALUE compared with the live value in proc/sys, never with the sysctl files.
 */
#include "checks/snapshot.h"
#include "lib/host/sysctl.h"
#include "lib/basic/util.h"

/* White space collapsed to single spaces, as ks_sysctl_live() gives values. */
static char *normalize(const char *s)
{
    _cleanup_strv_free_ char **w = NULL;
    char *out;
    size_t n = 0;

    if (ks_strv_split(s, " \t", &w) < 0)
        return NULL;
    for (char **p = w; p && *p; p++)
        n += strlen(*p) + 1;
    out = calloc(1, n + 1);
    if (!out)
        return NULL;
    for (char **p = w; p && *p; p++) {
        if (p != w)
            strcat(out, " ");
        strcat(out, *p);
    }
    return out;
}

int ks_check_sysctl(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *item = ks_check_id_unescape(chk->arg, strlen(chk->arg)), *key = NULL,
                        *want = NULL, *live = NULL;
    const char *eq = item ? strchr(item, '=') : NULL;
    int r;

    if (!item)
        return -ENOMEM;
    if (!eq || eq == item)
        return -EINVAL;
    key = strndup(item, (size_t)(eq - item));
    want = normalize(eq + 1);
    if (!key || !want)
        return -ENOMEM;
    r = ks_sysctl_live(c->root, key, &live);
    free(chk->detail);
    if (r == -ENOENT) {
        chk->detail = ks_asprintf("%s does not exist in this kernel", key);
        return chk->detail ? 0 : -ENOMEM;
    }
    if (r < 0) {
        chk->detail = NULL;
        return r;
    }
    chk->detail = ks_asprintf("%s = %s%s%s", key, live, streq(live, want) ? "" : ", wanted ",
                              streq(live, want) ? "" : want);
    return chk->detail ? streq(live, want) : -ENOMEM;
}

/*
 * net.* sysctls as they run: every net.* key the node's sysctl.d files set (what systemd-sysctl
 * applies at boot) with its live value, and forwarding when it is on (turned on at run time by
 * wg-quick, docker, a firewall script, none of which writes a sysctl file; RPS's flow table, set
 * by the unit that sets the queues' masks). Other keys are the
 * kernel's defaults, which a new kernel may change on purpose (XanMod's own qdisc and BBR).
 */
static const char *const runtime_sysctls[] = {
    "net.ipv4.ip_forward",
    "net.ipv6.conf.all.forwarding",
    "net.ipv4.conf.all.src_valid_mark",
    /* RPS's global flow table, set with the queues' masks by a unit (checks/check-rps.c) */
    "net.core.rps_sock_flow_entries",
};

static int add_sysctl(const ks_check_ctx *c, ks_run_snapshot *s, const char *key, bool only_on)
{
    _cleanup_free_ char *v = NULL;
    int r = ks_sysctl_live(c->root, key, &v);

    /* A key the old kernel does not have (a module not loaded) cannot come back. */
    if (r == -ENOENT || r == -EACCES || r == -EINVAL || r == -ENOTDIR)
        return 0;
    if (r < 0)
        return r;
    if (!*v || (only_on && streq(v, "0")))
        return 0;
    _cleanup_free_ char *item = ks_asprintf("%s=%s", key, v);
    return item ? ks_run_snapshot_add_item(s, true, "sysctl", item, NULL) : -ENOMEM;
}

static int take_sysctls(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_strv_free_ char **keys = NULL;
    int r = ks_sysctl_configured_keys(c->root, &keys);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, "sysctls (sysctl.d)", r);
    for (char **p = keys; *p; p++)
        if (ks_startswith(*p, "net.") && (r = add_sysctl(c, s, *p, false)) < 0)
            return r;
    for (size_t i = 0; i < ARRAY_SIZE(runtime_sysctls); i++)
        if (!ks_strv_contains(keys, runtime_sysctls[i]) &&
            (r = add_sysctl(c, s, runtime_sysctls[i], true)) < 0)
            return r;
    return 0;
}

/* A snapshot item whose key a configured sysctl check names already: the configured value is
 * what the trial must have (the operator may change it on purpose). */
static bool replaced_by(const ks_check *configured, const char *item_arg)
{
    size_t kn = strcspn(item_arg, "=");

    return strncmp(configured->arg, item_arg, kn) == 0 && configured->arg[kn] == '=';
}

static bool item_ok(const char *v)
{
    const char *eq = strchr(v, '=');
    return eq && eq != v && eq[1] && v[0] != '-';
}

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "sysctl", item_ok, NULL, "KEY=VALUE"),
    {0},
};

const ks_check_kind ks_check_kind_sysctl = {
    .name = "sysctl",
    .max_fields = 1,
    .run = ks_check_sysctl,
    .keys = keys,
    .item_key = "sysctl",
    .take = take_sysctls,
    .replaced_by = replaced_by,
};
