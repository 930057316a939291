/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kswap report: what the swap did for the node's TCP traffic, the old kernel's figures beside
 * the new kernel's with the change in percent (lib/engine/tcp-report.h); --connections lists
 * every established connection with its congestion control; --record keeps a sample now.
 */
#include <getopt.h>
#include <inttypes.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/swap-output.h"
#include "lib/engine/tcp-report.h"

static const ks_option report_options[] = {
    {"connections", 'c', NULL, "also list every established TCP connection now", NULL},
    {"record", 'r', NULL,
     "keep a sample now as the swap's figures after the pin (history, kswap.prom)", NULL},
    {},
};

/* ---- words for people ---- */

static char *fmt_window(int64_t s)
{
    if (s < 0)
        return strdup("unknown length");
    if (s < 120)
        return ks_asprintf("%" PRId64 " s", s);
    if (s < 7200)
        return ks_asprintf("%" PRId64 " min", s / 60);
    if (s < 172800)
        return ks_asprintf("%" PRId64 " h %" PRId64 " min", s / 3600, s % 3600 / 60);
    return ks_asprintf("%" PRId64 " d %" PRId64 " h", s / 86400, s % 86400 / 3600);
}

static char *fmt_rtt(bool has, uint32_t us)
{
    if (!has)
        return strdup("-");
    return us < 1000 ? ks_asprintf("%" PRIu32 " us", us) : ks_asprintf("%.1f ms", us / 1000.0);
}

/* A rate in bytes per second, in bits per second as network people say it. */
static char *fmt_rate(bool has, uint64_t bytes_per_s)
{
    double bits = (double)bytes_per_s * 8;

    if (!has)
        return strdup("-");
    if (bits >= 1e9)
        return ks_asprintf("%.2f Gbit/s", bits / 1e9);
    if (bits >= 1e6)
        return ks_asprintf("%.1f Mbit/s", bits / 1e6);
    return ks_asprintf("%.1f kbit/s", bits / 1e3);
}

static char *fmt_change(bool has, double pct)
{
    return has ? ks_asprintf("%+.1f %%", pct) : strdup("");
}

static char *fmt_cc(const ks_tcp_sample *s)
{
    _cleanup_free_ char *mix = NULL;

    if (!s->has_connections)
        return strdup("not known");
    for (size_t i = 0; i < s->n_cc; i++) {
        char *n = ks_asprintf("%s%s%s %" PRIu32, strempty(mix), mix ? ", " : "",
                              s->cc[i].name[0] ? s->cc[i].name : "unknown", s->cc[i].n);
        if (!n)
            return NULL;
        free(mix);
        mix = n;
    }
    return ks_asprintf("%" PRIu32 "%s%s", s->connections, mix ? ": " : "", strempty(mix));
}

static char *fmt_window_of(const ks_tcp_figures *f, const char *what)
{
    _cleanup_free_ char *len = fmt_window(f->window_s);

    return len ? ks_asprintf("%s, %s", what, len) : NULL;
}

/* One row of the side-by-side table; columns may be NULL (out of memory: shown as "?"). */
static void row(const char *name, const char *a, const char *b, const char *c)
{
    if (c && *c)
        ks_printf("%-22s %-30s %-30s %s\n", name, a ? a : "?", b ? b : "?", c);
    else /* no padding at the end of the line */
        ks_printf("%-22s %-30s %s\n", name, a ? a : "?", b ? b : "?");
}

typedef struct column {
    char *kernel, *window, *sent, *retrans, *timeouts, *conns, *rtt, *rate;
} column;

static void column_done(column *c)
{
    free(c->kernel);
    free(c->window);
    free(c->sent);
    free(c->retrans);
    free(c->timeouts);
    free(c->conns);
    free(c->rtt);
    free(c->rate);
}

static void column_of(const ks_tcp_figures *f, const char *window_what, column *c)
{
    const ks_tcp_sample *s = f->end;

    c->kernel = strdup(s->kernel ? s->kernel : "unknown");
    c->window = fmt_window_of(f, window_what);
    c->sent = ks_asprintf("%" PRIu64, f->sent);
    c->retrans = f->has_ratio
                     ? ks_asprintf("%" PRIu64 " (%.3f %%)", f->retransmitted, f->ratio * 100)
                     : ks_asprintf("%" PRIu64, f->retransmitted);
    c->timeouts = f->has_ext ? ks_asprintf("%" PRIu64, f->timeouts) : strdup("-");
    c->conns = fmt_cc(s);
    c->rtt = fmt_rtt(s->has_rtt, s->rtt_median_us);
    c->rate = fmt_rate(s->has_delivery, s->delivery_rate_median);
    if (c->rate && s->has_delivery) {
        char *n = ks_asprintf("%s (%" PRIu32 " with traffic)", c->rate, s->with_traffic);
        free(c->rate);
        c->rate = n;
    }
}

static void print_columns(const column *a, const column *b, const ks_tcp_compare *cmp)
{
    _cleanup_free_ char *d_ratio = fmt_change(cmp->has_ratio_change, cmp->ratio_change);
    _cleanup_free_ char *d_rtt = fmt_change(cmp->has_rtt_change, cmp->rtt_change);
    _cleanup_free_ char *d_rate = fmt_change(cmp->has_delivery_change, cmp->delivery_change);

    row("", "BEFORE", "AFTER", "CHANGE");
    row("kernel", a->kernel, b->kernel, NULL);
    row("window", a->window, b->window, NULL);
    row("segments sent", a->sent, b->sent, NULL);
    row("retransmitted", a->retrans, b->retrans, d_ratio);
    row("timeouts", a->timeouts, b->timeouts, NULL);
    row("connections", a->conns, b->conns, NULL);
    row("median RTT", a->rtt, b->rtt, d_rtt);
    row("median delivery rate", a->rate, b->rate, d_rate);
}

static const char *after_what(const ks_tcp_figures *f)
{
    return f->since_boot ? "boot to now" : "pin to now";
}

static void print_report(const ks_ctx *ctx, const ks_tcp_report *r)
{
    column a = {0}, b = {0}, now = {0};

    if (r->source) {
        ks_printf("swap %s -> %s (%s; from the %s)\n", strempty(r->old_kernel),
                  strempty(r->new_kernel), strempty(r->status),
                  streq(r->source, "journal") ? "state journal" : "swap history");
        ks_printf("\n");
        if (r->cmp.has_before)
            column_of(&r->cmp.before, "boot to arming", &a);
        if (r->cmp.has_after)
            column_of(&r->cmp.after, after_what(&r->cmp.after), &b);
        else {
            b.kernel = ks_asprintf("(%s)", strempty(r->cmp.no_after));
            b.window = strdup("-"), b.sent = strdup("-"), b.retrans = strdup("-");
            b.timeouts = strdup("-"), b.conns = strdup("-"), b.rtt = strdup("-");
            b.rate = strdup("-");
        }
        print_columns(&a, &b, &r->cmp);
        if (r->cmp.has_after && !r->cmp.after.since_boot)
            ks_printf("\nafter: from the pin at %s to now\n", strempty(r->cmp.after.from));
    } else {
        ks_printf("no swap with a TCP baseline yet (kswap takes one when it arms a trial); the "
                  "node now:\n\n");
        column_of(&r->now_figures, "boot to now", &now);
        ks_printf("%-22s %s\n", "kernel", strempty(now.kernel));
        ks_printf("%-22s %s\n", "window", strempty(now.window));
        ks_printf("%-22s %s\n", "segments sent", strempty(now.sent));
        ks_printf("%-22s %s\n", "retransmitted", strempty(now.retrans));
        ks_printf("%-22s %s\n", "timeouts", strempty(now.timeouts));
        ks_printf("%-22s %s\n", "connections", strempty(now.conns));
        ks_printf("%-22s %s\n", "median RTT", strempty(now.rtt));
        ks_printf("%-22s %s\n", "median delivery rate", strempty(now.rate));
    }
    if (r->conns_error)
        ks_printf("\nconnections: cannot read them: %s\n", r->conns_error);
    if (ctx->verbose && r->history_error)
        ks_printf("%s\n", r->history_error);
    column_done(&a);
    column_done(&b);
    column_done(&now);
}

/* A figure's retransmission ratio, for the one line of -q. */
static char *fmt_ratio(const ks_tcp_figures *f)
{
    if (!f->has_ratio)
        return ks_asprintf("nothing sent on %s", strempty(f->end->kernel));
    return ks_asprintf("%.3f %% on %s", f->ratio * 100, strempty(f->end->kernel));
}

/*
 * -q: the line that judges the swap's effect alone, "retransmitted: 2.000 % on OLD -> 1.000 %
 * on NEW (-50.0 %)", or what the node has now when no swap has a baseline.
 */
static void print_verdict(const ks_tcp_report *r)
{
    const ks_tcp_compare *c = &r->cmp;
    _cleanup_free_ char *before = NULL, *after = NULL, *change = NULL;

    if (!r->source) {
        after = fmt_ratio(&r->now_figures);
        ks_printf("retransmitted: %s since its boot (no swap with a TCP baseline yet)\n",
                  after ? after : "?");
        return;
    }
    before = c->has_before ? fmt_ratio(&c->before) : strdup("no baseline");
    after = c->has_after ? fmt_ratio(&c->after) : ks_asprintf("(%s)", strempty(c->no_after));
    change = c->has_ratio_change ? ks_asprintf(" (%+.1f %%)", c->ratio_change) : strdup("");
    ks_printf("retransmitted: %s -> %s%s\n", before ? before : "?", after ? after : "?",
              change ? change : "");
}

static void print_connections(const ks_tcp_report *r)
{
    ks_printf("\n%-46s %-46s %-8s %-10s %-22s %-14s %s\n", "LOCAL", "REMOTE", "CC", "RTT",
              "RETRANSMITTED", "DELIVERY", "PACING");
    for (size_t i = 0; i < r->conns.n; i++) {
        const ks_tcp_conn *c = &r->conns.v[i];
        _cleanup_free_ char *l = ks_tcp_endpoint_format(c->family, c->local, c->local_port);
        _cleanup_free_ char *p = ks_tcp_endpoint_format(c->family, c->remote, c->remote_port);
        _cleanup_free_ char *rtt = fmt_rtt(c->has_info, c->rtt_us);
        _cleanup_free_ char *dr = fmt_rate(c->has_info && c->delivery_rate, c->delivery_rate);
        _cleanup_free_ char *pr = fmt_rate(c->has_info && c->pacing_rate, c->pacing_rate);
        _cleanup_free_ char *re = NULL;
        double ratio;

        if (ks_tcp_conn_retrans_ratio(c, &ratio))
            re = ks_asprintf("%" PRIu32 "/%" PRIu32 " (%.2f %%)", c->total_retrans, c->segs_out,
                             ratio * 100);
        ks_printf("%-46s %-46s %-8s %-10s %-22s %-14s %s%s\n", l ? l : "?", p ? p : "?",
                  c->cc[0] ? c->cc : "?", rtt ? rtt : "?", re ? re : "-", dr ? dr : "?",
                  pr ? pr : "?", ks_tcp_conn_is_loopback(c) ? " (loopback)" : "");
    }
    if (r->conns.n == 0 && !r->conns_error)
        ks_printf("no established TCP connection\n");
}

/* ---- JSON ---- */

static json_object *sample_cc_json(ks_json_builder *b, const ks_tcp_sample *s)
{
    json_object *o;

    if (!s->has_connections)
        return NULL;
    o = ks_jb_object(b);
    for (size_t i = 0; i < s->n_cc; i++)
        ks_jb_add(b, o, s->cc[i].name[0] ? s->cc[i].name : "unknown", ks_jb_int(b, s->cc[i].n));
    return o;
}

static json_object *figures_json(ks_json_builder *b, const ks_tcp_figures *f)
{
    const ks_tcp_sample *s = f->end;
    json_object *o = ks_jb_object(b), *w = ks_jb_object(b);

    ks_jb_add(b, o, "kernel", ks_jb_string(b, s->kernel));
    ks_jb_add(b, o, "boot_id", ks_jb_string(b, s->boot_id));
    ks_jb_add(b, w, "since_boot", ks_jb_bool(b, f->since_boot));
    ks_jb_add(b, w, "from", ks_jb_string(b, f->from));
    ks_jb_add(b, w, "to", ks_jb_string(b, s->at));
    ks_jb_add(b, w, "seconds", f->window_s >= 0 ? ks_jb_int(b, f->window_s) : NULL);
    ks_jb_add(b, o, "window", w);
    ks_jb_add(b, o, "segments_sent", ks_jb_int(b, (int64_t)(f->sent & INT64_MAX)));
    ks_jb_add(b, o, "segments_retransmitted",
              ks_jb_int(b, (int64_t)(f->retransmitted & INT64_MAX)));
    ks_jb_add(b, o, "retransmit_ratio", f->has_ratio ? ks_jb_double(b, f->ratio) : NULL);
    ks_jb_add(b, o, "timeouts",
              f->has_ext ? ks_jb_int(b, (int64_t)(f->timeouts & INT64_MAX)) : NULL);
    ks_jb_add(b, o, "lost_retransmits",
              f->has_ext ? ks_jb_int(b, (int64_t)(f->lost_retransmit & INT64_MAX)) : NULL);
    ks_jb_add(b, o, "connections", s->has_connections ? ks_jb_int(b, s->connections) : NULL);
    ks_jb_add(b, o, "congestion_control", sample_cc_json(b, s));
    ks_jb_add(b, o, "rtt_median_us", s->has_rtt ? ks_jb_int(b, s->rtt_median_us) : NULL);
    ks_jb_add(b, o, "with_traffic", s->has_connections ? ks_jb_int(b, s->with_traffic) : NULL);
    ks_jb_add(b, o, "delivery_rate_median",
              s->has_delivery ? ks_jb_int(b, (int64_t)(s->delivery_rate_median & INT64_MAX))
                              : NULL);
    return o;
}

static json_object *change_json(ks_json_builder *b, const ks_tcp_compare *c)
{
    json_object *o;

    if (!c->has_before || !c->has_after)
        return NULL;
    o = ks_jb_object(b);
    ks_jb_add(b, o, "retransmit_ratio_percent",
              c->has_ratio_change ? ks_jb_double(b, c->ratio_change) : NULL);
    ks_jb_add(b, o, "rtt_median_percent",
              c->has_rtt_change ? ks_jb_double(b, c->rtt_change) : NULL);
    ks_jb_add(b, o, "delivery_rate_median_percent",
              c->has_delivery_change ? ks_jb_double(b, c->delivery_change) : NULL);
    return o;
}

static json_object *swap_json(ks_json_builder *b, const ks_tcp_report *r)
{
    json_object *o;

    if (!r->source)
        return NULL;
    o = ks_jb_object(b);
    ks_jb_add(b, o, "source", ks_jb_string(b, r->source));
    ks_jb_add(b, o, "history_id", r->history_id ? ks_jb_int(b, (int64_t)r->history_id) : NULL);
    ks_jb_add(b, o, "swap_id", ks_jb_string(b, r->swap_id));
    ks_jb_add(b, o, "old_kernel", ks_jb_string(b, r->old_kernel));
    ks_jb_add(b, o, "new_kernel", ks_jb_string(b, r->new_kernel));
    ks_jb_add(b, o, "status", ks_jb_string(b, r->status));
    return o;
}

static int print_json(const ks_tcp_report *r, bool with_conns, int recorded, const char *warning)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b);

    ks_jb_add(&b, o, "command", ks_jb_string(&b, "report"));
    ks_jb_add(&b, o, "result", ks_jb_string(&b, "ok"));
    ks_jb_add(&b, o, "swap", swap_json(&b, r));
    ks_jb_add(&b, o, "before", r->cmp.has_before ? figures_json(&b, &r->cmp.before) : NULL);
    ks_jb_add(&b, o, "after", r->cmp.has_after ? figures_json(&b, &r->cmp.after) : NULL);
    ks_jb_add(&b, o, "no_after", ks_jb_string(&b, r->source ? r->cmp.no_after : NULL));
    ks_jb_add(&b, o, "change", change_json(&b, &r->cmp));
    ks_jb_add(&b, o, "now", figures_json(&b, &r->now_figures));
    if (recorded >= 0)
        ks_jb_add(&b, o, "recorded", ks_jb_bool(&b, recorded > 0));
    ks_jb_add(&b, o, "warning", ks_jb_string(&b, warning));
    ks_jb_add(&b, o, "connections_error", ks_jb_string(&b, r->conns_error));
    if (with_conns) {
        json_object *a = ks_jb_array(&b);
        for (size_t i = 0; i < r->conns.n; i++)
            ks_jb_push(&b, a, ks_jb_part(&b, ks_tcp_conn_to_json(&r->conns.v[i])));
        ks_jb_add(&b, o, "connections", a);
    }
    return ks_print_json_built("report", &b, o);
}

static int record(ks_ctx *ctx, char **ret_warning)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_free_ char *err = NULL;
    int r;

    if (ks_root_is_host(ctx->root) && geteuid() != 0) {
        ks_error("'kswap report --record' writes the state journal and must run as root; try "
                 "'sudo kswap report --record'");
        return KS_EXIT_ERROR;
    }
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    r = ks_tcp_report_record(ctx->root, cfg, &err, ret_warning);
    if (r == -ESRCH) {
        ks_error("%s", strempty(err));
        return KS_EXIT_REFUSED;
    }
    if (r < 0) {
        ks_error("%s", err ? err : strerror(-r));
        return KS_EXIT_ERROR;
    }
    if (*ret_warning)
        ks_warn("%s", *ret_warning);
    return KS_EXIT_OK;
}

static int run_report(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_tcp_report_donep) ks_tcp_report r = {0};
    _cleanup_free_ char *err = NULL, *warning = NULL;
    bool with_conns = false, do_record = false;
    int c, k, exit_code = KS_EXIT_OK;

    while ((c = ks_getopt(&ks_cmd_report, argc, argv)) != -1) {
        if (c == 'c')
            with_conns = true;
        else if (c == 'r')
            do_record = true;
        else
            return KS_EXIT_ERROR;
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_report, "unexpected argument '%s'", argv[optind]);
    if (do_record) {
        exit_code = record(ctx, &warning);
        if (exit_code != KS_EXIT_OK)
            return exit_code;
    }
    k = ks_tcp_report_make(ctx->root, &r, &err);
    if (k < 0) {
        ks_error("%s", err ? err : strerror(-k));
        return KS_EXIT_ERROR;
    }
    if (ctx->json)
        return print_json(&r, with_conns, do_record ? 1 : -1, warning);
    if (do_record && !ctx->quiet)
        ks_printf(
            "recorded: a sample now is the swap's figures after the pin in the state journal, "
            "the history and kswap.prom\n\n");
    if (ctx->quiet)
        print_verdict(&r);
    else
        print_report(ctx, &r);
    if (with_conns)
        print_connections(&r);
    return KS_EXIT_OK;
}

const ks_cmd ks_cmd_report = {
    .name = "report",
    .run = run_report,
    .summary =
        "the swap's effect on TCP: retransmissions, RTT, congestion control, before and after",
    .usage = "[--connections] [--record]",
    .flags = KS_READ_ONLY,
    .options = report_options,
    .json_key = "result",
};
