/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * WireGuard as `wg show all dump` shows it: each interface ("wireguard:IF") and each peer that
 * was in touch at arming ("wg-peer:IF:KEY"), judged as the node's operator judges users. The
 * interface is required (its listen port is a listen:udp: item). A peer is required only where
 * the node keeps the link up by itself: an endpoint its own configuration gives and a
 * persistent keepalive (site-to-site). A roaming client (a phone, a laptop) shakes hands when it
 * has something to send; after a reboot the server does not even know where it is, and an idle
 * client may stay away for hours: it is reported (wanted), never required.
 */
#include <time.h>

#include "checks/snapshot.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"

#define WG_HANDSHAKE_RECENT_S 180 /* WireGuard renews a session every 2 minutes under traffic */

/*
 * One line of the dump: an interface has 5 fields (IF, private key, public key, listen port,
 * fwmark), a peer 9 (IF, public key, preshared key, endpoint, allowed ips, latest handshake in
 * seconds since the epoch or 0, rx, tx, persistent keepalive "off" or seconds).
 */
typedef struct wg_entry {
    const char *ifname;
    const char *peer;     /* NULL: the interface line */
    const char *endpoint; /* "(none)" until configured or learned */
    const char *keepalive;
    const char *port; /* the interface's listen port */
    long long handshake;
} wg_entry;

typedef int (*wg_fn)(void *userdata, const wg_entry *e);

static int wg_dump_parse(const char *out, wg_fn fn, void *userdata)
{
    const char *line;
    size_t pos = 0, n;
    int r;

    while (ks_next_line(out, strlen(out), &pos, &line, &n)) {
        _cleanup_free_ char *l = strndup(line, n);
        _cleanup_strv_free_ char **f = NULL;
        wg_entry e;

        if (!l)
            return -ENOMEM;
        if ((r = ks_strv_split(l, "\t", &f)) < 0)
            return r;
        if (ks_strv_length(f) == 5)
            e = (wg_entry){.ifname = f[0], .port = f[3]};
        else if (ks_strv_length(f) == 9)
            e = (wg_entry){.ifname = f[0],
                           .peer = f[1],
                           .endpoint = f[3],
                           .handshake = strtoll(f[5], NULL, 10),
                           .keepalive = f[8]};
        else
            continue;
        r = fn(userdata, &e);
        if (r < 0)
            return r;
    }
    return 0;
}

/* `wg show all dump`, asked once per round for every WireGuard check. */
static int wg_dump(const ks_check_ctx *c, char **ret)
{
    return ks_check_program(
        c, (char *[]){(char *)"wg", (char *)"show", (char *)"all", (char *)"dump", NULL}, true, ret,
        NULL);
}

static bool handshake_recent(long long hs, long long *ret_ago)
{
    long long ago = (long long)time(NULL) - hs;

    if (ret_ago)
        *ret_ago = ago < 0 ? 0 : ago;
    return hs > 0 && ago <= WG_HANDSHAKE_RECENT_S;
}

/* The node keeps the link up by itself: it knows the peer's endpoint and sends keepalives. */
static bool keeps_link_up(const wg_entry *e)
{
    return !streq(e->endpoint, "(none)") && !streq(e->keepalive, "off") &&
           !streq(e->keepalive, "0");
}

static int take_one(void *userdata, const wg_entry *e)
{
    ks_run_snapshot *s = userdata;

    if (!e->peer)
        return ks_run_snapshot_add_item(s, true, "wireguard", e->ifname, NULL);
    /* A peer idle at arming is not in touch: nothing to compare after the trial. */
    if (!handshake_recent(e->handshake, NULL))
        return 0;
    return ks_run_snapshot_add_item(s, keeps_link_up(e), "wg-peer", e->ifname, e->peer, NULL);
}

static int take_wireguard(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_free_ char *out = NULL;
    char *argv[] = {(char *)"wg", (char *)"show", (char *)"all", (char *)"dump", NULL};
    int r = ks_run_snapshot_program(c, s, "wireguard", argv, &out);

    return r <= 0 ? r : wg_dump_parse(out, take_one, s);
}

typedef struct wg_find {
    const char *ifname, *peer;
    bool found;
    bool self;   /* keeps_link_up() */
    bool recent; /* handshake_recent() */
    long long ago;
    char *port;
} wg_find;

static int find_one(void *userdata, const wg_entry *e)
{
    wg_find *f = userdata;

    if (!streq(e->ifname, f->ifname) ||
        (f->peer ? !e->peer || !streq(e->peer, f->peer) : e->peer != NULL))
        return 0;
    f->found = true;
    if (!e->peer) {
        free(f->port);
        f->port = strdup(e->port);
        return f->port ? 0 : -ENOMEM;
    }
    f->self = keeps_link_up(e);
    f->recent = handshake_recent(e->handshake, &f->ago);
    return 0;
}

int ks_check_wireguard(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *out = NULL, *ifname = ks_check_id_unescape(chk->arg, strlen(chk->arg));
    wg_find f = {.ifname = ifname};
    int r = ifname ? wg_dump(c, &out) : -ENOMEM;

    if (r >= 0)
        r = wg_dump_parse(out, find_one, &f);
    if (r >= 0)
        r = ks_check_detail(
            chk,
            f.found ? ks_asprintf("WireGuard interface %s configured, listen port %s", ifname,
                                  strempty(f.port))
                    : ks_asprintf("WireGuard interface %s missing from wg show", ifname),
            f.found);
    free(f.port);
    return r;
}

int ks_check_wg_peer(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *out = NULL;
    _cleanup_strv_free_ char **fields = NULL;
    const char *ifname;
    wg_find f = {0};
    int r;

    /* IF:KEY */
    r = ks_check_arg_fields(chk->arg, 2, &fields);
    if (r < 0)
        return r;
    if (ks_strv_length(fields) != 2 || !*fields[0] || !*fields[1])
        return -EINVAL;
    f.ifname = ifname = fields[0];
    f.peer = fields[1];
    r = wg_dump(c, &out);
    if (r >= 0)
        r = wg_dump_parse(out, find_one, &f);
    free(f.port);
    if (r < 0)
        return r;
    if (!f.found)
        return ks_check_detail(chk, ks_asprintf("peer %s of %s: not configured", f.peer, ifname),
                               0);
    if (f.recent)
        return ks_check_detail(
            chk, ks_asprintf("peer %s of %s: handshake %lld s ago", f.peer, ifname, f.ago), 1);
    if (!f.self) {
        /*
         * No endpoint configured here, or no keepalive: only the client can start the next
         * handshake, in its own time. Required by a snapshot of an older kswap, or taken as a
         * site-to-site link at arming with an endpoint the client had taught: reported now.
         */
        chk->required = false;
        return ks_check_detail(
            chk,
            ks_asprintf("peer %s of %s: no handshake yet; this node does not keep "
                        "the link up by itself (no endpoint configured here, or "
                        "no persistent keepalive): a roaming client comes back "
                        "in its own time (reported, not required)",
                        f.peer, ifname),
            0);
    }
    return ks_check_detail(chk,
                           ks_asprintf("peer %s of %s: no handshake within %d s yet", f.peer,
                                       ifname, WG_HANDSHAKE_RECENT_S),
                           0);
}

const ks_check_kind ks_check_kind_wireguard = {
    .name = "wireguard",
    .max_fields = 1,
    .run = ks_check_wireguard,
    .ifname_field = 1,
    /* One taker for both kinds: one dump. */
    .take = take_wireguard,
};

const ks_check_kind ks_check_kind_wg_peer = {
    .name = "wg-peer",
    .max_fields = 2,
    .run = ks_check_wg_peer,
    .ifname_field = 1,
};
