/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * address, network: the addresses of the interfaces that are up, as the node keeps them from
 * boot to boot (checks/ifaddr.h): each IPv6 address "address:IF:ADDR/PLEN", each IPv4 network
 * an address puts the interface on "network:IF:NET/PLEN". Items of the snapshot only.
 */
#include "checks/ifaddr.h"
#include "checks/snapshot.h"
#include "lib/basic/util.h"

/*
 * The addresses of the interfaces that are up (items interface:IF, taken before): each IPv6
 * address the node keeps from boot to boot as "address:IF:ADDR/PLEN", each IPv4 network an
 * address put the interface on as "network:IF:NET/PLEN" (checks/ifaddr.h).
 */
static int take_addresses(const ks_check_ctx *c, ks_run_snapshot *s)
{
    ks_ifaddrs a = {0};
    int r = ks_ifaddrs_read(c->root, &a);

    if (r < 0)
        return r == -ENOMEM ? r
                            : ks_run_snapshot_skip(s, "addresses (proc/net/route, if_inet6)", r);
    for (size_t i = 0; i < a.n && r >= 0; i++) {
        _cleanup_free_ char *up = ks_check_id_join("interface", (char *[]){a.v[i].ifname, NULL}),
                            *no_carrier = ks_check_id_join(
                                "interface",
                                (char *[]){a.v[i].ifname, (char *)KS_INTERFACE_NO_CARRIER, NULL});
        if (!up || !no_carrier) {
            r = -ENOMEM;
            break;
        }
        if ((ks_strv_contains(s->items, up) || ks_strv_contains(s->items, no_carrier)) &&
            ks_ifaddr_is_stable(&a.v[i]))
            r = ks_run_snapshot_add_item(s, true, a.v[i].v6 ? "address" : "network", a.v[i].ifname,
                                         a.v[i].prefix, NULL);
    }
    ks_ifaddrs_done(&a);
    return r < 0 ? r : 0;
}

int ks_check_address(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **f = NULL;
    const ks_ifaddr *found = NULL;
    const char *ifname, *prefix;
    ks_ifaddrs a = {0};
    bool v6 = ks_startswith(chk->id, "address:");
    int r;

    /* IF:ADDR/PLEN, the address holding ':' of its own */
    r = ks_check_arg_fields(chk->arg, 2, &f);
    if (r < 0)
        return r;
    if (ks_strv_length(f) != 2 || !*f[0] || !*f[1])
        return -EINVAL;
    ifname = f[0];
    prefix = f[1];
    r = ks_ifaddrs_read(c->root, &a);
    if (r < 0)
        return r;
    for (size_t i = 0; i < a.n && !found; i++)
        if (a.v[i].v6 == v6 && streq(a.v[i].ifname, ifname) && streq(a.v[i].prefix, prefix))
            found = &a.v[i];
    r = ks_check_detail(chk,
                        ks_asprintf("%s %s on %s: %s", v6 ? "address" : "IPv4 network", prefix,
                                    ifname,
                                    !found                               ? "missing"
                                    : found->flags & KS_IFA_F_DADFAILED  ? "duplicate address"
                                    : found->flags & KS_IFA_F_TENTATIVE  ? "tentative (DAD runs)"
                                    : found->flags & KS_IFA_F_DEPRECATED ? "deprecated"
                                    : v6                                 ? "present"
                                         : "present (its prefix route)"),
                        found && ks_ifaddr_is_stable(found));
    /* The kernel does not run duplicate address detection again: waiting cannot heal it. */
    chk->final = found && (found->flags & KS_IFA_F_DADFAILED);
    ks_ifaddrs_done(&a);
    return r;
}

const ks_check_kind ks_check_kind_address = {
    .name = "address",
    .max_fields = 2,
    .run = ks_check_address,
    .ifname_field = 1,
    /* One taker for both kinds: it reads the interface items taken before it. */
    .take = take_addresses,
};

const ks_check_kind ks_check_kind_network = {
    .name = "network",
    .max_fields = 2,
    .run = ks_check_address,
    .ifname_field = 1,
};
