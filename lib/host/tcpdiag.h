/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h> /* AF_INET, AF_INET6 */

#include "lib/basic/root.h"

/*
 * The node's established TCP connections as the kernel's socket diagnostics give them
 * (NETLINK_SOCK_DIAG, an inet_diag_req_v2 per address family with the INET_DIAG_INFO and
 * INET_DIAG_CONG extensions: what `ss -ti` prints, iproute2 misc/ss.c): per connection its
 * congestion control and the figures of its struct tcp_info. A connection keeps the congestion
 * control it was created with; net.ipv4.tcp_congestion_control applies to new ones only.
 *
 * On the live host the kernel answers (lib/host/sockdiag.c). Under another root the fixture
 * file KS_TCPDIAG_FIXTURE stands in: the JSON document `kswap --json report --connections`
 * prints, of which only "connections" is read (test/capture-root.sh captures it so).
 */
#define KS_TCPDIAG_FIXTURE "proc/net/kswap-sock-diag.json"
/* TCP_CA_NAME_MAX of the kernel, with its NUL. */
#define KS_TCP_CA_NAME_MAX 16
/* Larger fixture files are not fixtures. A connection is one object of 21 members (42 values,
 * keys counted), so 65536 connections fit and json-c's tree stays under some 250 MiB. */
#define KS_TCPDIAG_FIXTURE_MAX (16u << 20)
#define KS_TCPDIAG_FIXTURE_MAX_CONTAINERS (65536u + 2)
#define KS_TCPDIAG_FIXTURE_MAX_VALUES (65536u * 48)

typedef struct ks_tcp_conn {
    int family;        /* AF_INET or AF_INET6 */
    uint8_t local[16]; /* network byte order; IPv4: the first 4 bytes */
    uint8_t remote[16];
    uint16_t local_port, remote_port;
    uint32_t uid;
    uint64_t inode;
    char cc[KS_TCP_CA_NAME_MAX]; /* the congestion control; "" when the kernel did not say */
    bool has_info;               /* struct tcp_info came with it (INET_DIAG_INFO) */
    uint32_t rtt_us, rttvar_us, min_rtt_us;
    uint32_t retrans;       /* segments retransmitted and not yet acknowledged, now */
    uint32_t total_retrans; /* segments retransmitted over the connection's life */
    uint32_t segs_out, data_segs_out;
    uint64_t bytes_acked, bytes_retrans;
    uint64_t pacing_rate;   /* bytes per second; 0: not paced (or not known) */
    uint64_t delivery_rate; /* bytes per second, the last estimate; 0: none yet */
    bool delivery_rate_app_limited;
} ks_tcp_conn;

typedef struct ks_tcp_conns {
    ks_tcp_conn *v;
    size_t n, cap;
} ks_tcp_conns;

void ks_tcp_conns_done(ks_tcp_conns *c);

/*
 * One buffer of the kernel's answer to a dump request (one recv() of NETLINK_SOCK_DIAG):
 * netlink messages, each an inet_diag_msg with its attributes. The connections are appended to
 * c. 1: the dump ended (NLMSG_DONE); 0: more buffers follow; -EBADMSG: not a well-formed answer
 * (a message or attribute whose length runs past its buffer, an inet_diag_msg cut short, an
 * address family that is not IPv4 or IPv6, a congestion control name without its end);
 * the kernel's own error (NLMSG_ERROR) as its negative errno. A struct tcp_info shorter than
 * this build's (an older kernel) gives the fields it holds, the others 0; a longer one (a newer
 * kernel) its known part. On failure, what this buffer appended is removed again.
 */
int ks_sockdiag_parse(const void *buf, size_t len, ks_tcp_conns *c);

/*
 * Asks the running kernel for every established TCP connection of this network namespace,
 * IPv4 and IPv6 (an IPv4 client of a dual-stack listener is an IPv6 socket). -EPROTONOSUPPORT
 * when the kernel has no sock_diag for TCP (CONFIG_INET_DIAG off).
 */
int ks_sockdiag_dump(ks_tcp_conns *ret);

/*
 * The established connections of the root: the kernel's answer on the live host, the fixture
 * file under another root (a root without it has none). -EBADMSG with *ret_error (may be NULL)
 * saying what when the fixture is not one.
 */
int ks_tcp_conns_read(const ks_root *root, ks_tcp_conns *ret, char **ret_error);

/*
 * Whether s can be a congestion control's name: 1 to KS_TCP_CA_NAME_MAX - 1 of A-Z a-z 0-9 _ . -
 * (the kernel's modules and BPF's object names use no others), so that it prints as it is.
 */
bool ks_tcp_cc_name_is_valid(const char *s);
/* Whether the peer is on this node: 127.0.0.0/8, ::1 or ::ffff:127.x.y.z. */
bool ks_tcp_conn_is_loopback(const ks_tcp_conn *c);
/* "10.0.0.1:443" or "[2001:db8::1]:443" of an address and port; NULL on -ENOMEM. */
char *ks_tcp_endpoint_format(int family, const uint8_t addr[16], uint16_t port);
/*
 * Retransmitted over sent segments of one connection (tcpi_total_retrans / tcpi_segs_out);
 * false when it sent nothing or the kernel gave no struct tcp_info.
 */
bool ks_tcp_conn_retrans_ratio(const ks_tcp_conn *c, double *ret);

/* One connection as JSON (the objects of report --connections and of the fixture). */
json_object *ks_tcp_conn_to_json(const ks_tcp_conn *c);
/*
 * The fixture's text: a JSON object whose "connections" is an array of such objects ("local",
 * "remote" and "congestion_control" required; each figure optional, 0 when absent; a
 * connection with "rtt_us" has its tcp_info). -EBADMSG with *ret_error (may be NULL) naming
 * the first thing wrong, e.g. "connections[2]: 'local': not an address and port".
 */
int ks_tcp_conns_parse_json(const char *text, size_t len, ks_tcp_conns *ret, char **ret_error);
