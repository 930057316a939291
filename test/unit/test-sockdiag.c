/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sock_diag answer parser (lib/host/sockdiag.c): the kernel's real bytes (6.18, captured by
 * test/fixtures/tcp/capture-sock-diag.py), and a table of answers built here, well formed and
 * broken, each with what the parser must make of it.
 */
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <stddef.h>

#include "lib/basic/util.h"
#include "lib/host/tcpdiag.h"
#include "test.h"

/* ---- building answers ---- */

typedef struct buf {
    uint8_t b[8192];
    size_t n;
} buf;

static void put(buf *x, const void *p, size_t n)
{
    memcpy(x->b + x->n, p, n);
    x->n += n;
}

static void pad(buf *x)
{
    while (x->n % 4)
        x->b[x->n++] = 0;
}

/* Starts a message; returns its offset (the length is fixed by end_msg). */
static size_t begin_msg(buf *x, uint16_t type, uint16_t flags)
{
    struct nlmsghdr h = {.nlmsg_type = type, .nlmsg_flags = flags};
    size_t at = x->n;

    put(x, &h, sizeof(h));
    return at;
}

static void end_msg(buf *x, size_t at)
{
    struct nlmsghdr *h = (struct nlmsghdr *)(x->b + at);

    h->nlmsg_len = (uint32_t)(x->n - at);
    pad(x);
}

static void put_attr(buf *x, uint16_t type, const void *p, size_t n)
{
    struct nlattr a = {.nla_len = (uint16_t)(sizeof(a) + n), .nla_type = type};

    put(x, &a, sizeof(a));
    put(x, p, n);
    pad(x);
}

typedef struct sockspec {
    int family; /* AF_INET, AF_INET6, or anything to test */
    uint8_t state;
    const char *local, *remote;
    uint16_t lport, rport;
    size_t info_len;  /* bytes of struct tcp_info sent; 0: no INET_DIAG_INFO */
    const char *cong; /* NULL: no INET_DIAG_CONG */
    size_t cong_len;  /* bytes of the attribute; 0: strlen + 1 */
    uint64_t pacing;
} sockspec;

static void put_sock(buf *x, const sockspec *s)
{
    struct inet_diag_msg m = {
        .idiag_family = (uint8_t)s->family,
        .idiag_state = s->state,
        .idiag_uid = 1000,
        .idiag_inode = 4242,
    };
    uint8_t info[512] = {0};
    struct tcp_info *ti = (struct tcp_info *)info;
    size_t at = begin_msg(x, SOCK_DIAG_BY_FAMILY, NLM_F_MULTI);

    m.id.idiag_sport = htons(s->lport);
    m.id.idiag_dport = htons(s->rport);
    inet_pton(s->family == AF_INET ? AF_INET : AF_INET6, s->local, m.id.idiag_src);
    inet_pton(s->family == AF_INET ? AF_INET : AF_INET6, s->remote, m.id.idiag_dst);
    put(x, &m, sizeof(m));
    ti->tcpi_rtt = 23000;
    ti->tcpi_rttvar = 4000;
    ti->tcpi_total_retrans = 7;
    ti->tcpi_segs_out = 1400;
    ti->tcpi_data_segs_out = 1390;
    ti->tcpi_delivery_rate = 1250000;
    ti->tcpi_pacing_rate = s->pacing;
    ti->tcpi_bytes_retrans = 9000;
    if (s->info_len)
        put_attr(x, INET_DIAG_INFO, info, s->info_len);
    if (s->cong)
        put_attr(x, INET_DIAG_CONG, s->cong, s->cong_len ? s->cong_len : strlen(s->cong) + 1);
    end_msg(x, at);
}

static void put_done(buf *x, int err)
{
    size_t at = begin_msg(x, NLMSG_DONE, NLM_F_MULTI);
    put(x, &err, sizeof(err));
    end_msg(x, at);
}

static void put_error(buf *x, int err)
{
    struct nlmsgerr e = {.error = err};
    size_t at = begin_msg(x, NLMSG_ERROR, 0);
    put(x, &e, sizeof(e));
    end_msg(x, at);
}

/* ---- the table ---- */

#define FULL sizeof(struct tcp_info)
#define OLD offsetof(struct tcp_info, tcpi_pacing_rate) /* a kernel before 3.15 */
#define V4_BBR                                                                                     \
    {                                                                                              \
        AF_INET, 1, "10.0.0.1", "203.0.113.5", 443, 51234, FULL, "bbr", 0, 5000000                 \
    }

typedef enum shape {
    SHAPE_PLAIN,     /* the sockets, then DONE */
    SHAPE_NO_DONE,   /* the sockets only: more buffers follow */
    SHAPE_CUT,       /* the whole answer cut 10 bytes short */
    SHAPE_LONG_LEN,  /* the first message claims more bytes than there are */
    SHAPE_HUGE_LEN,  /* a length past 2 GiB (negative as an int: the fuzzer's find) */
    SHAPE_SHORT_MSG, /* a message too short for an inet_diag_msg */
    SHAPE_BAD_ATTR,  /* an attribute whose length runs past its message */
    SHAPE_TRAILING,  /* 3 stray bytes after DONE's message */
    SHAPE_ERROR,     /* NLMSG_ERROR -EPERM after the sockets */
    SHAPE_DONE_ERR,  /* DONE carrying -EINTR */
    SHAPE_INTR,      /* a message flagged NLM_F_DUMP_INTR */
    SHAPE_ALIEN,     /* a message of another type (RTM_NEWLINK) */
    SHAPE_NOOP,      /* an NLMSG_NOOP before DONE */
} shape;

static const struct {
    const char *name;
    sockspec socks[3];
    size_t n_socks;
    shape shape;
    int ret;           /* what ks_sockdiag_parse returns */
    size_t n;          /* connections parsed (kept) */
    const char *cc;    /* the first one's congestion control */
    const char *local; /* its local endpoint as formatted */
    bool has_info;     /* it came with tcp_info */
    uint64_t delivery; /* its delivery rate */
    uint64_t pacing;   /* its pacing rate */
    uint32_t segs_out; /* its segs_out */
    bool loopback;     /* its peer is on this node */
} cases[] = {
    {"one IPv4 connection with bbr",
     {V4_BBR},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "bbr",
     "10.0.0.1:443",
     true,
     1250000,
     5000000,
     1400,
     false},
    {"IPv6 with cubic",
     {{AF_INET6, 1, "2001:db8::1", "2001:db8::2", 443, 50000, FULL, "cubic", 0, 0}},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "cubic",
     "[2001:db8::1]:443",
     true,
     1250000,
     0,
     1400,
     false},
    {"a dual-stack client on loopback",
     {{AF_INET6, 1, "::ffff:127.0.0.1", "::ffff:127.0.0.1", 8080, 40000, FULL, "bbr", 0, 0}},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "bbr",
     "[::ffff:127.0.0.1]:8080",
     true,
     1250000,
     0,
     1400,
     true},
    {"an old kernel's short tcp_info: what it has, the rest 0",
     {{AF_INET, 1, "10.0.0.1", "10.0.0.9", 22, 60000, OLD, "cubic", 0, 77}},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "cubic",
     "10.0.0.1:22",
     true,
     0,
     0,
     0,
     false},
    {"a newer kernel's longer tcp_info: the known part",
     {{AF_INET, 1, "10.0.0.1", "10.0.0.9", 22, 60000, FULL + 48, "bbr", 0, 1}},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "bbr",
     "10.0.0.1:22",
     true,
     1250000,
     1,
     1400,
     false},
    {"pacing ~0 is no pacing",
     {{AF_INET, 1, "10.0.0.1", "10.0.0.9", 22, 60000, FULL, "bbr", 0, UINT64_MAX}},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "bbr",
     "10.0.0.1:22",
     true,
     1250000,
     0,
     1400,
     false},
    {"no attributes: nothing known but the addresses",
     {{AF_INET, 1, "10.0.0.1", "10.0.0.9", 22, 60000, 0, NULL, 0, 0}},
     1,
     SHAPE_PLAIN,
     1,
     1,
     "",
     "10.0.0.1:22",
     false,
     0,
     0,
     0,
     false},
    {"a socket not established is not counted",
     {{AF_INET, 10, "0.0.0.0", "0.0.0.0", 22, 0, FULL, "cubic", 0, 0}, V4_BBR},
     2,
     SHAPE_PLAIN,
     1,
     1,
     "bbr",
     "10.0.0.1:443",
     true,
     1250000,
     5000000,
     1400,
     false},
    {"three in one buffer",
     {V4_BBR, V4_BBR, V4_BBR},
     3,
     SHAPE_PLAIN,
     1,
     3,
     "bbr",
     "10.0.0.1:443",
     true,
     1250000,
     5000000,
     1400,
     false},
    {"a buffer without DONE: more to come",
     {V4_BBR},
     1,
     SHAPE_NO_DONE,
     0,
     1,
     "bbr",
     "10.0.0.1:443",
     true,
     1250000,
     5000000,
     1400,
     false},
    {"an empty dump", {{0}}, 0, SHAPE_PLAIN, 1, 0, NULL, NULL, false, 0, 0, 0, false},
    {"NOOP messages are skipped",
     {V4_BBR},
     1,
     SHAPE_NOOP,
     1,
     1,
     "bbr",
     "10.0.0.1:443",
     true,
     1250000,
     5000000,
     1400,
     false},
    {"the kernel's error", {V4_BBR}, 1, SHAPE_ERROR, -EPERM, 0, NULL, NULL, false, 0, 0, 0, false},
    {"DONE with an error: the dump stopped short",
     {V4_BBR},
     1,
     SHAPE_DONE_ERR,
     -EINTR,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"an interrupted dump", {V4_BBR}, 1, SHAPE_INTR, -EINTR, 0, NULL, NULL, false, 0, 0, 0, false},
    {"a cut answer: nothing kept",
     {V4_BBR, V4_BBR},
     2,
     SHAPE_CUT,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"a length past the buffer",
     {V4_BBR},
     1,
     SHAPE_LONG_LEN,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"a length past 2 GiB",
     {V4_BBR},
     1,
     SHAPE_HUGE_LEN,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"a message too short for inet_diag_msg",
     {{0}},
     0,
     SHAPE_SHORT_MSG,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"an attribute past its message",
     {V4_BBR},
     1,
     SHAPE_BAD_ATTR,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"stray bytes after the last message",
     {V4_BBR},
     1,
     SHAPE_TRAILING,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"a message of another family of netlink",
     {V4_BBR},
     1,
     SHAPE_ALIEN,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"an address family that is not IP",
     {{AF_UNIX, 1, "10.0.0.1", "10.0.0.9", 22, 60000, FULL, "bbr", 0, 0}},
     1,
     SHAPE_PLAIN,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"a congestion control name without its NUL",
     {{AF_INET, 1, "10.0.0.1", "10.0.0.9", 22, 60000, FULL, "bbr", 3, 0}},
     1,
     SHAPE_PLAIN,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
    {"a congestion control name too long",
     {{AF_INET, 1, "10.0.0.1", "10.0.0.9", 22, 60000, FULL, "abcdefghijklmnopqrst", 0, 0}},
     1,
     SHAPE_PLAIN,
     -EBADMSG,
     0,
     NULL,
     NULL,
     false,
     0,
     0,
     0,
     false},
};

static void build(size_t i, buf *x)
{
    size_t first = 0;

    x->n = 0;
    if (cases[i].shape == SHAPE_SHORT_MSG) {
        size_t at = begin_msg(x, SOCK_DIAG_BY_FAMILY, NLM_F_MULTI);
        uint8_t half[20] = {AF_INET, 1};
        put(x, half, sizeof(half));
        end_msg(x, at);
    }
    for (size_t k = 0; k < cases[i].n_socks; k++)
        put_sock(x, &cases[i].socks[k]);
    if (cases[i].shape == SHAPE_INTR)
        ((struct nlmsghdr *)x->b)->nlmsg_flags |= NLM_F_DUMP_INTR;
    if (cases[i].shape == SHAPE_ALIEN)
        ((struct nlmsghdr *)x->b)->nlmsg_type = 16; /* RTM_NEWLINK */
    if (cases[i].shape == SHAPE_BAD_ATTR) {
        /* The first attribute (after the 72-byte inet_diag_msg) claims 4 KiB. */
        struct nlattr *a = (struct nlattr *)(x->b + first + sizeof(struct nlmsghdr) +
                                             sizeof(struct inet_diag_msg));
        a->nla_len = 4096;
    }
    if (cases[i].shape == SHAPE_NOOP) {
        size_t at = begin_msg(x, NLMSG_NOOP, 0);
        end_msg(x, at);
    }
    if (cases[i].shape == SHAPE_ERROR)
        put_error(x, -EPERM);
    else if (cases[i].shape == SHAPE_DONE_ERR)
        put_done(x, -EINTR);
    else if (cases[i].shape != SHAPE_NO_DONE)
        put_done(x, 0);
    if (cases[i].shape == SHAPE_CUT)
        x->n -= 10;
    if (cases[i].shape == SHAPE_LONG_LEN)
        ((struct nlmsghdr *)x->b)->nlmsg_len = (uint32_t)x->n + 64;
    if (cases[i].shape == SHAPE_HUGE_LEN)
        ((struct nlmsghdr *)x->b)->nlmsg_len = 0x80000010u;
    if (cases[i].shape == SHAPE_TRAILING) {
        memset(x->b + x->n, 0xab, 3);
        x->n += 3;
    }
}

static void test_table(void)
{
    static buf x;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_tcp_conns c = {0};
        int r;

        build(i, &x);
        r = ks_sockdiag_parse(x.b, x.n, &c);
        CHECK_MSG(r == cases[i].ret, "%s: %d", cases[i].name, r);
        CHECK_MSG(c.n == cases[i].n, "%s: %zu connections", cases[i].name, c.n);
        if (c.n > 0 && cases[i].n > 0) {
            const ks_tcp_conn *k = &c.v[0];
            _cleanup_free_ char *l = ks_tcp_endpoint_format(k->family, k->local, k->local_port);
            CHECK_MSG(streq(k->cc, cases[i].cc), "%s: cc '%s'", cases[i].name, k->cc);
            CHECK_MSG(l && streq(l, cases[i].local), "%s: local %s", cases[i].name, strempty(l));
            CHECK_MSG(k->has_info == cases[i].has_info, "%s: has_info", cases[i].name);
            CHECK_MSG(k->delivery_rate == cases[i].delivery, "%s: delivery %llu", cases[i].name,
                      (unsigned long long)k->delivery_rate);
            CHECK_MSG(k->pacing_rate == cases[i].pacing, "%s: pacing %llu", cases[i].name,
                      (unsigned long long)k->pacing_rate);
            CHECK_MSG(k->segs_out == cases[i].segs_out, "%s: segs_out %u", cases[i].name,
                      k->segs_out);
            CHECK_MSG(ks_tcp_conn_is_loopback(k) == cases[i].loopback, "%s: loopback",
                      cases[i].name);
            if (cases[i].has_info) {
                CHECK_INTEQ(k->rtt_us, 23000);
                CHECK_INTEQ(k->total_retrans, 7);
                CHECK_INTEQ(k->uid, 1000);
                CHECK_INTEQ(k->inode, 4242);
            }
        }
        ks_tcp_conns_done(&c);
    }
}

/* A failure keeps what earlier buffers gave and drops this buffer's part. */
static void test_failure_keeps_earlier(void)
{
    static buf x;
    ks_tcp_conns c = {0};
    sockspec s = V4_BBR;

    x.n = 0;
    put_sock(&x, &s);
    CHECK_INTEQ(ks_sockdiag_parse(x.b, x.n, &c), 0);
    CHECK_INTEQ(c.n, 1);
    x.n = 0;
    put_sock(&x, &s);
    put_sock(&x, &s);
    x.n -= 7;
    CHECK_INTEQ(ks_sockdiag_parse(x.b, x.n, &c), -EBADMSG);
    CHECK_INTEQ(c.n, 1);
    ks_tcp_conns_done(&c);
}

/* Unaligned bytes (a fuzzer's) parse the same as aligned ones. */
static void test_unaligned(void)
{
    static buf x;
    static uint8_t shifted[sizeof(x.b) + 1];
    ks_tcp_conns c = {0};
    sockspec s = V4_BBR;

    x.n = 0;
    put_sock(&x, &s);
    put_done(&x, 0);
    memcpy(shifted + 1, x.b, x.n);
    CHECK_INTEQ(ks_sockdiag_parse(shifted + 1, x.n, &c), 1);
    CHECK_INTEQ(c.n, 1);
    ks_tcp_conns_done(&c);
}

/*
 * The kernel's own answer (6.18, in a network namespace made for it; the connections as
 * `ss -tin` showed them, test/fixtures/tcp/SOURCES.md).
 */
static void test_real(void)
{
    _cleanup_free_ char *path4 = ks_asprintf("%s/tcp/sock-diag-6.18-inet.bin", ks_fixture_dir());
    _cleanup_free_ char *path6 = ks_asprintf("%s/tcp/sock-diag-6.18-inet6.bin", ks_fixture_dir());
    _cleanup_free_ char *d4 = NULL, *d6 = NULL;
    size_t n4 = 0, n6 = 0, cubic = 0, loopback = 0;
    ks_tcp_conns c = {0};

    d4 = ks_test_slurp(path4, &n4);
    d6 = ks_test_slurp(path6, &n6);
    CHECK(d4 && d6);
    if (!d4 || !d6)
        return;
    CHECK_INTEQ(ks_sockdiag_parse(d4, n4, &c), 1);
    CHECK_INTEQ(c.n, 4);
    CHECK_INTEQ(ks_sockdiag_parse(d6, n6, &c), 1);
    CHECK_INTEQ(c.n, 5);
    for (size_t i = 0; i < c.n; i++) {
        const ks_tcp_conn *k = &c.v[i];
        CHECK(k->has_info);
        cubic += streq(k->cc, "cubic");
        loopback += ks_tcp_conn_is_loopback(k);
        if (k->family == AF_INET && k->local_port == 56476) {
            /* ss: cubic rtt:0.222/0.381 segs_out:210 data_segs_out:208 bytes_acked:300001
             * delivery_rate 92672000000bps */
            CHECK_STREQ(k->cc, "cubic");
            CHECK_INTEQ(k->rtt_us, 222);
            CHECK_INTEQ(k->rttvar_us, 381);
            CHECK_INTEQ(k->segs_out, 210);
            CHECK_INTEQ(k->data_segs_out, 208);
            CHECK_INTEQ(k->bytes_acked, 300001);
            CHECK_INTEQ(k->delivery_rate * 8, 92672000000ULL);
            CHECK_INTEQ(k->remote_port, 5201);
        }
        if (k->family == AF_INET6) {
            _cleanup_free_ char *r = ks_tcp_endpoint_format(k->family, k->remote, k->remote_port);
            CHECK_STREQ(r, "[fd77::2]:5201");
            CHECK_STREQ(k->cc, "bbr");
            CHECK_INTEQ(k->segs_out, 213);
        }
    }
    CHECK_INTEQ(cubic, 1);
    CHECK_INTEQ(loopback, 2);
    ks_tcp_conns_done(&c);
}

int main(void)
{
    test_table();
    test_failure_keeps_earlier();
    test_unaligned();
    test_real();
    TEST_DONE();
}
