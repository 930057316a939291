/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdint.h>

#include "checks/check.h"
#include "lib/basic/util.h"

/*
 * What runs, as check ids of the kinds' takers (checks/check.h) ("service:ssh.service",
 * "listen:tcp:22", "interface:eth0", "address:eth0:2001:db8::5/64", "network:eth0:203.0.113.0/24",
 * "route:default:eth0", "wireguard:wg0", "wg-peer:wg0:KEY", "qdisc:eth0:fq",
 * "nft-table:inet:filter", "nft-chain:inet:filter:input", "module:wireguard"), taken on the old
 * kernel when a trial is armed and kept in the state journal ("running"). After the trial boot each
 * item is a required check that must pass again ("everything comes back"). Read the way the
 * system's tools do: systemctl list-units, proc/net/{tcp,udp}{,6}, sys/class/net/IF/flags,
 * proc/net/if_inet6, proc/net/route and ipv6_route, `wg show all dump`, `tc -j qdisc show`, `nft -j
 * list tables` and `list chains`, proc/modules; under --root from the same files inside the root
 * and the tests' fakes on PATH.
 */
/* The users of one service: connections that came in to a TCP port something listened on. */
typedef struct ks_port_conns {
    uint16_t port;
    unsigned established; /* from peers off loopback (checks/procnet.h) */
} ks_port_conns;

typedef struct ks_run_snapshot {
    char *kernel;
    char **items;   /* sorted, unique */
    char **skipped; /* "wireguard: wg is not installed": what was not snapshotted and why */
    /* Items reported after the trial, never required: what the node cannot bring back by
     * itself (a roaming WireGuard client); sorted, none in journals of an older kswap. */
    char **wanted;
    unsigned established;
    /* Per listening TCP port of items (listen:tcp:P, listen:tcp6:P) with at least one
     * connection, sorted by port; none in journals of an older kswap. */
    ks_port_conns *conns;
    size_t n_conns;
} ks_run_snapshot;

int ks_run_snapshot_take(const ks_check_ctx *c, ks_run_snapshot *ret);
/*
 * For the snapshot takers: adds the item "KIND:F1:...:Fn" of the raw fields (up to 7, then
 * NULL), each escaped (checks/check.h, ks_check_id_escape()), to items (required) or wanted,
 * once.
 */
int ks_run_snapshot_add_item(ks_run_snapshot *s, bool required, const char *kind, ...)
    __attribute__((sentinel));
/* The form of the ids in the JSON ("id_version"): 2 escapes each field; 1 (or none) did not. */
#define KS_SNAPSHOT_ID_VERSION 2
/* Records that what (a program's part, "wireguard"; a file's, "interfaces (sys/class/net)")
 * could not be read: err says why. 0, or -ENOMEM. */
int ks_run_snapshot_skip(ks_run_snapshot *s, const char *what, int err);
/* Runs a program for a taker: 1 with its output, 0 when it could not run or failed (recorded
 * in skipped as what), -ENOMEM. */
int ks_run_snapshot_program(const ks_check_ctx *c, ks_run_snapshot *s, const char *what,
                            char **argv, char **ret_output);

void ks_run_snapshot_done(ks_run_snapshot *s);
/* {"kernel", "id_version": 2, "items": [...], "skipped": [...], "wanted": [...], "established":
 * N, "connections": {"tcp:443": N, ...}}; NULL when out of memory. */
json_object *ks_run_snapshot_to_json(const ks_run_snapshot *s);
/* -EBADMSG when o is not such an object. Ids of a journal without id_version (an older kswap)
 * come back in today's form. */
int ks_run_snapshot_from_json(json_object *o, ks_run_snapshot *ret);

/* Whether an id is expected to differ between boots: a pattern of its kind (the kind's
 * ignore list, checks/check.h) or of extra ([accept] ignore) matches it (fnmatch(3)). */
bool ks_snapshot_ignored(const char *id, char *const *extra);
/* Sorts connection counts by port. */
void ks_port_conns_sort(ks_port_conns *v, size_t n);

/*
 * Adds one required check per item of s (a wanted one per item of s->wanted) that no pattern
 * ignores (the kinds' and [accept] ignore of cfg, which may be NULL; an item of an ignored
 * interface with it), that no configured check of its kind replaces (a sysctl key configured
 * with a value of its own) and that l has not already (configured checks come first), each
 * with its kind's check. Then each kind's checks beyond the items: one "connections:tcp:PORT"
 * per port of s->conns (ks_check_connections): wanted, and required only where [accept]
 * connections_required is not 0 and the port had at least that many connections, unless it
 * is the management port ([accept] management: the session that ran kswap is often its only
 * one).
 */
int ks_checklist_add_snapshot(ks_checklist *l, const ks_run_snapshot *s, const ks_config *cfg);
