/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * established, connections: users. "established" (the [accept] key established_min): at
 * least N established TCP sockets. "connections:tcp:PORT": the connections that came in to
 * each listening TCP port at arming, counted in the snapshot ("connections") with all
 * established ones ("established"); on the trial, wanted, or required by the [accept] key
 * connections_required (proc/net/tcp, tcp6).
 */
#include <limits.h>

#include "checks/procnet.h"
#include "checks/snapshot.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

int ks_check_established(const ks_check_ctx *c, ks_check *chk)
{
    unsigned long long min;
    ks_socks tcp[2];
    size_t n;
    int r;

    if (ks_safe_atou64(chk->arg, &min) < 0)
        return -EINVAL;
    r = ks_procnet_read_tcp(c->root, tcp);
    if (r < 0)
        return r;
    n = ks_socks_count_state(&tcp[0], KS_TCP_ESTABLISHED) +
        ks_socks_count_state(&tcp[1], KS_TCP_ESTABLISHED);
    ks_socks_done(&tcp[0]);
    ks_socks_done(&tcp[1]);
    free(chk->detail);
    chk->detail = ks_asprintf("%zu established TCP connections, wanted at least %llu", n, min);
    return chk->detail ? n >= min : -ENOMEM;
}

/* The connections that came in to each TCP port of the items, both families together (a
 * dual-stack listener's IPv4 clients are in tcp6); ports without any are left out. */
static int take_conns(ks_run_snapshot *s, const ks_socks tcp[2])
{
    size_t cap = 0;

    for (char **p = s->items; p && *p; p++) {
        const char *rest = ks_startswith(*p, "listen:tcp:");
        unsigned long long port;
        bool seen = false;
        size_t n;

        if (!rest)
            rest = ks_startswith(*p, "listen:tcp6:");
        if (!rest || ks_safe_atou64(rest, &port) < 0 || port == 0 || port > 65535)
            continue;
        /* listen:tcp:P and listen:tcp6:P are one port */
        for (size_t i = 0; i < s->n_conns; i++)
            seen = seen || s->conns[i].port == port;
        n = seen ? 0
                 : ks_socks_count_inbound(&tcp[0], false, (uint16_t)port) +
                       ks_socks_count_inbound(&tcp[1], true, (uint16_t)port);
        if (n == 0)
            continue;
        if (!GREEDY_REALLOC(s->conns, cap, s->n_conns + 1))
            return -ENOMEM;
        s->conns[s->n_conns++] =
            (ks_port_conns){.port = (uint16_t)port, .established = n > UINT_MAX ? UINT_MAX : n};
    }
    ks_port_conns_sort(s->conns, s->n_conns);
    return 0;
}

/* Every established TCP socket, and per listening TCP port of the items (listen:, taken
 * before) the ones that came in. */
static int take_users(const ks_check_ctx *c, ks_run_snapshot *s)
{
    ks_socks tcp[2];
    size_t n;
    int r = ks_procnet_read_tcp(c->root, tcp);

    /* A file that cannot be read is in skipped already, by listen's taker. */
    if (r < 0)
        return r == -ENOMEM ? r : 0;
    n = ks_socks_count_state(&tcp[0], KS_TCP_ESTABLISHED) +
        ks_socks_count_state(&tcp[1], KS_TCP_ESTABLISHED);
    s->established = n > UINT_MAX ? UINT_MAX : (unsigned)n;
    r = take_conns(s, tcp);
    ks_socks_done(&tcp[0]);
    ks_socks_done(&tcp[1]);
    return r;
}

static int add_conns_checks(ks_checklist *l, const ks_run_snapshot *s, const ks_config *cfg,
                            char *const *ignore)
{
    uint64_t required_from = 0, management = 22;
    int r;

    (void)ks_config_get_u64(cfg, "accept", "connections_required", &required_from);
    (void)ks_config_get_u64(cfg, "accept", "management", &management);
    for (size_t i = 0; i < s->n_conns; i++) {
        const ks_port_conns *pc = &s->conns[i];
        char arg[16], id[32];
        bool required =
            required_from > 0 && pc->established >= required_from && pc->port != management;

        snprintf(arg, sizeof(arg), "tcp:%u", (unsigned)pc->port);
        snprintf(id, sizeof(id), "connections:%s", arg);
        if (ks_checklist_find(l, id) || ks_snapshot_ignored(id, ignore))
            continue;
        r = ks_checklist_add(l, "connections", arg, required, ks_check_connections);
        if (r < 0)
            return r;
        l->v[l->n - 1].baseline = pc->established;
    }
    return 0;
}

int ks_check_connections(const ks_check_ctx *c, ks_check *chk)
{
    const char *p = ks_startswith(chk->arg, "tcp:");
    unsigned long long port;
    ks_socks tcp[2];
    size_t n;
    int r;

    if (!p || ks_safe_atou64(p, &port) < 0 || port == 0 || port > 65535)
        return -EINVAL;
    r = ks_procnet_read_tcp(c->root, tcp);
    if (r < 0)
        return r;
    n = ks_socks_count_inbound(&tcp[0], false, (uint16_t)port) +
        ks_socks_count_inbound(&tcp[1], true, (uint16_t)port);
    ks_socks_done(&tcp[0]);
    ks_socks_done(&tcp[1]);
    return ks_check_detail(chk,
                           ks_asprintf("%zu connection%s to TCP port %llu (%u at arming)", n,
                                       n == 1 ? "" : "s", port, chk->baseline),
                           n > 0);
}

static const ks_config_key established_keys[] = {
    KS_CONFIG_UINT("accept", "established_min", 0, 1000000000, 0),
    {0},
};

const ks_check_kind ks_check_kind_established = {
    .name = "established",
    .run = ks_check_established,
    .keys = established_keys,
    .item_key = "established_min",
};

static const ks_config_key connections_keys[] = {
    /* Users coming back per port: reported by default; 0 never requires it (kswap.conf(5)). */
    KS_CONFIG_UINT("accept", "connections_required", 0, 1000000000, 0),
    {0},
};

const ks_check_kind ks_check_kind_connections = {
    .name = "connections",
    .max_fields = 2,
    .run = ks_check_connections,
    .keys = connections_keys,
    /* After listen: the ports are its items. */
    .take = take_users,
    .add_from_snapshot = add_conns_checks,
};
