/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * route: the interface of each default route of what runs ("route:default:IF",
 * "route:default6:IF"), from proc/net/route and ipv6_route. An item of the snapshot only; the
 * floor (checks/floor.c) asks for a default route whatever the snapshot says.
 */
#include <net/if.h>

#include "checks/snapshot.h"
#include "lib/basic/util.h"

/* The interfaces of default routes: proc/net/route (Destination and Mask 0) and ipv6_route. */
int ks_default_routes(const ks_root *root, char ***ret)
{
    _cleanup_free_ char *t4 = NULL, *t6 = NULL;
    _cleanup_strv_free_ char **out = NULL;
    const char *line;
    size_t len, pos = 0, n;
    int r;

    r = ks_root_read_file(root, "proc/net/route", 1024 * 1024, &t4, &len);
    if (r < 0 && r != -ENOENT)
        return r;
    while (t4 && ks_next_line(t4, len, &pos, &line, &n)) {
        char ifn[IFNAMSIZ + 1], dst[9], gw[9], mask[9];
        unsigned flags;
        _cleanup_free_ char *l = strndup(line, n);
        if (!l)
            return -ENOMEM;
        if (sscanf(l, "%16s %8s %8s %x %*s %*s %*s %8s", ifn, dst, gw, &flags, mask) == 5 &&
            streq(dst, "00000000") && streq(mask, "00000000") && (flags & 0x1) &&
            (r = ks_strv_push(&out, ks_asprintf("default:%s", ifn))) < 0)
            return r;
    }
    pos = 0;
    r = ks_root_read_file(root, "proc/net/ipv6_route", 1024 * 1024, &t6, &len);
    if (r < 0 && r != -ENOENT)
        return r;
    while (t6 && ks_next_line(t6, len, &pos, &line, &n)) {
        char dst[33], plen[3], ifn[IFNAMSIZ + 1];
        unsigned flags;
        _cleanup_free_ char *l = strndup(line, n);
        if (!l)
            return -ENOMEM;
        /* RTF_REJECT (0x200): the kernel's unreachable entries on lo. */
        if (sscanf(l, "%32s %2s %*s %*s %*s %*s %*s %*s %x %16s", dst, plen, &flags, ifn) == 4 &&
            streq(plen, "00") && strspn(dst, "0") == 32 && !(flags & 0x200) && !streq(ifn, "lo") &&
            (r = ks_strv_push(&out, ks_asprintf("default6:%s", ifn))) < 0)
            return r;
    }
    *ret = TAKE_PTR(out);
    return 0;
}

static int take_routes(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_strv_free_ char **routes = NULL;
    int r = ks_default_routes(c->root, &routes);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, "routes (proc/net/route)", r);
    /* "default:IF": an interface name never holds ':' (net/core/dev.c, dev_valid_name). */
    for (char **p = routes; p && *p; p++) {
        _cleanup_free_ char *which = strndup(*p, strcspn(*p, ":"));
        if (!which)
            return -ENOMEM;
        r = ks_run_snapshot_add_item(s, true, "route", which, *p + strlen(which) + 1, NULL);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_check_route(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **routes = NULL, **f = NULL;
    _cleanup_free_ char *route = NULL;
    bool present;
    int r;

    /* default:IF or default6:IF */
    r = ks_check_arg_fields(chk->arg, 2, &f);
    if (r < 0)
        return r;
    if (ks_strv_length(f) != 2 || (!streq(f[0], "default") && !streq(f[0], "default6")))
        return -EINVAL;
    route = ks_asprintf("%s:%s", f[0], f[1]);
    if (!route)
        return -ENOMEM;
    r = ks_default_routes(c->root, &routes);
    if (r < 0)
        return r;
    present = ks_strv_contains(routes, route);
    return ks_check_detail(chk,
                           ks_asprintf("%s route via %s %s",
                                       streq(f[0], "default6") ? "IPv6 default" : "default", f[1],
                                       present ? "present" : "missing"),
                           present);
}

const ks_check_kind ks_check_kind_route = {
    .name = "route",
    .max_fields = 2,
    .run = ks_check_route,
    .ifname_field = 2,
    .take = take_routes,
};
