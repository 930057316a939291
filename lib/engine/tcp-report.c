/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The swap's effect on the node's TCP traffic: samples, comparison, report (tcp-report.h). */
#include <assert.h>
#include <inttypes.h>

#include "lib/basic/util.h"
#include "lib/engine/history.h"
#include "lib/engine/lock.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/tcp-report.h"
#include "lib/host/kernels.h"

static char *cc_mix(const ks_tcp_sample *s)
{
    _cleanup_free_ char *mix = NULL;

    for (size_t i = 0; i < s->n_cc; i++) {
        char *n = ks_asprintf("%s%s%s %" PRIu32, mix ? mix : "", mix ? ", " : "",
                              s->cc[i].name[0] ? s->cc[i].name : "unknown", s->cc[i].n);
        if (!n)
            return NULL;
        free(mix);
        mix = n;
    }
    return mix ? TAKE_PTR(mix) : strdup("none");
}

int ks_tcp_record(const ks_root *root, ks_journal *j, ks_tcp_slot slot, char **ret_summary)
{
    _cleanup_(ks_tcp_sample_donep) ks_tcp_sample s = {0};
    _cleanup_free_ char *why = NULL;
    ks_tcp_figures f;
    int r;

    assert(root);
    assert(j);
    r = ks_tcp_sample_take(root, time(NULL), &s, NULL, &why);
    if (r < 0)
        return r;
    r = ks_journal_set_tcp(j, slot, &s);
    if (r < 0 || !ret_summary)
        return r;
    ks_tcp_figures_of(NULL, &s, &f);
    {
        _cleanup_free_ char *mix = s.has_connections ? cc_mix(&s) : NULL;
        *ret_summary = ks_asprintf(
            "TCP on %s since its boot: %" PRIu64 " segments sent, %.2f %% retransmitted; %s",
            strempty(s.kernel), f.sent, f.has_ratio ? f.ratio * 100 : 0.0,
            s.has_connections ? "connections by congestion control: " : "connections unknown: ");
        if (*ret_summary) {
            char *full = ks_asprintf("%s%s", *ret_summary,
                                     s.has_connections ? strempty(mix) : strempty(why));
            free(*ret_summary);
            *ret_summary = full;
        }
    }
    return *ret_summary ? 0 : -ENOMEM;
}

static void changes(ks_tcp_compare *c)
{
    const ks_tcp_sample *b = c->before.end, *a = c->after.end;

    if (!c->has_before || !c->has_after)
        return;
    if (c->before.has_ratio && c->after.has_ratio)
        c->has_ratio_change =
            ks_tcp_change_percent(c->before.ratio, c->after.ratio, &c->ratio_change);
    if (b->has_rtt && a->has_rtt)
        c->has_rtt_change =
            ks_tcp_change_percent(b->rtt_median_us, a->rtt_median_us, &c->rtt_change);
    if (b->has_delivery && a->has_delivery)
        c->has_delivery_change = ks_tcp_change_percent(
            (double)b->delivery_rate_median, (double)a->delivery_rate_median, &c->delivery_change);
}

void ks_tcp_compare_of(const ks_tcp_effect *e, const char *new_kernel, const ks_tcp_sample *now,
                       ks_tcp_compare *ret)
{
    ks_tcp_compare c = {0};

    assert(e);
    assert(ret);
    if (e->baseline) {
        c.has_before = true;
        ks_tcp_figures_of(NULL, e->baseline, &c.before);
    }
    if (now) {
        if (!new_kernel)
            c.no_after = "no kernel swapped to yet";
        else if (!now->kernel || !streq(now->kernel, new_kernel))
            c.no_after = "the node does not run the new kernel";
        else {
            /* From the pin when this is the boot it was pinned in, else from this boot. */
            c.has_after = true;
            ks_tcp_figures_of(e->pinned, now, &c.after);
        }
    } else if (e->after) {
        c.has_after = true;
        ks_tcp_figures_of(e->pinned, e->after, &c.after);
    } else if (e->pinned) {
        c.has_after = true;
        ks_tcp_figures_of(NULL, e->pinned, &c.after);
    } else
        c.no_after = "not pinned yet";
    changes(&c);
    *ret = c;
}

void ks_tcp_report_done(ks_tcp_report *r)
{
    if (!r)
        return;
    free(r->swap_id);
    free(r->old_kernel);
    free(r->new_kernel);
    free(r->status);
    ks_tcp_effect_done(&r->effect);
    ks_tcp_sample_done(&r->now);
    ks_tcp_conns_done(&r->conns);
    free(r->conns_error);
    free(r->history_error);
    *r = (ks_tcp_report){0};
}

/* The journal's swap, when it has a baseline: 1; 0 when not. */
static int from_journal(const ks_journal *j, ks_tcp_report *r)
{
    int k;

    if (!ks_journal_tcp(j)->baseline)
        return 0;
    r->source = "journal";
    if ((k = ks_strdup_null(ks_journal_swap_id(j), &r->swap_id)) < 0 ||
        (k = ks_strdup_null(ks_journal_get(j, KS_JF_OLD_KERNEL), &r->old_kernel)) < 0 ||
        (k = ks_strdup_null(ks_journal_get(j, KS_JF_NEW_KERNEL), &r->new_kernel)) < 0 ||
        (k = ks_strdup_null(ks_state_to_string(ks_journal_state(j)), &r->status)) < 0 ||
        (k = ks_tcp_effect_copy(ks_journal_tcp(j), &r->effect)) < 0)
        return k;
    return 1;
}

/* The newest record of the history with a baseline: 1; 0 when none. */
static int from_history(const ks_root *root, ks_tcp_report *r)
{
    _cleanup_history_ ks_history h = {0};
    _cleanup_free_ char *err = NULL;
    int k = ks_history_load(root, &h, &err);

    if (k == -ENOMEM)
        return k;
    if (k < 0) {
        r->history_error = ks_asprintf("cannot read the swap history '/%s': %s", KS_HISTORY_PATH,
                                       err ? err : strerror(-k));
        return r->history_error ? 0 : -ENOMEM;
    }
    for (size_t i = h.n; i-- > 0;) {
        const ks_history_record *x = &h.v[i];
        if (!x->tcp.baseline)
            continue;
        r->source = "history";
        r->history_id = x->id;
        if ((k = ks_strdup_null(x->swap_id, &r->swap_id)) < 0 ||
            (k = ks_strdup_null(x->from.release, &r->old_kernel)) < 0 ||
            (k = ks_strdup_null(x->to.release, &r->new_kernel)) < 0 ||
            (k = ks_strdup_null(x->outcome, &r->status)) < 0 ||
            (k = ks_tcp_effect_copy(&x->tcp, &r->effect)) < 0)
            return k;
        return 1;
    }
    return 0;
}

int ks_tcp_report_make(const ks_root *root, ks_tcp_report *ret, char **ret_error)
{
    _cleanup_(ks_tcp_report_donep) ks_tcp_report r = {0};
    _cleanup_journal_ ks_journal *j = NULL;
    _cleanup_free_ char *jerr = NULL;
    int k;

    assert(root);
    assert(ret);
    k = ks_tcp_sample_take(root, time(NULL), &r.now, &r.conns, &r.conns_error);
    if (k < 0) {
        if (ret_error)
            *ret_error = ks_asprintf("cannot read the node's TCP counters (/proc/net/snmp): %s",
                                     k == -EBADMSG ? "not the kernel's format" : strerror(-k));
        return k;
    }
    k = ks_journal_load(root, &j, &jerr);
    if (k < 0) {
        if (ret_error)
            *ret_error = ks_asprintf("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                                     jerr ? jerr : strerror(-k));
        return k;
    }
    k = from_journal(j, &r);
    if (k == 0)
        k = from_history(root, &r);
    if (k < 0)
        return k;
    *ret = r;
    r = (ks_tcp_report){0};
    /* The figures point into the samples: made where the report now lives. */
    ks_tcp_figures_of(NULL, &ret->now, &ret->now_figures);
    if (ret->source)
        ks_tcp_compare_of(&ret->effect, ret->new_kernel, &ret->now, &ret->cmp);
    return 0;
}

/* Whether j's swap can get an "after" sample now: 0, or -ESRCH with *ret_error saying why. */
static int recordable(const ks_root *root, const ks_journal *j, char **ret_error)
{
    _cleanup_free_ char *running = NULL;
    const char *new_kernel = ks_journal_get(j, KS_JF_NEW_KERNEL);
    char *why = NULL;

    (void)ks_running_kernel(root, &running);
    if (ks_journal_state(j) != KS_STATE_PINNED)
        why = ks_asprintf("nothing to record: the swap is %s, not pinned",
                          ks_state_to_string(ks_journal_state(j)));
    else if (!new_kernel || !streq_ptr(running, new_kernel))
        why = ks_asprintf("nothing to record: the node runs %s, not the pinned %s",
                          strempty(running), strempty(new_kernel));
    else if (!ks_journal_tcp(j)->baseline)
        why = strdup("nothing to record: this swap has no baseline (armed by a kswap before "
                     "the report)");
    else
        return 0;
    if (ret_error)
        *ret_error = why;
    else
        free(why);
    return -ESRCH;
}

static int load(const ks_root *root, ks_journal **ret, char **ret_error)
{
    _cleanup_free_ char *err = NULL;
    int r = ks_journal_load(root, ret, &err);

    if (r < 0 && ret_error)
        *ret_error = ks_asprintf("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                                 err ? err : strerror(-r));
    return r;
}

int ks_tcp_report_record(const ks_root *root, const ks_config *cfg, char **ret_error,
                         char **ret_warning)
{
    _cleanup_(ks_lock_releasep) ks_lock *lock = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    pid_t holder = 0;
    int r;

    assert(root);
    /* Nothing to record: said without taking the lock (which would create its file). */
    r = load(root, &j, ret_error);
    if (r >= 0)
        r = recordable(root, j, ret_error);
    if (r < 0)
        return r;
    j = ks_journal_free(j);
    r = ks_lock_acquire(root, KS_LOCK_TIMEOUT_MS_DEFAULT, &lock, &holder);
    if (r < 0) {
        if (ret_error)
            *ret_error = r == -EBUSY ? ks_asprintf("another kswap (pid %d) is changing this "
                                                   "system; try again once it is done",
                                                   (int)holder)
                                     : ks_asprintf("cannot take the lock '/%s': %s", KS_LOCK_PATH,
                                                   strerror(-r));
        return r;
    }
    /* Again under the lock: another kswap may have changed the journal meanwhile. */
    r = load(root, &j, ret_error);
    if (r >= 0)
        r = recordable(root, j, ret_error);
    if (r < 0)
        return r;
    r = ks_metrics_attach(j, root, cfg);
    if (r >= 0)
        r = ks_tcp_record(root, j, KS_TCP_AFTER, NULL);
    if (r >= 0)
        r = ks_journal_save(j);
    if (r < 0) {
        if (ret_error)
            *ret_error = ks_asprintf("cannot record the sample in the state journal '/%s': %s",
                                     KS_JOURNAL_PATH, strerror(-r));
        return r;
    }
    /* The history keeps the swap's samples too; a failure there is a warning. */
    r = ks_history_note(root, j, ret_warning);
    if (r == -ENOMEM)
        return r;
    if (ret_warning && !*ret_warning && ks_metrics_error(j))
        *ret_warning = strdup(ks_metrics_error(j));
    return 0;
}
