/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The reachability floor: the interface of a default route is up with an address, and the
 * management port (sshd's 22, or [accept] management) listens; required wherever the node had
 * them when the trial was armed.
 */
#include <stdbool.h>
#include <net/if.h>

#include "checks/check.h"
#include "lib/basic/util.h"

/* A connected (not via a gateway, not default) route on ifname in proc/net/route: the kernel
 * adds one for every IPv4 address; or a global address in proc/net/if_inet6. */
static bool has_address(const ks_root *root, const char *ifname)
{
    _cleanup_free_ char *t4 = NULL, *t6 = NULL;
    const char *line;
    size_t len, pos = 0, n;

    if (ks_root_read_file(root, "proc/net/route", 1024 * 1024, &t4, &len) >= 0)
        while (ks_next_line(t4, len, &pos, &line, &n)) {
            char ifn[IFNAMSIZ + 1], dst[9], mask[9];
            unsigned flags;
            _cleanup_free_ char *l = strndup(line, n);
            if (l && sscanf(l, "%16s %8s %*s %x %*s %*s %*s %8s", ifn, dst, &flags, mask) == 4 &&
                streq(ifn, ifname) && (flags & 0x1) && !(flags & 0x2) && !streq(mask, "00000000"))
                return true;
        }
    pos = 0;
    if (ks_root_read_file(root, "proc/net/if_inet6", 1024 * 1024, &t6, &len) >= 0)
        while (ks_next_line(t6, len, &pos, &line, &n)) {
            char addr[33], ifn[IFNAMSIZ + 1];
            unsigned idx, plen, scope;
            _cleanup_free_ char *l = strndup(line, n);
            if (l && sscanf(l, "%32s %x %x %x %*x %16s", addr, &idx, &plen, &scope, ifn) == 5 &&
                streq(ifn, ifname) && scope == 0)
                return true;
        }
    return false;
}

int ks_check_default_route(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **routes = NULL;
    _cleanup_free_ char *last = NULL;
    int r = ks_default_routes(c->root, &routes);

    if (r < 0)
        return r;
    for (char **route = routes; route && *route; route++) {
        const char *ifname = strchr(*route, ':') + 1;
        _cleanup_free_ char *arg = ks_check_id_escape(ifname, true);
        ks_check tmp = {.arg = arg};
        int up = arg ? ks_check_interface(c, &tmp) : -ENOMEM;
        bool addr = up > 0 && has_address(c->root, ifname);

        if (up == -ENOMEM)
            return up;
        free(last);
        last = ks_asprintf("default route via %s: %s%s", ifname, strempty(tmp.detail),
                           up > 0 && !addr ? ", no address"
                           : addr          ? ", has an address"
                                           : "");
        free(tmp.detail);
        if (!last)
            return -ENOMEM;
        if (addr) {
            free(chk->detail);
            chk->detail = TAKE_PTR(last);
            return 1;
        }
    }
    free(chk->detail);
    chk->detail = last ? TAKE_PTR(last) : strdup("no default route (proc/net/route, ipv6_route)");
    return chk->detail ? 0 : -ENOMEM;
}

int ks_check_management(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *item = ks_asprintf("tcp:%s", chk->arg);
    ks_check tmp = {0};
    int r;

    if (!item)
        return -ENOMEM;
    tmp.arg = item;
    r = ks_check_listen(c, &tmp);
    if (r == 0) {
        free(tmp.detail);
        tmp.detail = NULL;
        free(item);
        item = ks_asprintf("tcp6:%s", chk->arg);
        if (!item)
            return -ENOMEM;
        tmp.arg = item;
        r = ks_check_listen(c, &tmp);
    }
    free(chk->detail);
    chk->detail = tmp.detail ? ks_asprintf("management port: %s", tmp.detail) : NULL;
    free(tmp.detail);
    return r;
}

static bool snapshot_has_prefix(char *const *items, const char *prefix)
{
    for (size_t i = 0; items && items[i]; i++)
        if (ks_startswith(items[i], prefix))
            return true;
    return false;
}

static bool snapshot_listens_on(char *const *items, const char *port)
{
    for (size_t i = 0; items && items[i]; i++) {
        const char *p = ks_startswith(items[i], "listen:tcp");
        const char *colon = p ? strchr(p, ':') : NULL;
        if (colon && streq(colon + 1, port))
            return true;
    }
    return false;
}

int ks_checklist_add_floor(ks_checklist *l, const ks_config *cfg, char *const *snapshot_items,
                           bool have_snapshot)
{
    uint64_t port = 22;
    char buf[8];
    bool route, management;
    int r;

    (void)ks_config_get_u64(cfg, "accept", "management", &port);
    snprintf(buf, sizeof(buf), "%u", (unsigned)port);
    /* Required unless the old kernel, at arming, had no default route or nothing listening on
     * the management port either: a trial cannot lose what the node never had (it is then
     * reported, not required). Without a snapshot (a trial armed by an older kswap) always
     * required. kswap check passes what a trial armed now would have. */
    route = !have_snapshot || snapshot_has_prefix(snapshot_items, "route:default");
    management = !have_snapshot || snapshot_listens_on(snapshot_items, buf);
    r = ks_checklist_add(l, "floor:default-route", NULL, route, ks_check_default_route);
    if (r >= 0)
        r = ks_checklist_add(l, "floor:management", buf, management, ks_check_management);
    return r;
}
