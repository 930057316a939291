/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * interfaces: exists and is up (sys/class/net/IF/operstate and flags). "IF:no-carrier" (an
 * item of the snapshot: the interface was administratively up without a carrier at arming)
 * asks for "administratively up" only.
 */
#include <net/if.h>

#include "checks/check.h"
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
    _cleanup_free_ char *ifname = NULL, *p_state = NULL, *p_flags = NULL, *state = NULL,
                        *flags = NULL;
    const char *colon = strchr(chk->arg, ':');
    bool admin_only = false;
    unsigned long fl;
    char *end;
    bool up;
    int r;

    /* Kernel interface names never hold ':' (net/core/dev.c, dev_valid_name). */
    if (colon) {
        if (!streq(colon + 1, KS_INTERFACE_NO_CARRIER))
            return -EINVAL;
        admin_only = true;
    }
    ifname = colon ? strndup(chk->arg, (size_t)(colon - chk->arg)) : strdup(chk->arg);
    if (!ifname)
        return -ENOMEM;
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
