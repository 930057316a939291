/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/basic/fileio.h"
#include "lib/basic/findings.h"
#include "lib/basic/json-util.h"
#include "lib/basic/time-util.h"
#include "lib/engine/history.h"
#include "lib/host/requester.h"

#include "build-config.h" /* KSWAP_VERSION */

const char *const ks_history_outcomes[] = {
    "pinned", "rolled-back", "failed", "health-failed", "fell-back", "trial-hung", NULL,
};

static void record_done(ks_history_record *r)
{
    free(r->swap_id);
    free(r->started);
    free(r->ended);
    free(r->from.release);
    free(r->from.id_path);
    free(r->to.release);
    free(r->to.id_path);
    free(r->outcome);
    free(r->reason);
    free(r->by);
    free(r->version);
    ks_tcp_effect_done(&r->tcp);
    *r = (ks_history_record){0};
}

void ks_history_done(ks_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        record_done(&h->v[i]);
    free(h->v);
    *h = (ks_history){0};
}

const char *ks_history_outcome_of(const ks_journal *j)
{
    ks_outcome o = ks_journal_outcome(j);

    switch (ks_journal_state(j)) {
    case KS_STATE_PINNED:
        return "pinned";
    case KS_STATE_ROLLED_BACK:
    case KS_STATE_FAILED:
        /* The trial's verdict says more than the rollback it led to. */
        if (o == KS_OUTCOME_HEALTH_FAILED || o == KS_OUTCOME_FELL_BACK ||
            o == KS_OUTCOME_TRIAL_HUNG)
            return ks_outcome_to_string(o);
        return ks_state_to_string(ks_journal_state(j));
    default:
        if (o == KS_OUTCOME_HEALTH_FAILED || o == KS_OUTCOME_FELL_BACK ||
            o == KS_OUTCOME_TRIAL_HUNG)
            return ks_outcome_to_string(o);
        return NULL;
    }
}

/* ---- JSON out ---- */

static json_object *kernel_to_json(ks_json_builder *b, const ks_history_kernel *k)
{
    json_object *o = ks_jb_object(b);
    ks_jb_add(b, o, "release", ks_jb_string(b, k->release));
    ks_jb_add(b, o, "id_path", ks_jb_string(b, k->id_path));
    return o;
}

static json_object *record_to_json(ks_json_builder *b, const ks_history_record *r)
{
    json_object *o = ks_jb_object(b);

    ks_jb_add(b, o, "id", ks_jb_int(b, (int64_t)r->id));
    ks_jb_add(b, o, "swap_id", ks_jb_string(b, r->swap_id));
    ks_jb_add(b, o, "started", ks_jb_string(b, r->started));
    ks_jb_add(b, o, "ended", ks_jb_string(b, r->ended));
    ks_jb_add(b, o, "from", kernel_to_json(b, &r->from));
    ks_jb_add(b, o, "to", kernel_to_json(b, &r->to));
    ks_jb_add(b, o, "outcome", ks_jb_string(b, r->outcome));
    ks_jb_add(b, o, "reason", ks_jb_string(b, r->reason));
    ks_jb_add(b, o, "by", ks_jb_string(b, r->by));
    ks_jb_add(b, o, "version", ks_jb_string(b, r->version));
    if (!ks_tcp_effect_is_empty(&r->tcp))
        ks_jb_add(b, o, "tcp", ks_jb_part(b, ks_tcp_effect_to_json(&r->tcp)));
    return o;
}

json_object *ks_history_record_to_json(const ks_history_record *r)
{
    ks_json_builder b = {0};
    return ks_jb_finish(&b, record_to_json(&b, r));
}

int ks_history_format(const ks_history *h, char **ret)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *a = ks_jb_array(&b);

    ks_jb_add(&b, o, "version", ks_jb_int(&b, KS_HISTORY_VERSION));
    for (size_t i = 0; i < h->n; i++)
        ks_jb_push(&b, a, record_to_json(&b, &h->v[i]));
    ks_jb_add(&b, o, "swaps", a);
    return ks_json_file_text(ks_jb_finish(&b, o), ret);
}

/* ---- JSON in ---- */

static int get_time(ks_json_reader *p, json_object *o, const char *ctx, const char *key, char **dst)
{
    time_t t;
    int r = ks_json_reader_string(p, o, ctx, key, true, dst);

    if (r < 0)
        return r;
    if (ks_parse_utc(*dst, &t) < 0)
        return ks_json_reader_fail(p, -EBADMSG,
                                   "%s'%s' is not a UTC time like 2026-11-30T07:50:00Z", ctx, key);
    return 0;
}

static int get_kernel(ks_json_reader *p, json_object *o, const char *ctx, const char *key,
                      ks_history_kernel *k)
{
    _cleanup_free_ char *sub = NULL;
    json_object *v = NULL;
    int r;

    if (!json_object_object_get_ex(o, key, &v) || !v)
        return ks_json_reader_fail(p, -EBADMSG, "%s'%s' is missing", ctx, key);
    if (!json_object_is_type(v, json_type_object))
        return ks_json_reader_fail(p, -EBADMSG, "%s'%s' is not an object", ctx, key);
    sub = ks_asprintf("%s%s: ", ctx, key);
    if (!sub) {
        p->oom = true;
        return -ENOMEM;
    }
    if ((r = ks_json_reader_string(p, v, sub, "release", false, &k->release)) < 0 ||
        (r = ks_json_reader_string(p, v, sub, "id_path", false, &k->id_path)) < 0)
        return r;
    return 0;
}

static bool known_outcome(const char *s)
{
    for (const char *const *o = ks_history_outcomes; *o; o++)
        if (streq(*o, s))
            return true;
    return false;
}

static int parse_record(ks_json_reader *p, json_object *x, size_t i, ks_history_record *res)
{
    json_object *v = NULL;
    char ctx[48];
    int64_t id;
    int r;

    snprintf(ctx, sizeof(ctx), "swaps[%zu]: ", i);
    if (!json_object_is_type(x, json_type_object))
        return ks_json_reader_fail(p, -EBADMSG, "swaps[%zu] is not an object", i);
    if (!json_object_object_get_ex(x, "id", &v) || !v)
        return ks_json_reader_fail(p, -EBADMSG, "%s'id' is missing", ctx);
    if (!json_object_is_type(v, json_type_int))
        return ks_json_reader_fail(p, -EBADMSG, "%s'id' is not an integer", ctx);
    errno = 0;
    id = json_object_get_int64(v);
    if (id <= 0 || errno != 0)
        return ks_json_reader_fail(p, -EBADMSG, "%s'id' is out of range", ctx);
    res->id = (uint64_t)id;
    if ((r = ks_json_reader_string(p, x, ctx, "swap_id", false, &res->swap_id)) < 0)
        return r;
    /* Absent (null) in records written before swaps had an id. */
    if (res->swap_id && !ks_id128_is_valid(res->swap_id))
        return ks_json_reader_fail(p, -EBADMSG,
                                   "%s'swap_id' is not 32 lower-case hexadecimal digits", ctx);
    if ((r = get_time(p, x, ctx, "started", &res->started)) < 0 ||
        (r = get_time(p, x, ctx, "ended", &res->ended)) < 0 ||
        (r = get_kernel(p, x, ctx, "from", &res->from)) < 0 ||
        (r = get_kernel(p, x, ctx, "to", &res->to)) < 0 ||
        (r = ks_json_reader_string(p, x, ctx, "outcome", true, &res->outcome)) < 0 ||
        (r = ks_json_reader_string(p, x, ctx, "reason", false, &res->reason)) < 0 ||
        (r = ks_json_reader_string(p, x, ctx, "by", false, &res->by)) < 0 ||
        (r = ks_json_reader_string(p, x, ctx, "version", false, &res->version)) < 0)
        return r;
    if (!known_outcome(res->outcome))
        return ks_json_reader_fail(p, -EBADMSG, "%s'outcome': unknown value '%s'", ctx,
                                   res->outcome);
    if (json_object_object_get_ex(x, "tcp", &v) && v) {
        _cleanup_free_ char *why = NULL;
        r = ks_tcp_effect_from_json(v, &res->tcp, &why);
        if (r == -ENOMEM)
            p->oom = true;
        if (r < 0)
            return r == -ENOMEM
                       ? r
                       : ks_json_reader_fail(p, -EBADMSG, "%s'tcp': %s", ctx, strempty(why));
    }
    return 0;
}

static int parse_object(ks_json_reader *p, json_object *o, ks_history *h)
{
    json_object *v = NULL, *a = NULL;
    size_t n;
    int r;

    if (!json_object_is_type(o, json_type_object))
        return ks_json_reader_fail(p, -EBADMSG, "not a JSON object");
    if (!json_object_object_get_ex(o, "version", &v) || !v)
        return ks_json_reader_fail(p, -EBADMSG, "'version' is missing");
    if (!json_object_is_type(v, json_type_int))
        return ks_json_reader_fail(p, -EBADMSG, "'version' is not an integer");
    if (json_object_get_int64(v) != KS_HISTORY_VERSION) {
        (void)ks_json_reader_fail(p, -EBADMSG,
                                  "version %" PRId64 " is not known to this kswap (it knows %d)",
                                  json_object_get_int64(v), KS_HISTORY_VERSION);
        return -EPROTONOSUPPORT;
    }
    if (!json_object_object_get_ex(o, "swaps", &a) || !a)
        return ks_json_reader_fail(p, -EBADMSG, "'swaps' is missing");
    if (!json_object_is_type(a, json_type_array))
        return ks_json_reader_fail(p, -EBADMSG, "'swaps' is not an array");
    n = json_object_array_length(a);
    h->v = calloc(n + 1, sizeof(*h->v));
    if (!h->v) {
        p->oom = true;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        ks_history_record *res = &h->v[h->n++];
        r = parse_record(p, json_object_array_get_idx(a, i), i, res);
        if (r < 0)
            return r;
        /* Ids grow: a hand-edited file that repeats or reorders them is not a history. */
        if (i > 0 && res->id <= h->v[i - 1].id)
            return ks_json_reader_fail(p, -EBADMSG,
                                       "swaps[%zu]: 'id' %" PRIu64 " does not follow %" PRIu64, i,
                                       res->id, h->v[i - 1].id);
    }
    return 0;
}

int ks_history_parse(const char *text, size_t len, ks_history *ret, char **ret_error)
{
    _cleanup_history_ ks_history h = {0};
    json_object *o = NULL;
    char *why = NULL;
    ks_json_reader p = {0};
    int r;

    assert(text || len == 0);
    assert(ret);
    r = ks_json_parse_document(text, len,
                               &(ks_json_limits){.bytes = KS_HISTORY_MAX_SIZE,
                                                 .containers = KS_HISTORY_MAX_CONTAINERS,
                                                 .values = KS_HISTORY_MAX_VALUES},
                               &o, &why);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        r = ks_json_reader_fail(&p, -EBADMSG, "%s", why);
        free(why);
        goto fail;
    }
    r = parse_object(&p, o, &h);
    json_object_put(o);
    if (r < 0)
        goto fail;
    *ret = h;
    h = (ks_history){0};
    return 0;

fail:
    return ks_json_reader_end(&p, r, ret_error);
}

int ks_history_load(const ks_root *root, ks_history *ret, char **ret_error)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    assert(root);
    r = ks_json_read_file(root, KS_HISTORY_PATH, KS_HISTORY_MAX_SIZE, &text, &len, ret_error);
    if (r < 0)
        return r;
    if (!text) {
        *ret = (ks_history){0};
        return 0;
    }
    return ks_history_parse(text, len, ret, ret_error);
}

/* ---- writing ---- */

static int dup_or_null(const char *s, char **dst)
{
    *dst = NULL;
    if (!s)
        return 0;
    *dst = strdup(s);
    return *dst ? 0 : -ENOMEM;
}

/* The damaged file goes aside (replacing an earlier one there), durably. */
static int move_aside(const ks_root *root)
{
    return ks_rename_durable(root, KS_HISTORY_PATH, strrchr(KS_HISTORY_DAMAGED_PATH, '/') + 1);
}

static int fill_record(const ks_root *root, const ks_journal *j, const char *outcome,
                       ks_history_record *res)
{
    const char *ended = ks_journal_updated(j);
    char buf[KS_UTC_MAX];
    int r;

    if (!ended)
        ended = ks_format_utc(time(NULL), buf);
    if ((r = dup_or_null(ks_journal_swap_id(j), &res->swap_id)) < 0 ||
        (r = dup_or_null(ks_journal_created(j) ? ks_journal_created(j) : ended, &res->started)) <
            0 ||
        (r = dup_or_null(ended, &res->ended)) < 0 ||
        (r = dup_or_null(ks_journal_get(j, KS_JF_OLD_KERNEL), &res->from.release)) < 0 ||
        (r = dup_or_null(ks_journal_get(j, KS_JF_OLD_PATH), &res->from.id_path)) < 0 ||
        (r = dup_or_null(ks_journal_get(j, KS_JF_NEW_KERNEL), &res->to.release)) < 0 ||
        (r = dup_or_null(ks_journal_get(j, KS_JF_NEW_PATH), &res->to.id_path)) < 0 ||
        (r = dup_or_null(outcome, &res->outcome)) < 0 ||
        (r = dup_or_null(ks_journal_get(j, KS_JF_REASON), &res->reason)) < 0 ||
        (r = dup_or_null(KSWAP_VERSION, &res->version)) < 0)
        return r;
    r = ks_tcp_effect_copy(ks_journal_tcp(j), &res->tcp);
    if (r < 0)
        return r;
    /* A pinned swap's reason is that of an earlier failed attempt: not this outcome's. */
    if (streq(outcome, "pinned")) {
        free(res->reason);
        res->reason = NULL;
    }
    return ks_requester(root, &res->by);
}

/* Whether a record holds j's TCP samples already (report --record adds one later). */
static bool same_tcp(const ks_history_record *last, const ks_journal *j)
{
    json_object *a = ks_tcp_effect_to_json(&last->tcp),
                *b = ks_tcp_effect_to_json(ks_journal_tcp(j));
    bool same = a && b && json_object_equal(a, b);

    json_object_put(a);
    json_object_put(b);
    return same;
}

/*
 * Whether the newest record is j's swap. By the swap's id; a record or a journal written before
 * swaps had one (no id on either side) by the time the journal was created, which two swaps
 * that start within one second share. An id on one side only: two different swaps.
 */
static bool same_swap(const ks_history_record *last, const ks_journal *j)
{
    const char *id = ks_journal_swap_id(j), *started = ks_journal_created(j);

    if (last->swap_id || id)
        return streq_ptr(last->swap_id, id);
    return started && streq(last->started, started);
}

int ks_history_note(const ks_root *root, const ks_journal *j, char **ret_warning)
{
    _cleanup_history_ ks_history h = {0};
    _cleanup_free_ char *err = NULL, *text = NULL, *warning = NULL, *ended = NULL;
    ks_history_record res = {0}, *last, *grown;
    const char *outcome;
    size_t drop = 0;
    int r;

    assert(root);
    assert(j);
    outcome = ks_history_outcome_of(j);
    if (!outcome)
        return 0;
    r = ks_history_load(root, &h, &err);
    if (r == -EBADMSG || r == -EPROTONOSUPPORT) {
        r = move_aside(root);
        if (r < 0) {
            if (ret_warning)
                *ret_warning = ks_asprintf("the swap history '/%s' is damaged (%s) and cannot "
                                           "be moved aside: %s; this swap is not in it",
                                           KS_HISTORY_PATH, strempty(err), strerror(-r));
            return r;
        }
        warning = ks_asprintf("the swap history '/%s' was damaged (%s); it was moved to '/%s' "
                              "and a new history started",
                              KS_HISTORY_PATH, strempty(err), KS_HISTORY_DAMAGED_PATH);
        ks_history_done(&h);
    } else if (r < 0) {
        if (ret_warning)
            *ret_warning = ks_asprintf("cannot read the swap history '/%s': %s; this swap is "
                                       "not in it",
                                       KS_HISTORY_PATH, strerror(-r));
        return r;
    }

    last = h.n > 0 ? &h.v[h.n - 1] : NULL;
    /* The same swap as the newest record: replaced when it ended otherwise, else nothing. */
    if (last && same_swap(last, j)) {
        bool same_end = streq(last->outcome, outcome) &&
                        streq_ptr(last->to.release, ks_journal_get(j, KS_JF_NEW_KERNEL));
        if (same_end && same_tcp(last, j))
            goto out;
        /* Only newer TCP samples: the swap still ended when it did. */
        if (same_end)
            ended = TAKE_PTR(last->ended);
        res.id = last->id;
        record_done(last);
        h.n--;
    } else
        res.id = last ? last->id + 1 : 1;
    r = fill_record(root, j, outcome, &res);
    if (r >= 0 && ended) {
        free(res.ended);
        res.ended = TAKE_PTR(ended);
    }
    if (r < 0) {
        record_done(&res);
        return r;
    }
    grown = realloc(h.v, (h.n + 1) * sizeof(*h.v));
    if (!grown) {
        record_done(&res);
        return -ENOMEM;
    }
    h.v = grown;
    h.v[h.n++] = res;
    /* Bounded: the oldest records go first. */
    if (h.n > KS_HISTORY_MAX_RECORDS) {
        drop = h.n - KS_HISTORY_MAX_RECORDS;
        for (size_t i = 0; i < drop; i++)
            record_done(&h.v[i]);
        memmove(h.v, h.v + drop, (h.n - drop) * sizeof(*h.v));
        h.n -= drop;
    }
    r = ks_history_format(&h, &text);
    if (r >= 0)
        r = ks_mkdir_p(root, "var/lib/kswap", 0755);
    if (r >= 0)
        r = ks_write_atomic(root, KS_HISTORY_PATH, text, strlen(text), 0644);
    if (r < 0) {
        if (ret_warning) {
            free(warning);
            warning = ks_asprintf("cannot write the swap history '/%s': %s; this swap is not "
                                  "in it",
                                  KS_HISTORY_PATH, strerror(-r));
            *ret_warning = TAKE_PTR(warning);
        }
        return r;
    }
    r = 1;
out:
    if (ret_warning && warning)
        *ret_warning = TAKE_PTR(warning);
    return r;
}

int ks_history_note_finding(const ks_root *root, const ks_journal *j, ks_findings *f)
{
    _cleanup_free_ char *warning = NULL;
    int r = ks_history_note(root, j, &warning);

    if (r == -ENOMEM)
        return r;
    if (!warning)
        return 0;
    if (r < 0)
        return ks_findings_add(f, "history.unwritable", KS_SEV_WARN,
                               "make /var/lib/kswap writable for root; the swap itself is not "
                               "affected",
                               "%s", warning);
    return ks_findings_add(f, "history.damaged", KS_SEV_WARN,
                           "read the damaged file and remove it once nothing in it is needed", "%s",
                           warning);
}
