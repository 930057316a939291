/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Samples of the node's TCP health, their JSON and the figures between two (tcpsample.h). */
#include <assert.h>
#include <stdarg.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/json-util.h"
#include "lib/basic/time-util.h"
#include "lib/host/boot-identity.h"
#include "lib/host/kernels.h"
#include "lib/host/tcpsample.h"

void ks_tcp_sample_done(ks_tcp_sample *s)
{
    if (!s)
        return;
    free(s->at);
    free(s->kernel);
    free(s->boot_id);
    free(s->cc);
    *s = (ks_tcp_sample){0};
}

ks_tcp_sample *ks_tcp_sample_free(ks_tcp_sample *s)
{
    ks_tcp_sample_done(s);
    free(s);
    return NULL;
}

int ks_tcp_sample_copy(const ks_tcp_sample *s, ks_tcp_sample **ret)
{
    _cleanup_(ks_tcp_sample_freep) ks_tcp_sample *c = NULL;

    assert(s);
    assert(ret);
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    *c = *s;
    c->at = c->kernel = c->boot_id = NULL;
    c->cc = NULL;
    if (ks_strdup_null(s->at, &c->at) < 0 || ks_strdup_null(s->kernel, &c->kernel) < 0 ||
        ks_strdup_null(s->boot_id, &c->boot_id) < 0)
        return -ENOMEM;
    if (s->n_cc > 0) {
        c->cc = calloc(s->n_cc, sizeof(*c->cc));
        if (!c->cc)
            return -ENOMEM;
        memcpy(c->cc, s->cc, s->n_cc * sizeof(*c->cc));
    }
    *ret = TAKE_PTR(c);
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_cc(const void *a, const void *b)
{
    return strcmp(((const ks_tcp_cc_count *)a)->name, ((const ks_tcp_cc_count *)b)->name);
}

/* Adds one connection of cc to the counts (unsorted; sorted once at the end). */
static int count_cc(ks_tcp_sample *s, size_t *cap, const char *cc)
{
    for (size_t i = 0; i < s->n_cc; i++)
        if (streq(s->cc[i].name, cc)) {
            s->cc[i].n++;
            return 0;
        }
    if (!GREEDY_REALLOC0(s->cc, *cap, s->n_cc + 1))
        return -ENOMEM;
    snprintf(s->cc[s->n_cc].name, sizeof(s->cc[s->n_cc].name), "%s", cc);
    s->cc[s->n_cc++].n = 1;
    return 0;
}

int ks_tcp_sample_summarize(const ks_tcp_conns *c, ks_tcp_sample *s)
{
    _cleanup_free_ uint32_t *rtts = NULL;
    _cleanup_free_ uint64_t *rates = NULL;
    size_t n_rtt = 0, n_rate = 0, cap = 0;
    int r;

    assert(c);
    assert(s);
    free(s->cc);
    s->cc = NULL;
    s->n_cc = 0;
    s->connections = s->with_traffic = 0;
    s->has_rtt = s->has_delivery = false;
    s->has_connections = true;
    rtts = calloc(c->n + 1, sizeof(*rtts));
    rates = calloc(c->n + 1, sizeof(*rates));
    if (!rtts || !rates)
        return -ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        const ks_tcp_conn *x = &c->v[i];
        if (ks_tcp_conn_is_loopback(x))
            continue;
        s->connections++;
        r = count_cc(s, &cap, x->cc);
        if (r < 0)
            return r;
        if (x->has_info && x->rtt_us > 0)
            rtts[n_rtt++] = x->rtt_us;
        if (x->has_info && x->delivery_rate > 0 && x->data_segs_out >= KS_TCP_TRAFFIC_MIN_SEGS)
            rates[n_rate++] = x->delivery_rate;
    }
    if (s->n_cc > 1)
        qsort(s->cc, s->n_cc, sizeof(*s->cc), cmp_cc);
    /* The median: the middle one, or the lower of the two middle ones (no averaging). */
    if (n_rtt > 0) {
        qsort(rtts, n_rtt, sizeof(*rtts), cmp_u32);
        s->has_rtt = true;
        s->rtt_median_us = rtts[(n_rtt - 1) / 2];
    }
    if (n_rate > 0) {
        qsort(rates, n_rate, sizeof(*rates), cmp_u64);
        s->has_delivery = true;
        s->delivery_rate_median = rates[(n_rate - 1) / 2];
    }
    s->with_traffic = (uint32_t)n_rate;
    return 0;
}

uint32_t ks_tcp_sample_cc_count(const ks_tcp_sample *s, const char *cc)
{
    for (size_t i = 0; i < s->n_cc; i++)
        if (streq(s->cc[i].name, cc))
            return s->cc[i].n;
    return 0;
}

int ks_tcp_sample_take(const ks_root *root, time_t now, ks_tcp_sample *ret, ks_tcp_conns *ret_conns,
                       char **ret_conns_error)
{
    _cleanup_(ks_tcp_sample_donep) ks_tcp_sample s = {0};
    _cleanup_free_ char *why = NULL;
    ks_tcp_conns c = {0};
    int r;

    assert(root);
    assert(ret);
    r = ks_tcp_counters_read(root, &s.counters);
    if (r < 0)
        return r;
    r = ks_utc_string(now, &s.at);
    if (r < 0)
        return r;
    (void)ks_running_kernel(root, &s.kernel);
    (void)ks_read_boot_id(root, &s.boot_id);
    (void)ks_read_btime(root, &s.btime);
    r = ks_tcp_conns_read(root, &c, &why);
    if (r == -ENOMEM)
        return r;
    if (r >= 0) {
        r = ks_tcp_sample_summarize(&c, &s);
        if (r < 0) {
            ks_tcp_conns_done(&c);
            return r;
        }
    } else if (ret_conns_error) {
        *ret_conns_error = why ? TAKE_PTR(why) : strdup(strerror(-r));
    }
    if (ret_conns)
        *ret_conns = c;
    else
        ks_tcp_conns_done(&c);
    *ret = s;
    s = (ks_tcp_sample){0};
    return 0;
}

/* ---- JSON ---- */

json_object *ks_tcp_sample_to_json(const ks_tcp_sample *s)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *cc = ks_jb_object(&b);
    const ks_tcp_counters *k = &s->counters;
    bool conns = s->has_connections;

    ks_jb_add(&b, o, "at", ks_jb_string(&b, s->at));
    ks_jb_add(&b, o, "kernel", ks_jb_string(&b, s->kernel));
    ks_jb_add(&b, o, "boot_id", ks_jb_string(&b, s->boot_id));
    ks_jb_add(&b, o, "btime", s->btime ? ks_jb_int(&b, (int64_t)(s->btime & INT64_MAX)) : NULL);
    ks_jb_add(&b, o, "out_segs", ks_jb_int(&b, (int64_t)(k->out_segs & INT64_MAX)));
    ks_jb_add(&b, o, "retrans_segs", ks_jb_int(&b, (int64_t)(k->retrans_segs & INT64_MAX)));
    ks_jb_add(&b, o, "in_segs", ks_jb_int(&b, (int64_t)(k->in_segs & INT64_MAX)));
    ks_jb_add(&b, o, "timeouts",
              k->has_ext ? ks_jb_int(&b, (int64_t)(k->timeouts & INT64_MAX)) : NULL);
    ks_jb_add(&b, o, "lost_retransmit",
              k->has_ext ? ks_jb_int(&b, (int64_t)(k->lost_retransmit & INT64_MAX)) : NULL);
    ks_jb_add(&b, o, "connections", conns ? ks_jb_int(&b, s->connections) : NULL);
    for (size_t i = 0; i < s->n_cc; i++)
        ks_jb_add(&b, cc, s->cc[i].name[0] ? s->cc[i].name : "unknown", ks_jb_int(&b, s->cc[i].n));
    ks_jb_add(&b, o, "congestion_control", conns ? cc : NULL);
    if (!conns)
        json_object_put(cc);
    ks_jb_add(&b, o, "rtt_median_us", s->has_rtt ? ks_jb_int(&b, s->rtt_median_us) : NULL);
    ks_jb_add(&b, o, "with_traffic", conns ? ks_jb_int(&b, s->with_traffic) : NULL);
    ks_jb_add(&b, o, "delivery_rate_median",
              s->has_delivery ? ks_jb_int(&b, (int64_t)(s->delivery_rate_median & INT64_MAX))
                              : NULL);
    return ks_jb_finish(&b, o);
}

typedef struct sparse {
    char *error;
} sparse;

static int serr(sparse *p, const char *fmt, ...) _printf_(2, 3);
static int serr(sparse *p, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_set_first_verrorf(&p->error, fmt, ap);
    va_end(ap);
    return r == -ENOMEM ? r : -EBADMSG;
}

/* 1 when there (not null), 0 when absent or null, negative on error. */
static int get_u64(sparse *p, json_object *o, const char *key, uint64_t max, uint64_t *ret)
{
    int r = ks_json_get_u64(o, key, max, ret);

    if (r == -EBADMSG)
        return serr(p, "'%s': not a whole number", key);
    if (r == -ERANGE)
        return serr(p, "'%s': out of range", key);
    return r;
}

static int get_str(sparse *p, json_object *o, const char *key, char **ret)
{
    json_object *v = NULL;

    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return serr(p, "'%s': not a string", key);
    *ret = strdup(json_object_get_string(v));
    return *ret ? 1 : -ENOMEM;
}

static int parse_cc(sparse *p, json_object *v, ks_tcp_sample *s)
{
    size_t cap = 0;

    if (!json_object_is_type(v, json_type_object))
        return serr(p, "'congestion_control': not an object");
    json_object_object_foreach(v, name, count)
    {
        int64_t n;
        if (!ks_tcp_cc_name_is_valid(name) || !json_object_is_type(count, json_type_int))
            return serr(p, "'congestion_control': '%s' is not a name with a count", name);
        n = json_object_get_int64(count);
        if (n < 0 || n > UINT32_MAX)
            return serr(p, "'congestion_control': '%s': out of range", name);
        if (!GREEDY_REALLOC0(s->cc, cap, s->n_cc + 1))
            return -ENOMEM;
        snprintf(s->cc[s->n_cc].name, sizeof(s->cc[0].name), "%s",
                 streq(name, "unknown") ? "" : name);
        s->cc[s->n_cc++].n = (uint32_t)n;
    }
    if (s->n_cc > 1)
        qsort(s->cc, s->n_cc, sizeof(*s->cc), cmp_cc);
    return 0;
}

static int parse_sample(sparse *p, json_object *o, ks_tcp_sample *s)
{
    uint64_t v = 0, sum = 0;
    json_object *cc = NULL;
    time_t t;
    int r, has_timeouts, has_lost;

    if (!json_object_is_type(o, json_type_object))
        return serr(p, "not an object");
    if ((r = get_str(p, o, "at", &s->at)) < 0)
        return r;
    if (r == 0 || ks_parse_utc(s->at, &t) < 0)
        return serr(p, "'at': not a UTC time like 2026-11-30T07:50:00Z");
    if ((r = get_str(p, o, "kernel", &s->kernel)) < 0 ||
        (r = get_str(p, o, "boot_id", &s->boot_id)) < 0 ||
        (r = get_u64(p, o, "btime", INT64_MAX, &s->btime)) < 0)
        return r;
    if ((r = get_u64(p, o, "out_segs", INT64_MAX, &s->counters.out_segs)) <= 0 ||
        (r = get_u64(p, o, "retrans_segs", INT64_MAX, &s->counters.retrans_segs)) <= 0)
        return r < 0 ? r : serr(p, "'out_segs' and 'retrans_segs' are required");
    if ((r = get_u64(p, o, "in_segs", INT64_MAX, &s->counters.in_segs)) < 0)
        return r;
    has_timeouts = get_u64(p, o, "timeouts", INT64_MAX, &s->counters.timeouts);
    if (has_timeouts < 0)
        return has_timeouts;
    has_lost = get_u64(p, o, "lost_retransmit", INT64_MAX, &s->counters.lost_retransmit);
    if (has_lost < 0)
        return has_lost;
    s->counters.has_ext = has_timeouts > 0 && has_lost > 0;
    if ((r = get_u64(p, o, "connections", UINT32_MAX, &v)) < 0)
        return r;
    s->has_connections = r > 0;
    s->connections = (uint32_t)v;
    if (json_object_object_get_ex(o, "congestion_control", &cc) && cc &&
        (r = parse_cc(p, cc, s)) < 0)
        return r;
    for (size_t i = 0; i < s->n_cc; i++)
        sum += s->cc[i].n;
    if (sum != (s->has_connections ? s->connections : 0))
        return serr(p, "'congestion_control': the counts do not add up to 'connections'");
    if ((r = get_u64(p, o, "rtt_median_us", UINT32_MAX, &v)) < 0)
        return r;
    s->has_rtt = r > 0;
    s->rtt_median_us = (uint32_t)v;
    v = 0;
    if ((r = get_u64(p, o, "with_traffic", UINT32_MAX, &v)) < 0)
        return r;
    s->with_traffic = (uint32_t)v;
    if ((r = get_u64(p, o, "delivery_rate_median", INT64_MAX, &s->delivery_rate_median)) < 0)
        return r;
    s->has_delivery = r > 0;
    return 0;
}

int ks_tcp_sample_from_json(json_object *o, ks_tcp_sample *ret, char **ret_error)
{
    ks_tcp_sample s = {0};
    sparse p = {0};
    int r;

    assert(ret);
    r = parse_sample(&p, o, &s);
    if (r < 0) {
        ks_tcp_sample_done(&s);
        if (ret_error && r != -ENOMEM)
            *ret_error = TAKE_PTR(p.error);
        free(p.error);
        return r;
    }
    free(p.error);
    *ret = s;
    return 0;
}

/* ---- the samples of one swap ---- */

void ks_tcp_effect_done(ks_tcp_effect *e)
{
    if (!e)
        return;
    ks_tcp_sample_free(e->baseline);
    ks_tcp_sample_free(e->pinned);
    ks_tcp_sample_free(e->after);
    *e = (ks_tcp_effect){0};
}

bool ks_tcp_effect_is_empty(const ks_tcp_effect *e)
{
    return !e || (!e->baseline && !e->pinned && !e->after);
}

static ks_tcp_sample **slot_of(ks_tcp_effect *e, ks_tcp_slot slot)
{
    switch (slot) {
    case KS_TCP_BASELINE:
        return &e->baseline;
    case KS_TCP_PINNED:
        return &e->pinned;
    case KS_TCP_AFTER:
        return &e->after;
    default:
        return NULL;
    }
}

const ks_tcp_sample *ks_tcp_effect_get(const ks_tcp_effect *e, ks_tcp_slot slot)
{
    ks_tcp_sample **p = slot_of((ks_tcp_effect *)e, slot);
    return p ? *p : NULL;
}

int ks_tcp_effect_set(ks_tcp_effect *e, ks_tcp_slot slot, const ks_tcp_sample *s)
{
    ks_tcp_sample **p = slot_of(e, slot), *c = NULL;
    int r;

    if (!p)
        return -EINVAL;
    if (s) {
        r = ks_tcp_sample_copy(s, &c);
        if (r < 0)
            return r;
    }
    ks_tcp_sample_free(*p);
    *p = c;
    return 0;
}

int ks_tcp_effect_copy(const ks_tcp_effect *e, ks_tcp_effect *ret)
{
    ks_tcp_effect c = {0};
    int r = 0;

    for (ks_tcp_slot i = 0; r >= 0 && i < _KS_TCP_SLOT_MAX; i++)
        r = ks_tcp_effect_set(&c, i, ks_tcp_effect_get(e, i));
    if (r < 0) {
        ks_tcp_effect_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}

static const char *const effect_keys[_KS_TCP_SLOT_MAX] = {
    [KS_TCP_BASELINE] = "baseline",
    [KS_TCP_PINNED] = "pinned",
    [KS_TCP_AFTER] = "after",
};

json_object *ks_tcp_effect_to_json(const ks_tcp_effect *e)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b);

    for (ks_tcp_slot i = 0; i < _KS_TCP_SLOT_MAX; i++) {
        const ks_tcp_sample *v = ks_tcp_effect_get(e, i);
        ks_jb_add(&b, o, effect_keys[i], v ? ks_jb_part(&b, ks_tcp_sample_to_json(v)) : NULL);
    }
    return ks_jb_finish(&b, o);
}

int ks_tcp_effect_from_json(json_object *o, ks_tcp_effect *ret, char **ret_error)
{
    ks_tcp_effect e = {0};
    int r = 0;

    assert(ret);
    if (!json_object_is_type(o, json_type_object)) {
        if (ret_error)
            *ret_error = strdup("not an object");
        return -EBADMSG;
    }
    for (ks_tcp_slot i = 0; r >= 0 && i < _KS_TCP_SLOT_MAX; i++) {
        _cleanup_free_ char *why = NULL;
        ks_tcp_sample **slot = slot_of(&e, i);
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, effect_keys[i], &v) || !v)
            continue;
        *slot = calloc(1, sizeof(ks_tcp_sample));
        if (!*slot) {
            r = -ENOMEM;
            break;
        }
        r = ks_tcp_sample_from_json(v, *slot, &why);
        if (r < 0) {
            free(*slot);
            *slot = NULL;
            if (r != -ENOMEM && ret_error)
                *ret_error = ks_asprintf("'%s': %s", effect_keys[i], strempty(why));
        }
    }
    if (r < 0) {
        ks_tcp_effect_done(&e);
        return r;
    }
    *ret = e;
    return 0;
}

/* ---- figures ---- */

static bool same_boot(const ks_tcp_sample *a, const ks_tcp_sample *b)
{
    return a->boot_id && b->boot_id && streq(a->boot_id, b->boot_id);
}

void ks_tcp_figures_of(const ks_tcp_sample *start, const ks_tcp_sample *end, ks_tcp_figures *ret)
{
    const ks_tcp_counters *e = &end->counters, *s = start ? &start->counters : NULL;
    time_t t_end, t_start;

    assert(end);
    assert(ret);
    /* Counters below the start's: not the same counting (another boot or namespace). */
    if (s &&
        (!same_boot(start, end) || e->out_segs < s->out_segs || e->retrans_segs < s->retrans_segs ||
         (e->has_ext && s->has_ext &&
          (e->timeouts < s->timeouts || e->lost_retransmit < s->lost_retransmit))))
        s = NULL, start = NULL;
    *ret = (ks_tcp_figures){
        .end = end,
        .since_boot = !s,
        .from = start ? start->at : NULL,
        .window_s = -1,
        .sent = e->out_segs - (s ? s->out_segs : 0),
        .retransmitted = e->retrans_segs - (s ? s->retrans_segs : 0),
        .has_ext = e->has_ext && (!s || s->has_ext),
    };
    if (ret->has_ext) {
        ret->timeouts = e->timeouts - (s ? s->timeouts : 0);
        ret->lost_retransmit = e->lost_retransmit - (s ? s->lost_retransmit : 0);
    }
    /* OutSegs counts no segment that only retransmits (RFC 1213 tcpOutSegs): the ratio is
     * retransmitted per new segment, as netstat -s users compute it. */
    if (ret->sent > 0) {
        ret->has_ratio = true;
        ret->ratio = (double)ret->retransmitted / (double)ret->sent;
    }
    if (ks_parse_utc(end->at, &t_end) < 0)
        return;
    if (start && ks_parse_utc(start->at, &t_start) >= 0 && t_end >= t_start)
        ret->window_s = (int64_t)(t_end - t_start);
    else if (!start && end->btime > 0 && (uint64_t)t_end >= end->btime)
        ret->window_s = (int64_t)((uint64_t)t_end - end->btime);
}

bool ks_tcp_change_percent(double before, double after, double *ret)
{
    if (before == 0)
        return false;
    *ret = (after - before) / before * 100.0;
    return true;
}
