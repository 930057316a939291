/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/basic/root.h"

/*
 * Sockets from proc/net/{tcp,tcp6,udp,udp6}. The parser takes text (tests, fuzzing); the reader
 * goes through the root. Addresses are kept as the kernel prints them: 4 or 16 bytes in the
 * kernel's word order, which is enough to tell wildcard and loopback and to compare.
 */
typedef enum ks_sock_proto {
    KS_SOCK_TCP,
    KS_SOCK_TCP6,
    KS_SOCK_UDP,
    KS_SOCK_UDP6,
    _KS_SOCK_PROTO_MAX,
    _KS_SOCK_PROTO_INVALID = -EINVAL,
} ks_sock_proto;

/* TCP states as in include/net/tcp_states.h. */
#define KS_TCP_ESTABLISHED 0x01
#define KS_TCP_CLOSE 0x07 /* an unconnected (bound) UDP socket */
#define KS_TCP_LISTEN 0x0A

typedef struct ks_sock {
    uint8_t local[16]; /* the first 4 bytes for IPv4 */
    uint16_t local_port;
    uint8_t remote[16];
    uint16_t remote_port;
    uint8_t state;
} ks_sock;

typedef struct ks_socks {
    ks_sock *v;
    size_t n;
} ks_socks;

const char *ks_sock_proto_to_string(ks_sock_proto p); /* "tcp", "tcp6", ... */
ks_sock_proto ks_sock_proto_from_string(const char *s);

/*
 * Parses one file's text: a header line, then one line per socket. Lines that do not parse are
 * an error (-EBADMSG): a check must not pass on half-read data. v6 selects 32-digit addresses.
 */
int ks_procnet_parse(const char *text, size_t len, bool v6, ks_socks *ret);
void ks_socks_done(ks_socks *s);
/* Reads proc/net/<proto> inside the root. -ENOENT when the file does not exist. */
int ks_procnet_read(const ks_root *root, ks_sock_proto p, ks_socks *ret);

/* proc/net/tcp into ret[0] and tcp6 into ret[1]; a file that does not exist (no IPv6) is
 * empty. On failure both are empty. */
int ks_procnet_read_tcp(const ks_root *root, ks_socks ret[2]);
/* Whether a socket of p listens on port: TCP in LISTEN, UDP bound (unconnected). */
bool ks_socks_listens(const ks_socks *s, ks_sock_proto p, uint16_t port);
/* Whether the socket's local address is the wildcard (0.0.0.0 or ::). */
bool ks_sock_is_wildcard(const ks_sock *s, bool v6);
size_t ks_socks_count_state(const ks_socks *s, uint8_t state);
/* Whether the socket's remote address is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x.y.z). */
bool ks_sock_remote_is_loopback(const ks_sock *s, bool v6);
/*
 * Established connections that came in to port: TCP sockets ESTABLISHED whose local port is
 * port, from a peer that is not on loopback (the node's own health checks and proxies are not
 * users). v6: the sockets are of tcp6 (a dual-stack listener's IPv4 clients are there too).
 */
size_t ks_socks_count_inbound(const ks_socks *s, bool v6, uint16_t port);
