/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/*
 * The addresses of interfaces, as the kernel prints them in /proc/net (read inside the root):
 *  - IPv6 addresses from proc/net/if_inet6 (net/ipv6/addrconf.c if6_seq_show: "%pi6 %02x %02x
 *    %02x %02x %8s\n": the address as 32 hex digits in network order, the ifindex, the prefix
 *    length, the scope, the low byte of the address flags, the name);
 *  - the IPv4 networks of interfaces from proc/net/route (net/ipv4/fib_trie.c
 *    fib_route_seq_show, the main table): a route that is up, not via a gateway, with a mask
 *    that is not 0 is the prefix route the kernel adds with each address (not for an address
 *    with noprefixroute or a /32 one: those are not seen here).
 * The parsers take text (tests, fuzzing) and refuse a line they cannot read (-EBADMSG).
 */
#define KS_IFA_F_TEMPORARY 0x01 /* include/uapi/linux/if_addr.h */
#define KS_IFA_F_DADFAILED 0x08
#define KS_IFA_F_DEPRECATED 0x20
#define KS_IFA_F_TENTATIVE 0x40
#define KS_IPV6_ADDR_SCOPE_GLOBAL                                                                  \
    0x00 /* if_inet6's scope: include/net/ipv6.h IPV6_ADDR_SCOPE_*                                 \
          */

typedef struct ks_ifaddr {
    char ifname[IFNAMSIZ];
    char prefix[64]; /* "2001:db8::5/64" (an address), "10.0.0.0/24" (a network) */
    bool v6;
    unsigned scope; /* IPv6: 0 global, 0x10 host, 0x20 link (if_inet6's scope field) */
    unsigned flags; /* IPv6: KS_IFA_F_* */
} ks_ifaddr;

typedef struct ks_ifaddrs {
    ks_ifaddr *v;
    size_t n;
} ks_ifaddrs;

int ks_ifaddr_parse_inet6(const char *text, size_t len, ks_ifaddrs *ret);
int ks_ifaddr_parse_route4(const char *text, size_t len, ks_ifaddrs *ret);
void ks_ifaddrs_done(ks_ifaddrs *a);
/* Both files inside the root, IPv4 networks first; a file that does not exist gives none. */
int ks_ifaddrs_read(const ks_root *root, ks_ifaddrs *ret);
/*
 * An address the node keeps from boot to boot: an IPv4 network, or an IPv6 address of global
 * scope that is not a temporary (privacy) one, not deprecated, and whose duplicate address
 * detection did not fail. A tentative address (DAD still running) is not stable yet.
 */
bool ks_ifaddr_is_stable(const ks_ifaddr *a);
