/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdlib.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/string-table.h"
#include "lib/basic/util.h"
#include "checks/procnet.h"

/* Large enough for busy proxies (hundreds of thousands of sockets), bounded all the same. */
#define PROCNET_MAX_SIZE (512u << 20)

static const char *const ks_sock_proto_table[_KS_SOCK_PROTO_MAX] = {
    [KS_SOCK_TCP] = "tcp",
    [KS_SOCK_TCP6] = "tcp6",
    [KS_SOCK_UDP] = "udp",
    [KS_SOCK_UDP6] = "udp6",
};

DEFINE_STRING_TABLE_LOOKUP(ks_sock_proto, ks_sock_proto);

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Exactly n hex digits at *p into bytes (n even); advances *p. */
static bool take_hex(const char **p, const char *end, size_t n, uint8_t *out)
{
    if ((size_t)(end - *p) < n)
        return false;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval((*p)[i]), lo = hexval((*p)[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    *p += n;
    return true;
}

static bool take_char(const char **p, const char *end, char ch)
{
    if (*p >= end || **p != ch)
        return false;
    (*p)++;
    return true;
}

static void skip_spaces(const char **p, const char *end)
{
    while (*p < end && (**p == ' ' || **p == '\t'))
        (*p)++;
}

/* "ADDR:PORT" with ADDR of 8 or 32 hex digits. */
static bool take_endpoint(const char **p, const char *end, bool v6, uint8_t addr[16],
                          uint16_t *port)
{
    uint8_t pb[2];

    memset(addr, 0, 16);
    if (!take_hex(p, end, v6 ? 32 : 8, addr) || !take_char(p, end, ':') || !take_hex(p, end, 4, pb))
        return false;
    *port = (uint16_t)(pb[0] << 8 | pb[1]);
    return true;
}

static bool is_blank(const char *line, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

static bool parse_line(const char *line, size_t len, bool v6, ks_sock *s)
{
    const char *p = line, *end = line + len;
    uint8_t st;

    skip_spaces(&p, end);
    if (p >= end || !isdigit((unsigned char)*p))
        return false;
    while (p < end && isdigit((unsigned char)*p))
        p++;
    if (!take_char(&p, end, ':'))
        return false;
    skip_spaces(&p, end);
    if (!take_endpoint(&p, end, v6, s->local, &s->local_port))
        return false;
    skip_spaces(&p, end);
    if (!take_endpoint(&p, end, v6, s->remote, &s->remote_port))
        return false;
    skip_spaces(&p, end);
    if (!take_hex(&p, end, 2, &st))
        return false;
    s->state = st;
    return p == end || *p == ' ' || *p == '\t';
}

int ks_procnet_parse(const char *text, size_t len, bool v6, ks_socks *ret)
{
    ks_socks out = {0};
    const char *line;
    size_t pos = 0, n, cap = 0;
    bool header = true;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        if (header) {
            /* "  sl  local_address rem_address   st tx_queue ..." */
            if (!memmem(line, n, "local_address", 13))
                goto bad;
            header = false;
            continue;
        }
        if (is_blank(line, n))
            continue;
        if (!GREEDY_REALLOC(out.v, cap, out.n + 1)) {
            free(out.v);
            return -ENOMEM;
        }
        if (!parse_line(line, n, v6, &out.v[out.n]))
            goto bad;
        out.n++;
    }
    if (header)
        goto bad;
    *ret = out;
    return 0;
bad:
    free(out.v);
    return -EBADMSG;
}

void ks_socks_done(ks_socks *s)
{
    free(s->v);
    *s = (ks_socks){0};
}

int ks_procnet_read(const ks_root *root, ks_sock_proto p, ks_socks *ret)
{
    _cleanup_free_ char *path = NULL, *text = NULL;
    size_t len;
    int r;

    if (!ks_sock_proto_to_string(p))
        return -EINVAL;
    path = ks_asprintf("proc/net/%s", ks_sock_proto_to_string(p));
    if (!path)
        return -ENOMEM;
    r = ks_root_read_file(root, path, PROCNET_MAX_SIZE, &text, &len);
    if (r < 0)
        return r;
    return ks_procnet_parse(text, len, p == KS_SOCK_TCP6 || p == KS_SOCK_UDP6, ret);
}

int ks_procnet_read_tcp(const ks_root *root, ks_socks ret[2])
{
    static const ks_sock_proto protos[] = {KS_SOCK_TCP, KS_SOCK_TCP6};

    for (size_t i = 0; i < ARRAY_SIZE(protos); i++) {
        int r = ks_procnet_read(root, protos[i], &ret[i]);
        if (r == -ENOENT)
            ret[i] = (ks_socks){0};
        else if (r < 0) {
            if (i > 0)
                ks_socks_done(&ret[0]);
            ret[i] = (ks_socks){0};
            return r;
        }
    }
    return 0;
}

bool ks_socks_listens(const ks_socks *s, ks_sock_proto p, uint16_t port)
{
    bool tcp = p == KS_SOCK_TCP || p == KS_SOCK_TCP6;

    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].local_port != port)
            continue;
        if (tcp ? s->v[i].state == KS_TCP_LISTEN : s->v[i].state == KS_TCP_CLOSE)
            return true;
    }
    return false;
}

bool ks_sock_is_wildcard(const ks_sock *s, bool v6)
{
    for (size_t i = 0; i < (v6 ? 16u : 4u); i++)
        if (s->local[i])
            return false;
    return true;
}

size_t ks_socks_count_state(const ks_socks *s, uint8_t state)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++)
        n += s->v[i].state == state;
    return n;
}

/* The address in network byte order: the kernel prints each 32-bit word with %08X of its value
 * in the CPU's order (net/ipv4/tcp_ipv4.c get_tcp4_sock, net/ipv6/tcp_ipv6.c get_tcp6_sock). */
static void network_order(const uint8_t in[16], size_t n, uint8_t out[16])
{
    for (size_t w = 0; w < n; w += 4) {
        uint32_t v = (uint32_t)in[w] << 24 | (uint32_t)in[w + 1] << 16 | (uint32_t)in[w + 2] << 8 |
                     in[w + 3];
        memcpy(out + w, &v, 4);
    }
}

bool ks_sock_remote_is_loopback(const ks_sock *s, bool v6)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t one[16] = {[15] = 1};
    uint8_t a[16] = {0};

    network_order(s->remote, v6 ? 16 : 4, a);
    if (!v6)
        return a[0] == 127;
    return memcmp(a, one, 16) == 0 || (memcmp(a, v4mapped, 12) == 0 && a[12] == 127);
}

size_t ks_socks_count_inbound(const ks_socks *s, bool v6, uint16_t port)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++)
        n += s->v[i].state == KS_TCP_ESTABLISHED && s->v[i].local_port == port &&
             !ks_sock_remote_is_loopback(&s->v[i], v6);
    return n;
}
