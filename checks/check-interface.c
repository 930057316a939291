/* SPDX-License-Identifier: GPL-2.0-or-later */
/* interfaces: exists and is up (sys/class/net/IF/operstate and flags). */
#include <net/if.h>

#include "checks/check.h"
#include "lib/basic/util.h"

static bool ifname_is_valid(const char *s)
{
    return *s && strlen(s) < IFNAMSIZ && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..");
}

int ks_check_interface(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *p_state = NULL, *p_flags = NULL, *state = NULL, *flags = NULL;
    unsigned long fl;
    char *end;
    bool up;
    int r;

    if (!ifname_is_valid(chk->arg))
        return -EINVAL;
    p_state = ks_asprintf("sys/class/net/%s/operstate", chk->arg);
    p_flags = ks_asprintf("sys/class/net/%s/flags", chk->arg);
    if (!p_state || !p_flags)
        return -ENOMEM;
    r = ks_root_read_line(c->root, p_state, &state);
    if (r == -ENOENT) {
        free(chk->detail);
        chk->detail = ks_asprintf("interface %s does not exist", chk->arg);
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
     * Tunnels such as WireGuard never report "up": their operstate stays "unknown" while they
     * work. The administrative flag decides then; "down" and "lowerlayerdown" always fail.
     */
    up = (fl & IFF_UP) && (streq(state, "up") || streq(state, "unknown"));
    free(chk->detail);
    chk->detail = ks_asprintf("%s: operstate %s, %s", chk->arg, state,
                              fl & IFF_UP ? "administratively up" : "administratively down");
    return chk->detail ? up : -ENOMEM;
}
