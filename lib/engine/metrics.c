/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap's metrics as Prometheus text (lib/engine/metrics.h). */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

#include "lib/basic/util.h"
#include "lib/engine/metrics.h"

/* Length of the valid UTF-8 sequence at s (1-4), 0 when the bytes there are not one. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

char *ks_metrics_escape_label(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t len = strlen((const char *)p), n = 0;
    /* At worst every byte becomes U+FFFD (3 bytes). */
    char *out = malloc(len * 3 + 1);

    if (!out)
        return NULL;
    while (*p) {
        size_t l = utf8_len(p);

        if (*p == '\\' || *p == '"') {
            out[n++] = '\\';
            out[n++] = (char)*p;
        } else if (*p == '\n') {
            out[n++] = '\\';
            out[n++] = 'n';
        } else if (l == 0) {
            memcpy(out + n, "\xef\xbf\xbd", 3);
            n += 3;
        } else {
            memcpy(out + n, p, l);
            n += l;
        }
        p += l ? l : 1;
    }
    out[n] = '\0';
    return out;
}

/* One family's header. */
static int header(FILE *f, const char *name, const char *type, const char *help)
{
    return fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) < 0 ? -EIO : 0;
}

/* The figures of one phase, as the label set {kernel, phase}. */
typedef struct tcp_phase {
    const char *phase;
    const ks_tcp_figures *f;
    char *kernel; /* escaped */
} tcp_phase;

static int tcp_family(FILE *f, const tcp_phase *p, size_t n, const char *name, const char *help,
                      bool (*value)(const ks_tcp_figures *x, double *v))
{
    bool any = false;
    double v;
    int r;

    for (size_t i = 0; i < n; i++)
        any = any || (p[i].f && value(p[i].f, &v));
    if (!any)
        return 0; /* no value: the family is left out whole */
    r = header(f, name, "gauge", help);
    for (size_t i = 0; r >= 0 && i < n; i++)
        if (p[i].f && value(p[i].f, &v) &&
            fprintf(f, "%s{kernel=\"%s\",phase=\"%s\"} %.9g\n", name, p[i].kernel, p[i].phase, v) <
                0)
            r = -EIO;
    return r;
}

static bool tcp_ratio(const ks_tcp_figures *x, double *v)
{
    *v = x->ratio;
    return x->has_ratio;
}

static bool tcp_sent(const ks_tcp_figures *x, double *v)
{
    *v = (double)x->sent;
    return true;
}

static bool tcp_retransmitted(const ks_tcp_figures *x, double *v)
{
    *v = (double)x->retransmitted;
    return true;
}

static bool tcp_timeouts(const ks_tcp_figures *x, double *v)
{
    *v = (double)x->timeouts;
    return x->has_ext;
}

static bool tcp_window(const ks_tcp_figures *x, double *v)
{
    *v = (double)x->window_s;
    return x->window_s >= 0;
}

static bool tcp_rtt(const ks_tcp_figures *x, double *v)
{
    *v = x->end->rtt_median_us / 1e6;
    return x->end->has_rtt;
}

static bool tcp_delivery(const ks_tcp_figures *x, double *v)
{
    *v = (double)x->end->delivery_rate_median;
    return x->end->has_delivery;
}

/* The connections of each phase by congestion control: one more label. */
static int tcp_connections(FILE *f, const tcp_phase *p, size_t n)
{
    static const char name[] = "kswap_tcp_connections";
    bool any = false;
    int r;

    for (size_t i = 0; i < n; i++)
        any = any || (p[i].f && p[i].f->end->has_connections);
    if (!any)
        return 0;
    r = header(f, name, "gauge",
               "Established TCP connections (the peer not on loopback) by congestion control, at "
               "the end of the phase's window.");
    for (size_t i = 0; r >= 0 && i < n; i++) {
        const ks_tcp_sample *s = p[i].f ? p[i].f->end : NULL;
        for (size_t k = 0; r >= 0 && s && s->has_connections && k < s->n_cc; k++) {
            _cleanup_free_ char *cc =
                ks_metrics_escape_label(s->cc[k].name[0] ? s->cc[k].name : "unknown");
            if (!cc)
                r = -ENOMEM;
            else if (fprintf(f,
                             "%s{kernel=\"%s\",phase=\"%s\",congestion_control=\"%s\"} %" PRIu32
                             "\n",
                             name, p[i].kernel, p[i].phase, cc, s->cc[k].n) < 0)
                r = -EIO;
        }
    }
    return r;
}

/* The kswap_tcp_* families with one value per phase, in the order kswap.prom lists them. */
static const struct {
    const char *name, *help;
    bool (*value)(const ks_tcp_figures *x, double *v);
} tcp_families[] = {
    {"kswap_tcp_retransmit_ratio",
     "Retransmitted over sent TCP segments (/proc/net/snmp RetransSegs / OutSegs) over the "
     "phase's window: before, the old kernel from its boot to arming; after, the new kernel from "
     "the pin (or its boot).",
     tcp_ratio},
    {"kswap_tcp_segments_sent", "TCP segments sent over the phase's window (OutSegs).", tcp_sent},
    {"kswap_tcp_segments_retransmitted",
     "TCP segments retransmitted over the phase's window (RetransSegs).", tcp_retransmitted},
    {"kswap_tcp_timeouts",
     "TCP retransmission timeouts over the phase's window (TcpExt TCPTimeouts).", tcp_timeouts},
    {"kswap_tcp_window_seconds", "Length of the phase's window in seconds.", tcp_window},
    {"kswap_tcp_rtt_median_seconds",
     "Median smoothed RTT of the established connections at the end of the phase's window.",
     tcp_rtt},
    {"kswap_tcp_delivery_rate_median_bytes_per_second",
     "Median delivery rate of the connections that carry traffic, at the end of the phase's "
     "window.",
     tcp_delivery},
};

/*
 * The swap's effect on TCP (lib/engine/tcp-report.h), one series per kernel and phase, so that
 * a fleet dashboard averages a kernel's figures over its nodes.
 */
static int render_tcp(FILE *f, const ks_metrics *m)
{
    tcp_phase p[] = {{"before", m->tcp_before, NULL}, {"after", m->tcp_after, NULL}};
    int r = 0;

    for (size_t i = 0; i < ARRAY_SIZE(p); i++)
        if (p[i].f && !(p[i].kernel = ks_metrics_escape_label(p[i].f->end->kernel)))
            r = -ENOMEM;
    for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(tcp_families); i++)
        r = tcp_family(f, p, ARRAY_SIZE(p), tcp_families[i].name, tcp_families[i].help,
                       tcp_families[i].value);
    if (r >= 0)
        r = tcp_connections(f, p, ARRAY_SIZE(p));
    for (size_t i = 0; i < ARRAY_SIZE(p); i++)
        free(p[i].kernel);
    return r;
}

int ks_metrics_render(const ks_metrics *m, char **ret)
{
    static const char *const label_names[] = {"state",         "outcome",    "running_kernel",
                                              "pinned_kernel", "old_kernel", "new_kernel"};
    const char *values[] = {m->state,         m->outcome,    m->running_kernel,
                            m->pinned_kernel, m->old_kernel, m->new_kernel};
    _cleanup_free_ char *buf = NULL;
    size_t size = 0;
    FILE *f;
    int r = 0;

    assert(m);
    assert(ret);
    f = open_memstream(&buf, &size);
    if (!f)
        return -ENOMEM;
    r = header(f, "kswap_info", "gauge",
               "kswap's state journal: state, trial outcome and the kernels involved (always 1).");
    if (r >= 0)
        fputs("kswap_info{", f);
    for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(label_names); i++) {
        _cleanup_free_ char *v = ks_metrics_escape_label(values[i]);
        if (!v)
            r = -ENOMEM;
        else if (fprintf(f, "%s%s=\"%s\"", i ? "," : "", label_names[i], v) < 0)
            r = -EIO;
    }
    if (r >= 0)
        fputs("} 1\n", f);
    if (r >= 0 && m->has_last_change) {
        r = header(f, "kswap_last_change_timestamp_seconds", "gauge",
                   "When the state journal last changed (a step, a state or a verdict), in seconds "
                   "since the epoch.");
        if (r >= 0 &&
            fprintf(f, "kswap_last_change_timestamp_seconds %" PRId64 "\n", m->last_change) < 0)
            r = -EIO;
    }
    if (r >= 0 && m->has_trial_duration) {
        r = header(f, "kswap_trial_duration_seconds", "gauge",
                   "Seconds from arming the last judged trial to its verdict.");
        if (r >= 0 &&
            fprintf(f, "kswap_trial_duration_seconds %" PRId64 "\n", m->trial_duration) < 0)
            r = -EIO;
    }
    if (r >= 0) {
        r = header(f, "kswap_reboots_requested_total", "counter",
                   "Reboots kswap asked for over the life of its state journal.");
        if (r >= 0 &&
            fprintf(f, "kswap_reboots_requested_total %" PRIu64 "\n", m->reboots_requested) < 0)
            r = -EIO;
    }
    if (r >= 0 && m->update_current) {
        _cleanup_free_ char *cur = ks_metrics_escape_label(m->update_current),
                            *newest = ks_metrics_escape_label(m->update_newest),
                            *pkg = ks_metrics_escape_label(m->update_package);
        r = header(f, "kswap_update_available", "gauge",
                   "Whether a newer release of the node's XanMod branch than the kernel kswap "
                   "pinned is in apt's lists or installed but not the default (1) or not (0).");
        if (r >= 0 && (!cur || !newest || !pkg))
            r = -ENOMEM;
        if (r >= 0 && fprintf(f,
                              "kswap_update_available{current=\"%s\",newest=\"%s\","
                              "installed=\"%s\",package=\"%s\"} %d\n",
                              cur, newest, m->update_installed ? "true" : "false", pkg,
                              m->update_newest ? 1 : 0) < 0)
            r = -EIO;
    }
    if (r >= 0)
        r = render_tcp(f, m);
    if (fclose(f) != 0 && r >= 0)
        r = -ENOMEM;
    if (r < 0)
        return r == -EIO ? -ENOMEM : r;
    *ret = TAKE_PTR(buf);
    return 0;
}
