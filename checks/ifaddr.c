/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Interface addresses from proc/net/if_inet6 and the IPv4 networks from proc/net/route. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>

#include "checks/ifaddr.h"
#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"

#define PROC_MAX_SIZE (16u << 20)
#define KS_RTF_UP 0x0001 /* include/uapi/linux/route.h */
#define KS_RTF_GATEWAY 0x0002

void ks_ifaddrs_done(ks_ifaddrs *a)
{
    free(a->v);
    *a = (ks_ifaddrs){0};
}

/* The words of a line (separated by spaces and tabs), at most max; -EBADMSG for more. */
static int words(const char *line, size_t n, char **w, size_t max, size_t *ret_n, char *buf,
                 size_t bufsize)
{
    size_t k = 0;

    if (n >= bufsize)
        return -EBADMSG;
    memcpy(buf, line, n);
    buf[n] = '\0';
    for (char *save = NULL, *t = strtok_r(buf, " \t\r", &save); t;
         t = strtok_r(NULL, " \t\r", &save)) {
        if (k == max)
            return -EBADMSG;
        w[k++] = t;
    }
    *ret_n = k;
    return 0;
}

/* Exactly digits hex digits (0: any number from 1 to 8) into *ret. */
static bool hex_word(const char *s, size_t digits, uint32_t *ret)
{
    size_t n = strlen(s);
    uint32_t v = 0;

    if (n == 0 || n > 8 || (digits && n != digits))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    *ret = v;
    return true;
}

static bool ifname_ok(const char *s)
{
    return *s && strlen(s) < IFNAMSIZ && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..");
}

static int push(ks_ifaddrs *a, size_t *cap, const ks_ifaddr *x)
{
    if (!GREEDY_REALLOC(a->v, *cap, a->n + 1))
        return -ENOMEM;
    a->v[a->n++] = *x;
    return 0;
}

int ks_ifaddr_parse_inet6(const char *text, size_t len, ks_ifaddrs *ret)
{
    ks_ifaddrs out = {0};
    const char *line;
    size_t pos = 0, n, cap = 0;
    int r = 0;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        char buf[256], *w[6];
        uint8_t bytes[16];
        uint32_t index, plen, scope, flags;
        char addr[INET6_ADDRSTRLEN];
        ks_ifaddr x = {.v6 = true};
        size_t k;

        r = words(line, n, w, 6, &k, buf, sizeof(buf));
        if (r < 0)
            break;
        if (k == 0)
            continue;
        r = -EBADMSG;
        if (k != 6 || strlen(w[0]) != 32 || !hex_word(w[1], 0, &index) ||
            !hex_word(w[2], 0, &plen) || plen > 128 || !hex_word(w[3], 0, &scope) ||
            !hex_word(w[4], 0, &flags) || !ifname_ok(w[5]))
            break;
        for (size_t i = 0; i < 16; i++) {
            char two[3] = {w[0][2 * i], w[0][2 * i + 1], '\0'};
            uint32_t b;
            if (!hex_word(two, 2, &b))
                goto out;
            bytes[i] = (uint8_t)b;
        }
        if (!inet_ntop(AF_INET6, bytes, addr, sizeof(addr)))
            break;
        snprintf(x.ifname, sizeof(x.ifname), "%s", w[5]);
        snprintf(x.prefix, sizeof(x.prefix), "%s/%u", addr, (unsigned)plen);
        x.scope = scope;
        x.flags = flags;
        r = push(&out, &cap, &x);
        if (r < 0)
            break;
    }
out:
    if (r < 0) {
        ks_ifaddrs_done(&out);
        return r;
    }
    *ret = out;
    return 0;
}

/* A word of proc/net/route (%08X of a __be32 in the CPU's order) in network order. */
static void route_word(uint32_t v, uint8_t out[4])
{
    memcpy(out, &v, 4);
}

int ks_ifaddr_parse_route4(const char *text, size_t len, ks_ifaddrs *ret)
{
    ks_ifaddrs out = {0};
    const char *line;
    size_t pos = 0, n, cap = 0;
    bool header = true;
    int r = 0;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        char buf[256], *w[11], net[INET_ADDRSTRLEN];
        uint32_t dst, gw, flags, mask;
        uint8_t d[4], m[4];
        ks_ifaddr x = {0};
        unsigned plen = 0;
        bool contiguous = true;
        size_t k;

        r = words(line, n, w, 11, &k, buf, sizeof(buf));
        if (r < 0)
            break;
        if (k == 0)
            continue;
        if (header) {
            header = false;
            r = k > 0 && streq(w[0], "Iface") ? 0 : -EBADMSG;
            if (r < 0)
                break;
            continue;
        }
        r = -EBADMSG;
        if (k != 11 || !ifname_ok(w[0]) || !hex_word(w[1], 8, &dst) || !hex_word(w[2], 8, &gw) ||
            !hex_word(w[3], 4, &flags) || !hex_word(w[7], 8, &mask))
            break;
        r = 0;
        if (!(flags & KS_RTF_UP) || (flags & KS_RTF_GATEWAY) || mask == 0)
            continue;
        route_word(dst, d);
        route_word(mask, m);
        for (size_t i = 0; i < 32; i++) {
            bool bit = m[i / 8] & (0x80 >> (i % 8));
            if (bit && !contiguous)
                break;
            if (bit)
                plen++;
            else
                contiguous = false;
        }
        if (plen == 32)
            continue; /* a host route (to a gateway on the link), not an address's network */
        if (!inet_ntop(AF_INET, d, net, sizeof(net))) {
            r = -EBADMSG;
            break;
        }
        snprintf(x.ifname, sizeof(x.ifname), "%s", w[0]);
        snprintf(x.prefix, sizeof(x.prefix), "%s/%u", net, plen);
        r = push(&out, &cap, &x);
        if (r < 0)
            break;
    }
    if (r >= 0 && header && len > 0)
        r = -EBADMSG;
    if (r < 0) {
        ks_ifaddrs_done(&out);
        return r;
    }
    *ret = out;
    return 0;
}

static int read_one(const ks_root *root, const char *path,
                    int (*parse)(const char *, size_t, ks_ifaddrs *), ks_ifaddrs *all, size_t *cap)
{
    _cleanup_free_ char *text = NULL;
    ks_ifaddrs one = {0};
    size_t len = 0;
    int r = ks_root_read_file(root, path, PROC_MAX_SIZE, &text, &len);

    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    r = parse(text, len, &one);
    for (size_t i = 0; r >= 0 && i < one.n; i++)
        r = push(all, cap, &one.v[i]);
    ks_ifaddrs_done(&one);
    return r;
}

int ks_ifaddrs_read(const ks_root *root, ks_ifaddrs *ret)
{
    ks_ifaddrs all = {0};
    size_t cap = 0;
    int r = read_one(root, "proc/net/route", ks_ifaddr_parse_route4, &all, &cap);

    if (r >= 0)
        r = read_one(root, "proc/net/if_inet6", ks_ifaddr_parse_inet6, &all, &cap);
    if (r < 0) {
        ks_ifaddrs_done(&all);
        return r;
    }
    *ret = all;
    return 0;
}

bool ks_ifaddr_is_stable(const ks_ifaddr *a)
{
    if (!a->v6)
        return true;
    return a->scope == KS_IPV6_ADDR_SCOPE_GLOBAL &&
           !(a->flags &
             (KS_IFA_F_TEMPORARY | KS_IFA_F_DEPRECATED | KS_IFA_F_DADFAILED | KS_IFA_F_TENTATIVE));
}
