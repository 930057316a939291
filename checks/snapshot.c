/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The snapshot of what runs, and the checks of its items that have no [accept] key. */
#include <fnmatch.h>
#include <limits.h>
#include <net/if.h>
#include <time.h>

#include "checks/ifaddr.h"
#include "checks/procnet.h"
#include "checks/snapshot.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"
#include "lib/host/sysctl.h"

#define OUTPUT_MAX (4 * 1024 * 1024)

const char *const ks_snapshot_builtin_ignore[] = {
    /* Per login, per boot, bus-activated services that exit when idle, and kswap itself. */
    "service:user@*.service",
    "service:user-runtime-dir@*.service",
    "service:run-*.service",
    "service:kswap-accept.service",
    "service:apt-daily*.service",
    "service:packagekit.service",
    "service:fwupd.service",
    "service:systemd-hostnamed.service",
    "service:systemd-localed.service",
    "service:systemd-timedated.service",
    "service:polkit.service",
    "service:udisks2.service",
    /* Started by systemd-fsck@ while a boot's fsck runs, gone after 30 s idle (seen in the VM
     * suite: active when apply began, inactive a moment later). */
    "service:systemd-fsckd.service",
    /* Interfaces made per container or VM start. */
    "interface:veth*",
    "interface:vnet*",
    "interface:tap*",
    /* What Docker makes as it starts its networks (after network-online.target, with names
     * of its own): the bridge of each user network, br- and the first 12 hex digits of the
     * network's id; its iptables chains (iptables-nft puts them into nftables' ip and ip6
     * tables); the chains of its nftables backend, one set per network. docker.service
     * itself, the ports it publishes and the forwarding it turns on are items of their own. */
    "interface:br-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]"
    "[0-9a-f][0-9a-f]",
    "nft-chain:ip:*:DOCKER*",
    "nft-chain:ip6:*:DOCKER*",
    "nft-chain:ip:docker-bridges:*",
    "nft-chain:ip6:docker-bridges:*",
    NULL,
};

bool ks_snapshot_ignored(const char *id, char *const *extra)
{
    for (const char *const *p = ks_snapshot_builtin_ignore; *p; p++)
        if (fnmatch(*p, id, 0) == 0)
            return true;
    for (char *const *p = extra; p && *p; p++)
        if (fnmatch(*p, id, 0) == 0)
            return true;
    return false;
}

void ks_run_snapshot_done(ks_run_snapshot *s)
{
    free(s->kernel);
    ks_strv_free(s->items);
    ks_strv_free(s->skipped);
    ks_strv_free(s->wanted);
    free(s->conns);
    *s = (ks_run_snapshot){0};
}

static int add_vitem(ks_run_snapshot *s, bool required, const char *fmt, va_list ap)
{
    char *v = NULL;
    int r = ks_vasprintf_r(&v, fmt, ap);

    if (r < 0)
        return r;
    if (ks_strv_contains(s->items, v) || (!required && ks_strv_contains(s->wanted, v))) {
        free(v);
        return 0;
    }
    if (required && ks_strv_contains(s->wanted, v)) {
        /* Required wins: taken off the wanted list. */
        size_t w = 0;
        for (size_t i = 0; s->wanted[i]; i++)
            if (streq(s->wanted[i], v))
                free(s->wanted[i]);
            else
                s->wanted[w++] = s->wanted[i];
        s->wanted[w] = NULL;
    }
    return ks_strv_push(required ? &s->items : &s->wanted, v);
}

int ks_run_snapshot_add(ks_run_snapshot *s, bool required, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = add_vitem(s, required, fmt, ap);
    va_end(ap);
    return r;
}

static int add_item(ks_run_snapshot *s, const char *fmt, ...) _printf_(2, 3);
static int add_item(ks_run_snapshot *s, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = add_vitem(s, true, fmt, ap);
    va_end(ap);
    return r;
}

int ks_run_snapshot_skip(ks_run_snapshot *s, const char *what, int err)
{
    /* Programs are named "wireguard", "qdisc", ...; files "interfaces (sys/class/net)". */
    bool file = strchr(what, '(') != NULL;
    const char *why = err == -ENOENT  ? (file ? "not found" : "the program is not installed")
                      : err == -EPERM ? "under --root only a program outside /usr, /bin and /sbin "
                                        "may answer (the system's would describe this machine)"
                                      : strerror(-err);
    char *v = ks_asprintf("%s: %s", what, why);
    return v ? ks_strv_push(&s->skipped, v) : -ENOMEM;
}

int ks_run_snapshot_program(const ks_check_ctx *c, ks_run_snapshot *s, const char *what,
                            char **argv, char **ret_output)
{
    ks_spawn_result res = {0};
    int r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, what, r);
    if (!ks_spawn_succeeded(&res)) {
        _cleanup_free_ char *last = ks_spawn_last_line(&res);
        char *v = ks_asprintf("%s: %s %s: %s", what, argv[0],
                              res.timed_out ? "did not answer in time" : "failed",
                              last && *last ? last : "(no output)");
        ks_spawn_result_done(&res);
        return v ? ks_strv_push(&s->skipped, v) : -ENOMEM;
    }
    *ret_output = strndup(res.output ? res.output : "", res.output_len);
    ks_spawn_result_done(&res);
    return *ret_output ? 1 : -ENOMEM;
}

/* `systemctl list-units --type=service --state=active`: "NAME loaded active running ...". */
static int take_services(const ks_check_ctx *c, ks_run_snapshot *s)
{
    char *argv[] = {(char *)"systemctl",      (char *)"list-units",
                    (char *)"--type=service", (char *)"--state=active",
                    (char *)"--plain",        (char *)"--no-legend",
                    (char *)"--no-pager",     NULL};
    _cleanup_free_ char *out = NULL;
    const char *line;
    size_t pos = 0, n;
    int r = ks_run_snapshot_program(c, s, "services", argv, &out);

    if (r <= 0)
        return r;
    while (ks_next_line(out, strlen(out), &pos, &line, &n)) {
        size_t w;
        while (n && (*line == ' ' || *line == '*' || *line == '\t')) {
            line++;
            n--;
        }
        w = strcspn(line, " \t");
        if (w > n)
            w = n;
        if (w > 8 && strncmp(line + w - 8, ".service", 8) == 0 && line[0] != '-')
            if ((r = add_item(s, "service:%.*s", (int)w, line)) < 0)
                return r;
    }
    return 0;
}

static void local_port_range(const ks_check_ctx *c, unsigned *lo, unsigned *hi)
{
    _cleanup_free_ char *line = NULL;

    *lo = 32768;
    *hi = 60999;
    if (ks_root_read_line(c->root, "proc/sys/net/ipv4/ip_local_port_range", &line) >= 0)
        (void)sscanf(line, "%u %u", lo, hi);
}

static int cmp_port_conns(const void *a, const void *b)
{
    const ks_port_conns *x = a, *y = b;
    return (int)x->port - (int)y->port;
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
    if (s->n_conns > 1)
        qsort(s->conns, s->n_conns, sizeof(*s->conns), cmp_port_conns);
    return 0;
}

/* Listening TCP and bound UDP sockets outside the ephemeral port range; established count, in
 * all and per listening TCP port. */
static int take_sockets(const ks_check_ctx *c, ks_run_snapshot *s)
{
    ks_socks tcp[2] = {{0}, {0}}; /* tcp and tcp6, kept for the connections per port */
    unsigned lo, hi;
    int r = 0;

    local_port_range(c, &lo, &hi);
    for (ks_sock_proto p = 0; p < _KS_SOCK_PROTO_MAX; p++) {
        bool tcp_p = p == KS_SOCK_TCP || p == KS_SOCK_TCP6;
        ks_socks socks = {0};

        r = ks_procnet_read(c->root, p, &socks);
        if (r == -ENOENT)
            continue;
        if (r < 0) {
            if (r == -ENOMEM)
                goto out;
            _cleanup_free_ char *what = ks_asprintf("listen (%s)", ks_sock_proto_to_string(p));
            r = what ? ks_run_snapshot_skip(s, what, r) : -ENOMEM;
            if (r < 0)
                goto out;
            continue;
        }
        for (size_t i = 0; i < socks.n; i++) {
            const ks_sock *x = &socks.v[i];
            if (tcp_p && x->state == KS_TCP_ESTABLISHED)
                s->established++;
            if (x->state != (tcp_p ? KS_TCP_LISTEN : KS_TCP_CLOSE) || x->local_port == 0)
                continue;
            /* A port the kernel picked (the ephemeral range) differs per boot, unless the
             * socket is on the wildcard address: servers such as WireGuard (51820) are. */
            if (x->local_port >= lo && x->local_port <= hi &&
                !ks_sock_is_wildcard(x, !(p == KS_SOCK_TCP || p == KS_SOCK_UDP)))
                continue;
            r = add_item(s, "listen:%s:%u", ks_sock_proto_to_string(p), x->local_port);
            if (r < 0) {
                ks_socks_done(&socks);
                goto out;
            }
        }
        if (tcp_p)
            tcp[p == KS_SOCK_TCP6] = socks;
        else
            ks_socks_done(&socks);
    }
    r = take_conns(s, tcp);
out:
    ks_socks_done(&tcp[0]);
    ks_socks_done(&tcp[1]);
    return r;
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
                ? add_item(s, "interface:%s", *n)
                : add_item(s, "interface:%s:%s", *n, KS_INTERFACE_NO_CARRIER);
        if (r < 0)
            return r;
    }
    return 0;
}

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
        _cleanup_free_ char *up = ks_asprintf("interface:%s", a.v[i].ifname),
                            *no_carrier = ks_asprintf("interface:%s:%s", a.v[i].ifname,
                                                      KS_INTERFACE_NO_CARRIER);
        if (!up || !no_carrier) {
            r = -ENOMEM;
            break;
        }
        if ((ks_strv_contains(s->items, up) || ks_strv_contains(s->items, no_carrier)) &&
            ks_ifaddr_is_stable(&a.v[i]))
            r = add_item(s, "%s:%s:%s", a.v[i].v6 ? "address" : "network", a.v[i].ifname,
                         a.v[i].prefix);
    }
    ks_ifaddrs_done(&a);
    return r < 0 ? r : 0;
}

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
    for (char **p = routes; p && *p; p++)
        if ((r = add_item(s, "route:%s", *p)) < 0)
            return r;
    return 0;
}

static const char *str_member(json_object *o, const char *key)
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) != json_type_string)
        return NULL;
    return json_object_get_string(v);
}

/* `tc -j qdisc show`: [{"kind", "handle", "dev", "root": true, ...}, ...] */
static int take_qdiscs(const ks_check_ctx *c, ks_run_snapshot *s)
{
    char *argv[] = {(char *)"tc", (char *)"-j", (char *)"qdisc", (char *)"show", NULL};
    _cleanup_free_ char *out = NULL;
    json_object *doc;
    int r = ks_run_snapshot_program(c, s, "qdisc", argv, &out);

    if (r <= 0)
        return r;
    doc = json_tokener_parse(out);
    if (!doc || json_object_get_type(doc) != json_type_array) {
        json_object_put(doc);
        return ks_run_snapshot_skip(s, "qdisc", -EBADMSG);
    }
    for (size_t i = 0; i < json_object_array_length(doc); i++) {
        json_object *q = json_object_array_get_idx(doc, i), *root;
        const char *dev = str_member(q, "dev"), *kind = str_member(q, "kind");
        if (dev && kind && json_object_object_get_ex(q, "root", &root) &&
            json_object_get_boolean(root) && !strchr(dev, '/') &&
            (r = add_item(s, "qdisc:%s:%s", dev, kind)) < 0)
            break;
    }
    json_object_put(doc);
    return r < 0 ? r : 0;
}

/* `nft -j list tables` and `nft -j list chains`. */
static int nft_list(const ks_check_ctx *c, ks_run_snapshot *s, const char *what, json_object **ret)
{
    char *argv[] = {(char *)"nft", (char *)"-j", (char *)"list", (char *)what, NULL};
    _cleanup_free_ char *out = NULL, *label = ks_asprintf("nftables %s", what);
    json_object *doc, *arr;
    int r;

    *ret = NULL;
    if (!label)
        return -ENOMEM;
    if (s)
        r = ks_run_snapshot_program(c, s, label, argv, &out);
    else {
        ks_spawn_result res = {0};
        r = ks_check_spawn(c, argv, c->program_timeout_ms ? c->program_timeout_ms : 30000, &res);
        if (r < 0)
            return r;
        r = ks_spawn_succeeded(&res) ? 1 : -EIO;
        if (r > 0 && !(out = strndup(res.output ? res.output : "", res.output_len)))
            r = -ENOMEM;
        ks_spawn_result_done(&res);
        if (r < 0)
            return r;
    }
    if (r <= 0)
        return r;
    doc = *out ? json_tokener_parse(out) : json_object_new_object();
    if (!doc || json_object_get_type(doc) != json_type_object) {
        json_object_put(doc);
        return s ? ks_run_snapshot_skip(s, label, -EBADMSG) : -EBADMSG;
    }
    if (!json_object_object_get_ex(doc, "nftables", &arr) ||
        json_object_get_type(arr) != json_type_array) {
        json_object_put(doc);
        *ret = json_object_new_array();
        return *ret ? 1 : -ENOMEM;
    }
    *ret = json_object_get(arr);
    json_object_put(doc);
    return 1;
}

static int take_nft(const ks_check_ctx *c, ks_run_snapshot *s)
{
    json_object *arr = NULL;
    int r = nft_list(c, s, "tables", &arr);

    for (size_t i = 0; r > 0 && i < json_object_array_length(arr); i++) {
        json_object *t;
        const char *fam, *name;
        if (!json_object_object_get_ex(json_object_array_get_idx(arr, i), "table", &t))
            continue;
        fam = str_member(t, "family");
        name = str_member(t, "name");
        if (fam && name && (r = add_item(s, "nft-table:%s:%s", fam, name)) >= 0)
            r = 1;
    }
    json_object_put(arr);
    if (r < 0)
        return r;
    arr = NULL;
    r = nft_list(c, s, "chains", &arr);
    for (size_t i = 0; r > 0 && i < json_object_array_length(arr); i++) {
        json_object *t;
        const char *fam, *table, *name;
        if (!json_object_object_get_ex(json_object_array_get_idx(arr, i), "chain", &t))
            continue;
        fam = str_member(t, "family");
        table = str_member(t, "table");
        name = str_member(t, "name");
        if (fam && table && name && (r = add_item(s, "nft-chain:%s:%s:%s", fam, table, name)) >= 0)
            r = 1;
    }
    json_object_put(arr);
    return r < 0 ? r : 0;
}

/*
 * Whether this boot is a trial whose softdog kswap loaded (kswap.softdog=1 on the command line,
 * lib/engine/trialboot.h): a node that applies again on the boot its last trial was pinned in
 * runs softdog and the watchdog core it pulled in, and the next trial loads them only when it
 * arms softdog itself. Seen in the VM suite's repo scenario: the second trial failed on both.
 */
static bool softdog_is_kswaps(const ks_check_ctx *c)
{
    _cleanup_free_ char *cmdline = NULL;
    _cleanup_strv_free_ char **words = NULL;

    return ks_root_read_line(c->root, "proc/cmdline", &cmdline) >= 0 &&
           ks_strv_split(cmdline, " \t", &words) >= 0 && ks_strv_contains(words, "kswap.softdog=1");
}

static int take_modules(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_free_ char *text = NULL;
    const char *line;
    size_t len, pos = 0, n;
    bool skip_softdog = softdog_is_kswaps(c);
    int r = ks_root_read_file(c->root, "proc/modules", 4 * 1024 * 1024, &text, &len);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, "modules (proc/modules)", r);
    while (ks_next_line(text, len, &pos, &line, &n)) {
        size_t w = strcspn(line, " ");
        if (skip_softdog && ((w == 7 && memcmp(line, "softdog", 7) == 0) ||
                             (w == 8 && memcmp(line, "watchdog", 8) == 0)))
            continue;
        if (w && w < n && (r = add_item(s, "module:%.*s", (int)w, line)) < 0)
            return r;
    }
    return 0;
}

/*
 * net.* sysctls as they run: every net.* key the node's sysctl.d files set (what systemd-sysctl
 * applies at boot) with its live value, and forwarding when it is on (turned on at run time by
 * wg-quick, docker, a firewall script, none of which writes a sysctl file). Other keys are the
 * kernel's defaults, which a new kernel may change on purpose (XanMod's own qdisc and BBR).
 */
static const char *const runtime_sysctls[] = {
    "net.ipv4.ip_forward",
    "net.ipv6.conf.all.forwarding",
    "net.ipv4.conf.all.src_valid_mark",
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
    return add_item(s, "sysctl:%s=%s", key, v);
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

int ks_run_snapshot_take(const ks_check_ctx *c, ks_run_snapshot *ret)
{
    static int (*const takers[])(const ks_check_ctx *, ks_run_snapshot *) = {
        take_services,  take_sockets, take_interfaces,
        take_addresses, take_routes,  ks_snapshot_take_wireguard,
        take_qdiscs,    take_nft,     take_modules,
        take_sysctls,
    };
    ks_run_snapshot s = {0};
    int r;

    if (c->kernel && !(s.kernel = strdup(c->kernel)))
        return -ENOMEM;
    for (size_t i = 0; i < ARRAY_SIZE(takers); i++) {
        r = takers[i](c, &s);
        if (r < 0) {
            ks_run_snapshot_done(&s);
            return r;
        }
    }
    if (!s.items && !(s.items = calloc(1, sizeof(char *)))) {
        ks_run_snapshot_done(&s);
        return -ENOMEM;
    }
    ks_strv_sort(s.items);
    ks_strv_sort(s.wanted);
    *ret = s;
    return 0;
}

static json_object *strv_json(char *const *v)
{
    json_object *a = json_object_new_array();

    for (; a && v && *v; v++)
        if (json_object_array_add(a, json_object_new_string(*v)) < 0) {
            json_object_put(a);
            return NULL;
        }
    return a;
}

/* {"tcp:443": 12, ...} */
static json_object *conns_json(const ks_run_snapshot *s)
{
    json_object *o = json_object_new_object();

    for (size_t i = 0; o && i < s->n_conns; i++) {
        char key[16];
        snprintf(key, sizeof(key), "tcp:%u", (unsigned)s->conns[i].port);
        if (json_object_object_add(o, key, json_object_new_int64(s->conns[i].established)) < 0) {
            json_object_put(o);
            return NULL;
        }
    }
    return o;
}

json_object *ks_run_snapshot_to_json(const ks_run_snapshot *s)
{
    json_object *o = json_object_new_object();

    if (!o)
        return NULL;
    if (json_object_object_add(o, "kernel", s->kernel ? json_object_new_string(s->kernel) : NULL) <
            0 ||
        json_object_object_add(o, "items", strv_json(s->items)) < 0 ||
        json_object_object_add(o, "skipped", strv_json(s->skipped)) < 0 ||
        json_object_object_add(o, "wanted", strv_json(s->wanted)) < 0 ||
        json_object_object_add(o, "established", json_object_new_int64(s->established)) < 0 ||
        json_object_object_add(o, "connections", conns_json(s)) < 0) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static int strv_from_json(json_object *a, char ***ret)
{
    _cleanup_strv_free_ char **out = calloc(1, sizeof(char *));
    int r;

    if (!out)
        return -ENOMEM;
    if (!a) {
        *ret = TAKE_PTR(out);
        return 0;
    }
    if (json_object_get_type(a) != json_type_array)
        return -EBADMSG;
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *v = json_object_array_get_idx(a, i);
        if (json_object_get_type(v) != json_type_string)
            return -EBADMSG;
        if ((r = ks_strv_extend(&out, json_object_get_string(v))) < 0)
            return r;
    }
    *ret = TAKE_PTR(out);
    return 0;
}

/* "connections": absent or null (an older kswap) is none; else "tcp:PORT": count pairs. */
static int conns_from_json(json_object *o, ks_run_snapshot *s)
{
    if (!o)
        return 0;
    if (json_object_get_type(o) != json_type_object)
        return -EBADMSG;
    s->conns = calloc(json_object_object_length(o) + 1, sizeof(*s->conns));
    if (!s->conns)
        return -ENOMEM;
    json_object_object_foreach(o, key, v)
    {
        const char *p = ks_startswith(key, "tcp:");
        unsigned long long port;
        int64_t n = json_object_get_int64(v);

        if (!p || ks_safe_atou64(p, &port) < 0 || port == 0 || port > 65535 ||
            json_object_get_type(v) != json_type_int || n < 0 || n > UINT32_MAX)
            return -EBADMSG;
        for (size_t i = 0; i < s->n_conns; i++)
            if (s->conns[i].port == port)
                return -EBADMSG;
        s->conns[s->n_conns++] =
            (ks_port_conns){.port = (uint16_t)port, .established = (unsigned)n};
    }
    if (s->n_conns > 1)
        qsort(s->conns, s->n_conns, sizeof(*s->conns), cmp_port_conns);
    return 0;
}

int ks_run_snapshot_from_json(json_object *o, ks_run_snapshot *ret)
{
    ks_run_snapshot s = {0};
    json_object *v;
    int r;

    if (!o || json_object_get_type(o) != json_type_object)
        return -EBADMSG;
    if (json_object_object_get_ex(o, "kernel", &v) && v &&
        (json_object_get_type(v) != json_type_string ||
         !(s.kernel = strdup(json_object_get_string(v)))))
        return json_object_get_type(v) != json_type_string ? -EBADMSG : -ENOMEM;
    json_object_object_get_ex(o, "items", &v);
    r = strv_from_json(json_object_object_get_ex(o, "items", &v) ? v : NULL, &s.items);
    if (r >= 0)
        r = strv_from_json(json_object_object_get_ex(o, "skipped", &v) ? v : NULL, &s.skipped);
    /* Absent in journals of an older kswap: everything was required. */
    if (r >= 0)
        r = strv_from_json(json_object_object_get_ex(o, "wanted", &v) ? v : NULL, &s.wanted);
    if (r >= 0 && json_object_object_get_ex(o, "established", &v) && v) {
        int64_t n = json_object_get_int64(v);
        if (json_object_get_type(v) != json_type_int || n < 0 || n > UINT32_MAX)
            r = -EBADMSG;
        else
            s.established = (unsigned)n;
    }
    if (r >= 0)
        r = conns_from_json(json_object_object_get_ex(o, "connections", &v) ? v : NULL, &s);
    if (r < 0) {
        ks_run_snapshot_done(&s);
        return r;
    }
    *ret = s;
    return 0;
}

/* A snapshot sysctl whose key an [accept] sysctl check names already: the configured value
 * is what the trial must have (the operator may change it on purpose). */
static bool sysctl_configured(const ks_checklist *l, const char *item)
{
    const char *key = ks_startswith(item, "sysctl:");
    size_t kn;

    if (!key)
        return false;
    kn = strcspn(key, "=");
    for (size_t i = 0; i < l->n; i++) {
        const char *id = ks_startswith(l->v[i].id, "sysctl:");
        if (id && !l->v[i].from_snapshot && strncmp(id, key, kn) == 0 && id[kn] == '=')
            return true;
    }
    return false;
}

/* The users of each port that had some at arming: wanted, required by [accept]
 * connections_required (never on the management port). */
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

/* An address, network or qdisc of an interface that is ignored (interface:veth*) is ignored with
 * it, and so is the interface in any state (interface:docker0 ignores
 * interface:docker0:no-carrier): a container's veth has a new name and its own noqueue root
 * qdisc on every start. */
static bool interface_ignored(const char *id, char *const *ignore)
{
    static const char *const prefixes[] = {"address:", "network:", "interface:", "qdisc:"};
    const char *rest = NULL;
    _cleanup_free_ char *itf = NULL;

    for (size_t i = 0; i < ARRAY_SIZE(prefixes) && !rest; i++)
        rest = ks_startswith(id, prefixes[i]);
    if (!rest || !strchr(rest, ':'))
        return false;
    itf = ks_asprintf("interface:%.*s", (int)strcspn(rest, ":"), rest);
    return itf && ks_snapshot_ignored(itf, ignore);
}

/* One check per item of the snapshot that nothing ignores and l has not already. */
static int add_items(ks_checklist *l, char *const *items, bool required, char *const *ignore)
{
    static const struct {
        const char *prefix;
        ks_check_fn fn;
    } kinds[] = {
        {"service:", ks_check_service},     {"listen:", ks_check_listen},
        {"interface:", ks_check_interface}, {"route:", ks_check_route},
        {"wireguard:", ks_check_wireguard}, {"wg-peer:", ks_check_wg_peer},
        {"qdisc:", ks_check_qdisc},         {"nft-table:", ks_check_nft_table},
        {"nft-chain:", ks_check_nft_chain}, {"module:", ks_check_module},
        {"sysctl:", ks_check_sysctl},       {"address:", ks_check_address},
        {"network:", ks_check_address},
    };
    int r;

    for (char *const *p = items; p && *p; p++) {
        if (ks_checklist_find(l, *p) || ks_snapshot_ignored(*p, ignore) ||
            sysctl_configured(l, *p) || interface_ignored(*p, ignore))
            continue;
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
            size_t pl = strlen(kinds[i].prefix);
            if (strncmp(*p, kinds[i].prefix, pl) != 0 || !(*p)[pl])
                continue;
            _cleanup_free_ char *kind = strndup(*p, pl - 1);
            if (!kind)
                return -ENOMEM;
            r = ks_checklist_add(l, kind, *p + pl, required, kinds[i].fn);
            if (r < 0)
                return r;
            l->v[l->n - 1].from_snapshot = true;
            break;
        }
    }
    return 0;
}

int ks_checklist_add_snapshot(ks_checklist *l, const ks_run_snapshot *s, const ks_config *cfg)
{
    _cleanup_strv_free_ char **ignore = NULL;
    int r;

    r = ks_config_get_strv(cfg, "accept", "ignore", NULL, &ignore);
    if (r < 0)
        return r;
    r = add_items(l, s->items, true, ignore);
    if (r < 0)
        return r;
    r = add_items(l, s->wanted, false, ignore);
    if (r < 0)
        return r;
    return add_conns_checks(l, s, cfg, ignore);
}

/* ---- the checks of items without an [accept] key ---- */

static int set_detail(ks_check *chk, char *d, int verdict)
{
    if (!d)
        return -ENOMEM;
    free(chk->detail);
    chk->detail = d;
    return verdict;
}

int ks_check_route(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **routes = NULL;
    int r = ks_default_routes(c->root, &routes);

    if (r < 0)
        return r;
    return set_detail(chk,
                      ks_asprintf("%s route via %s %s",
                                  ks_startswith(chk->arg, "default6:") ? "IPv6 default" : "default",
                                  strchr(chk->arg, ':') + 1,
                                  ks_strv_contains(routes, chk->arg) ? "present" : "missing"),
                      ks_strv_contains(routes, chk->arg));
}

int ks_check_nft_chain(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **part = NULL;
    json_object *arr = NULL;
    bool found = false;
    int r;

    /* FAMILY:TABLE:NAME */
    if ((r = ks_strv_split(chk->arg, ":", &part)) < 0)
        return r;
    if (ks_strv_length(part) != 3)
        return -EINVAL;
    r = nft_list(c, NULL, "chains", &arr);
    if (r < 0)
        return r;
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *t;
        if (json_object_object_get_ex(json_object_array_get_idx(arr, i), "chain", &t) &&
            streq_ptr(str_member(t, "family"), part[0]) &&
            streq_ptr(str_member(t, "table"), part[1]) && streq_ptr(str_member(t, "name"), part[2]))
            found = true;
    }
    json_object_put(arr);
    return set_detail(chk,
                      ks_asprintf("nftables chain %s %s %s %s", part[0], part[1], part[2],
                                  found ? "present" : "missing"),
                      found);
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
    return set_detail(chk,
                      ks_asprintf("%zu connection%s to TCP port %llu (%u at arming)", n,
                                  n == 1 ? "" : "s", port, chk->baseline),
                      n > 0);
}

int ks_check_address(const ks_check_ctx *c, ks_check *chk)
{
    const char *colon = strchr(chk->arg, ':');
    _cleanup_free_ char *ifname = NULL;
    const ks_ifaddr *found = NULL;
    ks_ifaddrs a = {0};
    bool v6 = ks_startswith(chk->id, "address:");
    int r;

    if (!colon || colon == chk->arg || !colon[1])
        return -EINVAL;
    ifname = strndup(chk->arg, (size_t)(colon - chk->arg));
    if (!ifname)
        return -ENOMEM;
    r = ks_ifaddrs_read(c->root, &a);
    if (r < 0)
        return r;
    for (size_t i = 0; i < a.n && !found; i++)
        if (a.v[i].v6 == v6 && streq(a.v[i].ifname, ifname) && streq(a.v[i].prefix, colon + 1))
            found = &a.v[i];
    r = set_detail(chk,
                   ks_asprintf("%s %s on %s: %s", v6 ? "address" : "IPv4 network", colon + 1,
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
