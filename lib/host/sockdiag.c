/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel's socket diagnostics for TCP (lib/host/tcpdiag.h), through libmnl: the same small
 * netlink library iproute2 itself links (every node has it), which walks and validates netlink
 * messages and attributes so that a length the kernel (or a fuzzer) gets wrong stops the walk
 * instead of reading past the buffer.
 */
#include <assert.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <time.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/util.h"
#include "lib/host/tcpdiag.h"

/* TCP_ESTABLISHED of include/net/tcp_states.h (netinet/tcp.h has it in an enum). */
#define STATE_ESTABLISHED 1
/* How much of struct tcp_info a kernel sent: whether it reaches to the end of field f. */
#define INFO_HAS(len, f) ((len) >= offsetof(struct tcp_info, f) + sizeof(((struct tcp_info *)0)->f))

void ks_tcp_conns_done(ks_tcp_conns *c)
{
    if (!c)
        return;
    free(c->v);
    *c = (ks_tcp_conns){0};
}

typedef struct walk {
    ks_tcp_conns *c;
    const struct nlattr *tb[INET_DIAG_MAX + 1];
} walk;

/* The attributes after the inet_diag_msg; -EBADMSG when one runs past the message. */
static int take_attrs(walk *w, const struct nlmsghdr *nlh, size_t offset)
{
    const struct nlattr *a;

    memset(w->tb, 0, sizeof(w->tb));
    mnl_attr_for_each(a, nlh, offset)
    {
        uint16_t type = mnl_attr_get_type(a);
        /* Attributes of newer kernels are theirs to add; only the known ones are kept. */
        if (type <= INET_DIAG_MAX)
            w->tb[type] = a;
    }
    /* libmnl's walk stops at the first attribute that does not fit: bytes left are one. */
    return (const char *)mnl_nlmsg_get_payload_tail(nlh) - (const char *)a > 0 ? -EBADMSG : 0;
}

static void take_info(ks_tcp_conn *conn, const struct nlattr *a)
{
    struct tcp_info ti = {0};
    size_t len = mnl_attr_get_payload_len(a);

    /* Older kernels send less, newer ones more: the known part, the rest 0 (as ss does). */
    memcpy(&ti, mnl_attr_get_payload(a), len < sizeof(ti) ? len : sizeof(ti));
    conn->has_info = true;
    conn->rtt_us = ti.tcpi_rtt;
    conn->rttvar_us = ti.tcpi_rttvar;
    conn->retrans = ti.tcpi_retrans;
    conn->total_retrans = ti.tcpi_total_retrans;
    if (INFO_HAS(len, tcpi_pacing_rate) && ti.tcpi_pacing_rate != UINT64_MAX)
        conn->pacing_rate = ti.tcpi_pacing_rate; /* ~0: unlimited, i.e. not paced */
    if (INFO_HAS(len, tcpi_bytes_acked))
        conn->bytes_acked = ti.tcpi_bytes_acked;
    if (INFO_HAS(len, tcpi_segs_out))
        conn->segs_out = ti.tcpi_segs_out;
    if (INFO_HAS(len, tcpi_min_rtt))
        conn->min_rtt_us = ti.tcpi_min_rtt;
    if (INFO_HAS(len, tcpi_data_segs_out))
        conn->data_segs_out = ti.tcpi_data_segs_out;
    if (INFO_HAS(len, tcpi_delivery_rate)) {
        conn->delivery_rate = ti.tcpi_delivery_rate;
        conn->delivery_rate_app_limited = ti.tcpi_delivery_rate_app_limited;
    }
    if (INFO_HAS(len, tcpi_bytes_retrans))
        conn->bytes_retrans = ti.tcpi_bytes_retrans;
}

/* The congestion control's name: a NUL-terminated string of at most TCP_CA_NAME_MAX bytes. */
static int take_cong(ks_tcp_conn *conn, const struct nlattr *a)
{
    const char *s = mnl_attr_get_payload(a);
    size_t len = mnl_attr_get_payload_len(a), n = strnlen(s, len);

    if (n == len || n >= sizeof(conn->cc))
        return -EBADMSG;
    memcpy(conn->cc, s, n);
    conn->cc[n] = '\0';
    return n == 0 || ks_tcp_cc_name_is_valid(conn->cc) ? 0 : -EBADMSG;
}

static int take_msg(walk *w, const struct nlmsghdr *nlh)
{
    const struct inet_diag_msg *m;
    ks_tcp_conn conn = {0};
    int r;

    if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*m))
        return -EBADMSG;
    m = mnl_nlmsg_get_payload(nlh);
    if (m->idiag_family != AF_INET && m->idiag_family != AF_INET6)
        return -EBADMSG;
    r = take_attrs(w, nlh, sizeof(*m));
    if (r < 0)
        return r;
    /* A dump asks for established connections only; any other state is not ours to count. */
    if (m->idiag_state != STATE_ESTABLISHED)
        return 0;
    conn.family = m->idiag_family;
    memcpy(conn.local, m->id.idiag_src, m->idiag_family == AF_INET ? 4 : 16);
    memcpy(conn.remote, m->id.idiag_dst, m->idiag_family == AF_INET ? 4 : 16);
    conn.local_port = ntohs(m->id.idiag_sport);
    conn.remote_port = ntohs(m->id.idiag_dport);
    conn.uid = m->idiag_uid;
    conn.inode = m->idiag_inode;
    if (w->tb[INET_DIAG_INFO])
        take_info(&conn, w->tb[INET_DIAG_INFO]);
    if (w->tb[INET_DIAG_CONG] && (r = take_cong(&conn, w->tb[INET_DIAG_CONG])) < 0)
        return r;
    if (!GREEDY_REALLOC(w->c->v, w->c->cap, w->c->n + 1))
        return -ENOMEM;
    w->c->v[w->c->n++] = conn;
    return 0;
}

/* NLMSG_ERROR: the kernel's errno (0 is an acknowledgement, not expected in a dump). */
static int msg_error(const struct nlmsghdr *nlh)
{
    const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

    if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e))
        return -EBADMSG;
    return e->error < 0 && e->error > -4096 ? e->error : -EBADMSG;
}

/* NLMSG_DONE carries the dump's own result as an int (negative errno when it stopped short). */
static int msg_done(const struct nlmsghdr *nlh)
{
    int err;

    if (mnl_nlmsg_get_payload_len(nlh) < sizeof(err))
        return 1;
    memcpy(&err, mnl_nlmsg_get_payload(nlh), sizeof(err));
    return err < 0 && err > -4096 ? err : 1;
}

static bool msg_fits(const struct nlmsghdr *nlh, int rem)
{
    return rem >= (int)sizeof(*nlh) && nlh->nlmsg_len >= sizeof(*nlh) &&
           nlh->nlmsg_len <= (uint32_t)rem;
}

static int parse(const void *buf, size_t len, uint32_t seq, uint32_t portid, ks_tcp_conns *c)
{
    _cleanup_free_ void *copy = NULL;
    const struct nlmsghdr *nlh;
    walk w = {.c = c};
    size_t had = c->n;
    int rem, r = 0;

    assert(buf || len == 0);
    assert(c);
    if (len > INT32_MAX)
        return -EBADMSG;
    /* libmnl reads the headers in place: an aligned copy (a fuzzer's bytes are not). */
    if (((uintptr_t)buf & 3) != 0) {
        copy = malloc(len);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, buf, len);
        buf = copy;
    }
    nlh = buf;
    rem = (int)len;
    /* Each message's length is checked here first: libmnl's own check compares it as an int,
     * so a length past 2 GiB (a fuzzer found it) would pass and send the walk astray. */
    while (r == 0 && msg_fits(nlh, rem)) {
        if (!mnl_nlmsg_seq_ok(nlh, seq) || !mnl_nlmsg_portid_ok(nlh, portid))
            r = -EBADMSG;
        else if (nlh->nlmsg_type == NLMSG_ERROR)
            r = msg_error(nlh);
        else if (nlh->nlmsg_type == NLMSG_DONE)
            r = msg_done(nlh);
        else if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
            r = -EINTR; /* the socket table changed under the dump: ask again */
        else if (nlh->nlmsg_type == SOCK_DIAG_BY_FAMILY)
            r = take_msg(&w, nlh);
        else if (nlh->nlmsg_type != NLMSG_NOOP)
            r = -EBADMSG;
        nlh = mnl_nlmsg_next(nlh, &rem);
    }
    /* Bytes left that are not a whole message (a cut answer), or anything after DONE: never
     * half a list. */
    if (r >= 0 && rem > 0)
        r = -EBADMSG;
    if (r < 0)
        c->n = had;
    return r;
}

int ks_sockdiag_parse(const void *buf, size_t len, ks_tcp_conns *c)
{
    return parse(buf, len, 0, 0, c);
}

/* One dump of one address family, its answer appended to c. */
static int dump_family(struct mnl_socket *nl, uint8_t family, uint32_t seq, ks_tcp_conns *c)
{
    _cleanup_free_ char *buf = malloc(MNL_SOCKET_BUFFER_SIZE);
    struct inet_diag_req_v2 *req;
    struct nlmsghdr *nlh;
    ssize_t n;
    int r;

    if (!buf)
        return -ENOMEM;
    nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = seq;
    req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
    req->sdiag_family = family;
    req->sdiag_protocol = IPPROTO_TCP;
    req->idiag_states = 1u << STATE_ESTABLISHED;
    req->idiag_ext = (1u << (INET_DIAG_INFO - 1)) | (1u << (INET_DIAG_CONG - 1));
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    for (;;) {
        n = mnl_socket_recvfrom(nl, buf, MNL_SOCKET_BUFFER_SIZE);
        if (n < 0)
            return errno == ENOENT ? -EPROTONOSUPPORT : -errno;
        r = parse(buf, (size_t)n, seq, mnl_socket_get_portid(nl), c);
        /* No handler for this family (inet_diag or tcp_diag missing): ENOENT from the kernel. */
        if (r == -ENOENT)
            return -EPROTONOSUPPORT;
        if (r != 0)
            return r < 0 ? r : 0;
    }
}

int ks_sockdiag_dump(ks_tcp_conns *ret)
{
    struct mnl_socket *nl;
    ks_tcp_conns c = {0};
    uint32_t seq = (uint32_t)time(NULL);
    int r;

    assert(ret);
    nl = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_CLOEXEC);
    if (!nl)
        return errno == EPROTONOSUPPORT ? -EPROTONOSUPPORT : -errno;
    r = mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ? -errno : 0;
    if (r >= 0)
        r = dump_family(nl, AF_INET, seq, &c);
    /* A kernel without IPv6 has no handler for it: no IPv6 connections. */
    if (r >= 0 && (r = dump_family(nl, AF_INET6, seq + 1, &c)) == -EPROTONOSUPPORT)
        r = 0;
    mnl_socket_close(nl);
    if (r < 0) {
        ks_tcp_conns_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}
