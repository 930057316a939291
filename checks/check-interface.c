/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * interface: the [accept] key interfaces and every interface of what runs that is up
 * ("interface:IF"): exists and is up (sys/class/net/IF/operstate and flags).
 * "interface:IF:no-carrier" (an item of the snapshot: the interface was administratively up
 * without a carrier at arming) asks for "administratively up" only.
 */
#include <net/if.h>

#include "checks/check.h"
#include "checks/snapshot.h"
#include "lib/basic/util.h"

static bool ifname_is_valid(const char *s)
{
    return *s && strlen(s) < IFNAMSIZ && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..");
}

bool ks_interface_has_carrier(const char *operstate)
{
    /* Tunnels such as WireGuard never report "up": their operstate stays "unknown" while they
     * work; so does loopback. */
    return operstate && (streq(operstate, "up") || streq(operstate, "unknown"));
}

int ks_check_interface(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *p_state = NULL, *p_flags = NULL, *state = NULL, *flags = NULL;
    _cleanup_strv_free_ char **f = NULL;
    const char *ifname;
    bool admin_only;
    unsigned long fl;
    char *end;
    bool up;
    int r;

    /* IF[:no-carrier] */
    r = ks_check_arg_fields(chk->arg, 2, &f);
    if (r < 0)
        return r;
    ifname = f[0];
    admin_only = f[1] != NULL;
    if (admin_only && !streq(f[1], KS_INTERFACE_NO_CARRIER))
        return -EINVAL;
    if (!ifname_is_valid(ifname))
        return -EINVAL;
    p_state = ks_asprintf("sys/class/net/%s/operstate", ifname);
    p_flags = ks_asprintf("sys/class/net/%s/flags", ifname);
    if (!p_state || !p_flags)
        return -ENOMEM;
    r = ks_root_read_line(c->root, p_state, &state);
    if (r == -ENOENT) {
        free(chk->detail);
        chk->detail = ks_asprintf("interface %s does not exist", ifname);
        return chk->detail ? 0 : -ENOMEM;
    }
    if (r < 0)
        return r;
    r = ks_root_read_line(c->root, p_flags, &flags);
    if (r < 0)
        return r;
    errno = 0;
    fl = strtoul(flags, &end, 16);
    if (errno || end == flags || *end)
        return -EBADMSG;
    /*
     * "down" and "lowerlayerdown" fail, unless the interface had no carrier at arming either:
     * docker0 without containers on it, virbr0 without guests, an unplugged NIC are up without
     * a carrier on every boot, and asking more of the trial than the old kernel had would send
     * a good kernel back.
     */
    up = (fl & IFF_UP) && (admin_only || ks_interface_has_carrier(state));
    free(chk->detail);
    chk->detail = ks_asprintf("%s: operstate %s, %s%s", ifname, state,
                              fl & IFF_UP ? "administratively up" : "administratively down",
                              admin_only ? " (no carrier at arming: up is all it needs)" : "");
    return chk->detail ? up : -ENOMEM;
}

/*
 * sys/class/net/IF with IFF_UP in flags: "interface:IF" when its operstate is up or unknown
 * (tunnels), "interface:IF:no-carrier" when it had no carrier (a bridge without ports such as
 * docker0 or virbr0, an unplugged NIC): judged as it was, so only "up" is asked of it.
 */
static int take_interfaces(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_strv_free_ char **names = NULL;
    int r = ks_root_list_dir(c->root, "sys/class/net", &names);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, "interfaces (sys/class/net)", r);
    for (char **n = names; *n; n++) {
        _cleanup_free_ char *p = ks_asprintf("sys/class/net/%s/flags", *n), *flags = NULL,
                            *ps = ks_asprintf("sys/class/net/%s/operstate", *n), *state = NULL;
        unsigned long fl;

        if (!p || !ps)
            return -ENOMEM;
        if ((*n)[0] == '.' || ks_root_read_line(c->root, p, &flags) < 0)
            continue;
        fl = strtoul(flags, NULL, 16);
        if (!(fl & IFF_UP))
            continue;
        (void)ks_root_read_line(c->root, ps, &state);
        r = ks_interface_has_carrier(state)
                ? ks_run_snapshot_add_item(s, true, "interface", *n, NULL)
                : ks_run_snapshot_add_item(s, true, "interface", *n, KS_INTERFACE_NO_CARRIER, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

static const char *const ignore[] = {
    /* Interfaces made per container or VM start. */
    "interface:veth*",
    "interface:vnet*",
    "interface:tap*",
    /* The bridge of each Docker user network: br- and the first 12 hex digits of the
     * network's id, made anew when dockerd starts (after network-online.target). */
    "interface:br-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]"
    "[0-9a-f][0-9a-f]",
    NULL,
};

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "interfaces", ks_config_item_name, NULL, KS_CONFIG_HINT_NAME),
    {0},
};

const ks_check_kind ks_check_kind_interface = {
    .name = "interface",
    .max_fields = 2,
    .run = ks_check_interface,
    .keys = keys,
    .item_key = "interfaces",
    .ignore = ignore,
    .ifname_field = 1,
    .take = take_interfaces,
};
