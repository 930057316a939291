/* SPDX-License-Identifier: GPL-2.0-or-later */
/* TCP connections: the helpers, their JSON, and reading them through the root (tcpdiag.h). */
#include <arpa/inet.h>
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/json-util.h"
#include "lib/basic/util.h"
#include "lib/host/tcpdiag.h"

bool ks_tcp_cc_name_is_valid(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n < KS_TCP_CA_NAME_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

bool ks_tcp_conn_is_loopback(const ks_tcp_conn *c)
{
    static const uint8_t v6_loopback[16] = {[15] = 1};
    static const uint8_t v4_mapped[12] = {[10] = 0xff, [11] = 0xff};

    assert(c);
    if (c->family == AF_INET)
        return c->remote[0] == 127;
    return memcmp(c->remote, v6_loopback, 16) == 0 ||
           (memcmp(c->remote, v4_mapped, 12) == 0 && c->remote[12] == 127);
}

char *ks_tcp_endpoint_format(int family, const uint8_t addr[16], uint16_t port)
{
    char buf[INET6_ADDRSTRLEN];

    if (!inet_ntop(family == AF_INET ? AF_INET : AF_INET6, addr, buf, sizeof(buf)))
        return NULL;
    return family == AF_INET ? ks_asprintf("%s:%u", buf, port) : ks_asprintf("[%s]:%u", buf, port);
}

bool ks_tcp_conn_retrans_ratio(const ks_tcp_conn *c, double *ret)
{
    if (!c->has_info || c->segs_out == 0)
        return false;
    *ret = (double)c->total_retrans / (double)c->segs_out;
    return true;
}

json_object *ks_tcp_conn_to_json(const ks_tcp_conn *c)
{
    _cleanup_free_ char *local = ks_tcp_endpoint_format(c->family, c->local, c->local_port);
    _cleanup_free_ char *remote = ks_tcp_endpoint_format(c->family, c->remote, c->remote_port);
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b);
    bool info = c->has_info;
    double ratio;

    if (!local || !remote)
        b.failed = true;
    ks_jb_add(&b, o, "family", ks_jb_string(&b, c->family == AF_INET ? "ipv4" : "ipv6"));
    ks_jb_add(&b, o, "local", ks_jb_string(&b, local));
    ks_jb_add(&b, o, "remote", ks_jb_string(&b, remote));
    ks_jb_add(&b, o, "loopback", ks_jb_bool(&b, ks_tcp_conn_is_loopback(c)));
    ks_jb_add(&b, o, "congestion_control", ks_jb_string(&b, c->cc[0] ? c->cc : NULL));
    ks_jb_add(&b, o, "uid", ks_jb_int(&b, c->uid));
    ks_jb_add(&b, o, "inode", ks_jb_int(&b, (int64_t)(c->inode & INT64_MAX)));
    /* Without tcp_info the figures are not known: null, not 0. */
    ks_jb_add(&b, o, "rtt_us", info ? ks_jb_int(&b, c->rtt_us) : NULL);
    ks_jb_add(&b, o, "rttvar_us", info ? ks_jb_int(&b, c->rttvar_us) : NULL);
    ks_jb_add(&b, o, "min_rtt_us", info ? ks_jb_int(&b, c->min_rtt_us) : NULL);
    ks_jb_add(&b, o, "retrans", info ? ks_jb_int(&b, c->retrans) : NULL);
    ks_jb_add(&b, o, "total_retrans", info ? ks_jb_int(&b, c->total_retrans) : NULL);
    ks_jb_add(&b, o, "segs_out", info ? ks_jb_int(&b, c->segs_out) : NULL);
    ks_jb_add(&b, o, "data_segs_out", info ? ks_jb_int(&b, c->data_segs_out) : NULL);
    ks_jb_add(&b, o, "bytes_acked",
              info ? ks_jb_int(&b, (int64_t)(c->bytes_acked & INT64_MAX)) : NULL);
    ks_jb_add(&b, o, "bytes_retrans",
              info ? ks_jb_int(&b, (int64_t)(c->bytes_retrans & INT64_MAX)) : NULL);
    ks_jb_add(&b, o, "retransmit_ratio",
              ks_tcp_conn_retrans_ratio(c, &ratio) ? ks_jb_double(&b, ratio) : NULL);
    ks_jb_add(&b, o, "delivery_rate",
              info ? ks_jb_int(&b, (int64_t)(c->delivery_rate & INT64_MAX)) : NULL);
    ks_jb_add(&b, o, "delivery_rate_app_limited",
              info ? ks_jb_bool(&b, c->delivery_rate_app_limited) : NULL);
    ks_jb_add(&b, o, "pacing_rate",
              info ? ks_jb_int(&b, (int64_t)(c->pacing_rate & INT64_MAX)) : NULL);
    return ks_jb_finish(&b, o);
}

/* ---- the fixture ---- */

typedef struct jparse {
    char *error;
    char ctx[48];
} jparse;

static int jerr(jparse *p, const char *fmt, ...) _printf_(2, 3);
static int jerr(jparse *p, const char *fmt, ...)
{
    _cleanup_free_ char *what = NULL;
    va_list ap;

    va_start(ap, fmt);
    if (vasprintf(&what, fmt, ap) < 0)
        what = NULL;
    va_end(ap);
    if (!what)
        return -ENOMEM;
    free(p->error);
    p->error = ks_asprintf("%s%s", p->ctx, what);
    return p->error ? -EBADMSG : -ENOMEM;
}

/* "a.b.c.d:port" or "[v6]:port"; the family from the form. */
static bool parse_endpoint(const char *s, int *family, uint8_t addr[16], uint16_t *port)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon;
    unsigned long long p;
    size_t n;

    if (s[0] == '[') {
        const char *end = strstr(s, "]:");
        if (!end)
            return false;
        n = (size_t)(end - s - 1);
        colon = end + 1;
        if (n == 0 || n >= sizeof(host))
            return false;
        memcpy(host, s + 1, n);
        host[n] = '\0';
        *family = AF_INET6;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return false;
        n = (size_t)(colon - s);
        if (n == 0 || n >= sizeof(host))
            return false;
        memcpy(host, s, n);
        host[n] = '\0';
        *family = AF_INET;
    }
    memset(addr, 0, 16);
    if (inet_pton(*family, host, addr) != 1)
        return false;
    if (ks_safe_atou64(colon + 1, &p) < 0 || p > 65535)
        return false;
    *port = (uint16_t)p;
    return true;
}

/* A whole number field: 0 when absent (or null), 1 when there, -EBADMSG otherwise. */
static int get_number(jparse *p, json_object *o, const char *key, uint64_t max, uint64_t *ret)
{
    int r = ks_json_get_u64(o, key, max, ret);

    if (r == -EBADMSG)
        return jerr(p, "'%s': not a whole number", key);
    if (r == -ERANGE)
        return jerr(p, "'%s': out of range", key);
    return r;
}

static int get_endpoint(jparse *p, json_object *o, const char *key, int *family, uint8_t addr[16],
                        uint16_t *port)
{
    json_object *v = NULL;

    if (!json_object_object_get_ex(o, key, &v) || !v)
        return jerr(p, "'%s' is missing", key);
    if (!json_object_is_type(v, json_type_string) ||
        !parse_endpoint(json_object_get_string(v), family, addr, port))
        return jerr(p, "'%s': not an address and port like 10.0.0.1:443 or [2001:db8::1]:443", key);
    return 0;
}

static int parse_conn(jparse *p, json_object *o, ks_tcp_conn *c)
{
    static const struct {
        const char *key;
        size_t offset;
        bool wide; /* uint64_t, else uint32_t */
    } numbers[] = {
        {"uid", offsetof(ks_tcp_conn, uid), false},
        {"inode", offsetof(ks_tcp_conn, inode), true},
        {"rtt_us", offsetof(ks_tcp_conn, rtt_us), false},
        {"rttvar_us", offsetof(ks_tcp_conn, rttvar_us), false},
        {"min_rtt_us", offsetof(ks_tcp_conn, min_rtt_us), false},
        {"retrans", offsetof(ks_tcp_conn, retrans), false},
        {"total_retrans", offsetof(ks_tcp_conn, total_retrans), false},
        {"segs_out", offsetof(ks_tcp_conn, segs_out), false},
        {"data_segs_out", offsetof(ks_tcp_conn, data_segs_out), false},
        {"bytes_acked", offsetof(ks_tcp_conn, bytes_acked), true},
        {"bytes_retrans", offsetof(ks_tcp_conn, bytes_retrans), true},
        {"delivery_rate", offsetof(ks_tcp_conn, delivery_rate), true},
        {"pacing_rate", offsetof(ks_tcp_conn, pacing_rate), true},
    };
    json_object *v = NULL;
    int family2, r;

    if (!json_object_is_type(o, json_type_object))
        return jerr(p, "not an object");
    if ((r = get_endpoint(p, o, "local", &c->family, c->local, &c->local_port)) < 0 ||
        (r = get_endpoint(p, o, "remote", &family2, c->remote, &c->remote_port)) < 0)
        return r;
    if (family2 != c->family)
        return jerr(p, "'local' and 'remote' are not of one address family");
    if (!json_object_object_get_ex(o, "congestion_control", &v))
        return jerr(p, "'congestion_control' is missing");
    if (v) {
        const char *s = json_object_get_string(v);
        if (!json_object_is_type(v, json_type_string) || !ks_tcp_cc_name_is_valid(s))
            return jerr(p, "'congestion_control': not a congestion control's name");
        strcpy(c->cc, s);
    }
    for (size_t i = 0; i < ARRAY_SIZE(numbers); i++) {
        uint64_t n = 0;
        r = get_number(p, o, numbers[i].key, numbers[i].wide ? INT64_MAX : UINT32_MAX, &n);
        if (r < 0)
            return r;
        if (numbers[i].wide)
            *(uint64_t *)((char *)c + numbers[i].offset) = n;
        else
            *(uint32_t *)((char *)c + numbers[i].offset) = (uint32_t)n;
        /* The kernel sends all of tcp_info or nothing: rtt_us stands for it. */
        if (r > 0 && streq(numbers[i].key, "rtt_us"))
            c->has_info = true;
    }
    if (json_object_object_get_ex(o, "delivery_rate_app_limited", &v) && v) {
        if (!json_object_is_type(v, json_type_boolean))
            return jerr(p, "'delivery_rate_app_limited': not true or false");
        c->delivery_rate_app_limited = json_object_get_boolean(v);
    }
    /* Without rtt_us there was no tcp_info: figures beside it are not the kernel's. */
    if (!c->has_info) {
        ks_tcp_conn bare = {.family = c->family,
                            .local_port = c->local_port,
                            .remote_port = c->remote_port,
                            .uid = c->uid,
                            .inode = c->inode};
        memcpy(bare.local, c->local, sizeof(bare.local));
        memcpy(bare.remote, c->remote, sizeof(bare.remote));
        memcpy(bare.cc, c->cc, sizeof(bare.cc));
        *c = bare;
    }
    return 0;
}

static int parse_conns(jparse *p, json_object *doc, ks_tcp_conns *c)
{
    json_object *a = NULL;
    size_t n;
    int r;

    if (!json_object_object_get_ex(doc, "connections", &a) || !a)
        return jerr(p, "'connections' is missing");
    if (!json_object_is_type(a, json_type_array))
        return jerr(p, "'connections' is not an array");
    n = json_object_array_length(a);
    for (size_t i = 0; i < n; i++) {
        ks_tcp_conn conn = {0};
        snprintf(p->ctx, sizeof(p->ctx), "connections[%zu]: ", i);
        r = parse_conn(p, json_object_array_get_idx(a, i), &conn);
        if (r < 0)
            return r;
        if (!GREEDY_REALLOC(c->v, c->cap, c->n + 1))
            return -ENOMEM;
        c->v[c->n++] = conn;
    }
    return 0;
}

int ks_tcp_conns_parse_json(const char *text, size_t len, ks_tcp_conns *ret, char **ret_error)
{
    ks_tcp_conns c = {0};
    json_object *doc = NULL;
    jparse p = {0};
    int r;

    assert(text || len == 0);
    assert(ret);
    r = ks_json_parse_document(text, len,
                               &(ks_json_limits){.bytes = KS_TCPDIAG_FIXTURE_MAX,
                                                 .containers = KS_TCPDIAG_FIXTURE_MAX_CONTAINERS,
                                                 .values = KS_TCPDIAG_FIXTURE_MAX_VALUES},
                               &doc, &p.error);
    if (r >= 0) {
        r = parse_conns(&p, doc, &c);
        json_object_put(doc);
    }
    if (r < 0) {
        ks_tcp_conns_done(&c);
        if (ret_error && r != -ENOMEM)
            *ret_error = TAKE_PTR(p.error);
        free(p.error);
        return r;
    }
    free(p.error);
    *ret = c;
    return 0;
}

int ks_tcp_conns_read(const ks_root *root, ks_tcp_conns *ret, char **ret_error)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    assert(root);
    assert(ret);
    if (ks_root_is_host(root))
        return ks_sockdiag_dump(ret);
    r = ks_root_read_file(root, KS_TCPDIAG_FIXTURE, KS_TCPDIAG_FIXTURE_MAX, &text, &len);
    if (r == -ENOENT) {
        *ret = (ks_tcp_conns){0};
        return 0;
    }
    if (r < 0)
        return r;
    return ks_tcp_conns_parse_json(text, len, ret, ret_error);
}
