/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/basic/root.h"

/*
 * The node's TCP counters: proc/net/snmp "Tcp:" and proc/net/netstat "TcpExt:". Both files hold
 * sections of two lines each, "Name: key key ..." then "Name: value value ...". The counters
 * count from the boot (per network namespace: from its creation), so a ratio over a window
 * needs two readings.
 */
typedef struct ks_tcp_counters {
    uint64_t out_segs;        /* Tcp: OutSegs, segments sent (retransmissions excluded) */
    uint64_t retrans_segs;    /* Tcp: RetransSegs */
    uint64_t in_segs;         /* Tcp: InSegs */
    bool has_ext;             /* proc/net/netstat had TcpExt: */
    uint64_t timeouts;        /* TcpExt: TCPTimeouts, retransmission timer expiries */
    uint64_t lost_retransmit; /* TcpExt: TCPLostRetransmit, retransmissions lost again */
} ks_tcp_counters;

/*
 * The value of key in section (e.g. "Tcp", "OutSegs") of a snmp or netstat text. Every section
 * pair the text has must be well formed (the same number of keys and values, values whole
 * numbers; Tcp: MaxConn is -1): -EBADMSG otherwise, -ENOENT when section or key is not there.
 * A negative value is -ERANGE.
 */
int ks_netstat_get(const char *text, size_t len, const char *section, const char *key,
                   uint64_t *ret);

/*
 * The counters from the two texts (netstat may be NULL: has_ext false). -EBADMSG as above, or
 * when snmp has no Tcp: OutSegs and RetransSegs.
 */
int ks_tcp_counters_parse(const char *snmp, size_t snmp_len, const char *netstat,
                          size_t netstat_len, ks_tcp_counters *ret);
/* proc/net/snmp and proc/net/netstat inside the root (a missing netstat: has_ext false). */
int ks_tcp_counters_read(const ks_root *root, ks_tcp_counters *ret);
