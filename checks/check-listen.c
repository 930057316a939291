/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listen: the [accept] key listen and every listening socket of what runs
 * ("listen:PROTO:PORT"): a socket listens on PROTO:PORT (proc/net/tcp, tcp6, udp, udp6).
 */
#include "checks/check.h"
#include "checks/procnet.h"
#include "checks/snapshot.h"
#include "lib/basic/util.h"

/* "tcp:443" into a protocol and a port. */
static int parse_item(const char *s, ks_sock_proto *ret_p, uint16_t *ret_port)
{
    _cleanup_free_ char *proto = NULL;
    const char *colon = strchr(s, ':');
    unsigned long long port;
    ks_sock_proto p;

    if (!colon)
        return -EINVAL;
    proto = strndup(s, (size_t)(colon - s));
    if (!proto)
        return -ENOMEM;
    p = ks_sock_proto_from_string(proto);
    if (p < 0 || ks_safe_atou64(colon + 1, &port) < 0 || port == 0 || port > 65535)
        return -EINVAL;
    *ret_p = p;
    *ret_port = (uint16_t)port;
    return 0;
}

static int listens(const ks_root *root, ks_sock_proto p, uint16_t port, bool *ret)
{
    ks_socks s = {0};
    int r = ks_procnet_read(root, p, &s);

    if (r == -ENOENT) { /* no IPv6 in this kernel: nothing listens there */
        *ret = false;
        return 0;
    }
    if (r < 0)
        return r;
    *ret = ks_socks_listens(&s, p, port);
    ks_socks_done(&s);
    return 0;
}

/* A socket of the IPv6 family bound to [::] that takes IPv4 too (net.ipv6.bindv6only=0). */
static int dual_stack_listens(const ks_root *root, ks_sock_proto p6, uint16_t port, bool *ret)
{
    _cleanup_free_ char *v6only = NULL;
    ks_socks s = {0};
    bool tcp = p6 == KS_SOCK_TCP6;
    int r;

    *ret = false;
    if (ks_root_read_line(root, "proc/sys/net/ipv6/bindv6only", &v6only) < 0 || !streq(v6only, "0"))
        return 0;
    r = ks_procnet_read(root, p6, &s);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    for (size_t i = 0; i < s.n && !*ret; i++)
        *ret = s.v[i].local_port == port && ks_sock_is_wildcard(&s.v[i], true) &&
               s.v[i].state == (tcp ? KS_TCP_LISTEN : KS_TCP_CLOSE);
    ks_socks_done(&s);
    return 0;
}

int ks_check_listen(const ks_check_ctx *c, ks_check *chk)
{
    ks_sock_proto p;
    uint16_t port;
    bool found = false;
    int r;

    r = parse_item(chk->arg, &p, &port);
    if (r < 0)
        return r;
    r = listens(c->root, p, port, &found);
    if (r >= 0 && !found && (p == KS_SOCK_TCP || p == KS_SOCK_UDP))
        r = dual_stack_listens(c->root, p == KS_SOCK_TCP ? KS_SOCK_TCP6 : KS_SOCK_UDP6, port,
                               &found);
    if (r < 0)
        return r;
    free(chk->detail);
    chk->detail =
        ks_asprintf(found ? "a %s socket listens on port %u" : "no %s socket listens on port %u",
                    ks_sock_proto_to_string(p), (unsigned)port);
    return chk->detail ? found : -ENOMEM;
}

static void local_port_range(const ks_check_ctx *c, unsigned *lo, unsigned *hi)
{
    _cleanup_free_ char *line = NULL;

    *lo = 32768;
    *hi = 60999;
    if (ks_root_read_line(c->root, "proc/sys/net/ipv4/ip_local_port_range", &line) >= 0)
        (void)sscanf(line, "%u %u", lo, hi);
}

/* Listening TCP and bound UDP sockets outside the ephemeral port range. */
static int take_listen(const ks_check_ctx *c, ks_run_snapshot *s)
{
    unsigned lo, hi;
    int r = 0;

    local_port_range(c, &lo, &hi);
    for (ks_sock_proto p = 0; p < _KS_SOCK_PROTO_MAX; p++) {
        bool tcp_p = p == KS_SOCK_TCP || p == KS_SOCK_TCP6;
        ks_socks socks = {0};
        char port[8];

        r = ks_procnet_read(c->root, p, &socks);
        if (r == -ENOENT)
            continue;
        if (r < 0) {
            _cleanup_free_ char *what = NULL;
            if (r == -ENOMEM)
                return r;
            what = ks_asprintf("listen (%s)", ks_sock_proto_to_string(p));
            r = what ? ks_run_snapshot_skip(s, what, r) : -ENOMEM;
            if (r < 0)
                return r;
            continue;
        }
        for (size_t i = 0; i < socks.n && r >= 0; i++) {
            const ks_sock *x = &socks.v[i];
            if (x->state != (tcp_p ? KS_TCP_LISTEN : KS_TCP_CLOSE) || x->local_port == 0)
                continue;
            /* A port the kernel picked (the ephemeral range) differs per boot, unless the
             * socket is on the wildcard address: servers such as WireGuard (51820) are. */
            if (x->local_port >= lo && x->local_port <= hi &&
                !ks_sock_is_wildcard(x, !(p == KS_SOCK_TCP || p == KS_SOCK_UDP)))
                continue;
            snprintf(port, sizeof(port), "%u", (unsigned)x->local_port);
            r = ks_run_snapshot_add_item(s, true, "listen", ks_sock_proto_to_string(p), port, NULL);
        }
        ks_socks_done(&socks);
        if (r < 0)
            return r;
    }
    return 0;
}

static bool item_ok(const char *v)
{
    unsigned long long n;
    const char *colon = strchr(v, ':');

    return colon && ks_safe_atou64(colon + 1, &n) >= 0 && n > 0 && n < 65536 &&
           (ks_startswith(v, "tcp:") || ks_startswith(v, "tcp6:") || ks_startswith(v, "udp:") ||
            ks_startswith(v, "udp6:"));
}

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "listen", item_ok, NULL,
                   "PROTO:PORT, PROTO tcp, tcp6, udp or udp6, PORT 1-65535"),
    {0},
};

const ks_check_kind ks_check_kind_listen = {
    .name = "listen",
    .max_fields = 2,
    .run = ks_check_listen,
    .keys = keys,
    .item_key = "listen",
    .take = take_listen,
};
