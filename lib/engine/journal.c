/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>

#include "checks/snapshot.h"
#include "lib/basic/base64.h"
#include "lib/basic/fileio.h"
#include "lib/basic/json-util.h"
#include "lib/basic/string-table.h"
#include "lib/basic/time-util.h"
#include "lib/basic/transaction.h"
#include "lib/engine/journal.h"

struct ks_journal {
    const ks_root *root; /* NULL for a parsed journal: it cannot be saved */
    time_t (*now)(void);
    /* Called after every save (lib/engine/metrics-file.h); kept across ks_journal_reset(). */
    ks_journal_saved_fn on_save;
    void *on_save_data;
    void (*on_save_free)(void *data);
    /* Reboots kswap asked for, over the journal's whole life: kept across ks_journal_reset(). */
    uint64_t reboots_requested;

    ks_state state;
    ks_outcome outcome;
    char *outcome_at;
    char *fields[_KS_JF_MAX];

    char *armed_boot_id;
    uint64_t armed_btime;
    char *armed_at;

    /* The reboot guard: the trial (by its arming boot) whose one reboot is spent. */
    char *guard_trial_boot_id;
    char *guard_boot_id;
    char *guard_at;

    bool has_snapshot;
    ks_snapshot snapshot;
    ks_run_snapshot *running; /* what ran when the trial was armed (checks/snapshot.h) */
    ks_tcp_effect tcp;        /* the node's TCP health at arming, pin, report --record */

    ks_journal_step *steps;
    size_t n_steps;
    ks_journal_change *changes;
    size_t n_changes;

    char *swap_id; /* 32 hex digits, made with "created"; NULL in journals of older kswap */
    char *created;
    char *updated;
};

static const char *const ks_step_status_table[_KS_STEP_STATUS_MAX] = {
    [KS_STEP_STARTED] = "started",
    [KS_STEP_DONE] = "done",
    [KS_STEP_FAILED] = "failed",
    [KS_STEP_SKIPPED] = "skipped",
};

static const char *const ks_change_kind_table[_KS_CHANGE_KIND_MAX] = {
    [KS_CHANGE_FILE] = "file",
    [KS_CHANGE_PACKAGE] = "package",
};

static const char *const ks_journal_field_table[_KS_JF_MAX] = {
    [KS_JF_OLD_KERNEL] = "old_kernel",
    [KS_JF_NEW_KERNEL] = "new_kernel",
    [KS_JF_OLD_PATH] = "old_path",
    [KS_JF_NEW_PATH] = "new_path",
    [KS_JF_OLD_TITLE_PATH] = "old_title_path",
    [KS_JF_NEW_TITLE_PATH] = "new_title_path",
    [KS_JF_REASON] = "reason",
    [KS_JF_SOURCE] = "source",
};

DEFINE_STRING_TABLE_LOOKUP(ks_step_status, ks_step_status);
DEFINE_STRING_TABLE_LOOKUP(ks_change_kind, ks_change_kind);
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_journal_field, ks_journal_field);

/* ---- time ---- */

static time_t journal_now(const ks_journal *j)
{
    return j->now ? j->now() : time(NULL);
}

static char *now_string(const ks_journal *j)
{
    char buf[KS_UTC_MAX];
    return strdup(ks_format_utc(journal_now(j), buf));
}

/* Replaces *dst with a copy of src (NULL clears). */
static int set_str(char **dst, const char *src)
{
    char *c = NULL;

    if (src) {
        c = strdup(src);
        if (!c)
            return -ENOMEM;
    }
    free(*dst);
    *dst = c;
    return 0;
}

static int stamp(const ks_journal *j, char **dst)
{
    char *c = now_string(j);
    if (!c)
        return -ENOMEM;
    free(*dst);
    *dst = c;
    return 0;
}

/* ---- life cycle ---- */

static void step_done(ks_journal_step *s)
{
    free(s->name);
    free(s->started);
    free(s->finished);
    free(s->detail);
}

static void change_done(ks_journal_change *c)
{
    free(c->name);
    free(c->version);
    free(c->previous);
    free(c->at);
}

static void journal_clear(ks_journal *j)
{
    free(j->outcome_at);
    for (int i = 0; i < _KS_JF_MAX; i++)
        free(j->fields[i]);
    free(j->armed_boot_id);
    free(j->armed_at);
    free(j->guard_trial_boot_id);
    free(j->guard_boot_id);
    free(j->guard_at);
    ks_snapshot_done(&j->snapshot);
    if (j->running)
        ks_run_snapshot_done(j->running);
    free(j->running);
    ks_tcp_effect_done(&j->tcp);
    for (size_t i = 0; i < j->n_steps; i++)
        step_done(&j->steps[i]);
    free(j->steps);
    for (size_t i = 0; i < j->n_changes; i++)
        change_done(&j->changes[i]);
    free(j->changes);
    free(j->swap_id);
    free(j->created);
    free(j->updated);
    *j = (ks_journal){.root = j->root,
                      .now = j->now,
                      .on_save = j->on_save,
                      .on_save_data = j->on_save_data,
                      .on_save_free = j->on_save_free,
                      .reboots_requested = j->reboots_requested};
}

ks_journal *ks_journal_free(ks_journal *j)
{
    if (!j)
        return NULL;
    journal_clear(j);
    if (j->on_save_free)
        j->on_save_free(j->on_save_data);
    free(j);
    return NULL;
}

/* A reset is a change of state too: to idle, from a swap that ended (lib/engine/states.h). */
static int check_reset(const ks_journal *j)
{
    bool legal = ks_state_transition_ok(j->state, KS_STATE_IDLE, NULL);

    assert(legal);
    return legal ? 0 : -EINVAL;
}

int ks_journal_reset(ks_journal *j)
{
    int r = check_reset(j);

    if (r < 0)
        return r;
    journal_clear(j);
    return 0;
}

int ks_journal_reset_keep_changes(ks_journal *j)
{
    ks_journal_change *changes = j->changes;
    size_t n = j->n_changes;
    int r = check_reset(j);

    if (r < 0)
        return r;
    j->changes = NULL;
    j->n_changes = 0;
    journal_clear(j);
    j->changes = changes;
    j->n_changes = n;
    return 0;
}

int ks_journal_restart(ks_journal *j)
{
    char *swap_id, *created;
    int r = check_reset(j);

    if (r < 0)
        return r;
    swap_id = TAKE_PTR(j->swap_id);
    created = TAKE_PTR(j->created);
    (void)ks_journal_reset_keep_changes(j);
    j->swap_id = swap_id;
    j->created = created;
    return 0;
}

void ks_journal_set_clock(ks_journal *j, time_t (*now)(void))
{
    j->now = now;
}

void ks_journal_on_save(ks_journal *j, ks_journal_saved_fn fn, void *data, void (*free_fn)(void *))
{
    assert(j);
    if (j->on_save_free)
        j->on_save_free(j->on_save_data);
    j->on_save = fn;
    j->on_save_data = data;
    j->on_save_free = free_fn;
}

void *ks_journal_on_save_data(const ks_journal *j, ks_journal_saved_fn fn)
{
    return j && j->on_save == fn ? j->on_save_data : NULL;
}

int ks_journal_new(const ks_root *root, ks_journal **ret)
{
    ks_journal *j = calloc(1, sizeof(*j));

    if (!j)
        return -ENOMEM;
    j->root = root;
    *ret = j;
    return 0;
}

/* ---- JSON out ---- */

static json_object *snapshot_to_json(ks_json_builder *b, const ks_snapshot *s)
{
    json_object *o = ks_jb_object(b), *a = ks_jb_array(b);

    ks_jb_add(b, o, "taken_at", ks_jb_string(b, s->taken_at));
    ks_jb_add(b, o, "kernel", ks_jb_string(b, s->kernel));
    ks_jb_add(b, o, "boot_id", ks_jb_string(b, s->boot_id));
    ks_jb_add(b, o, "btime", ks_jb_int(b, (int64_t)s->btime));
    ks_jb_add(b, o, "grubenv", s->has_grubenv ? ks_jb_base64(b, s->grubenv, s->grubenv_len) : NULL);
    ks_jb_add(b, o, "dropin", ks_jb_string(b, s->dropin));
    for (size_t i = 0; i < s->n_sysctls; i++) {
        json_object *x = ks_jb_object(b);
        ks_jb_add(b, x, "name", ks_jb_string(b, s->sysctls[i].name));
        ks_jb_add(b, x, "value", ks_jb_string(b, s->sysctls[i].value));
        ks_jb_push(b, a, x);
    }
    ks_jb_add(b, o, "sysctls", a);
    return o;
}

json_object *ks_journal_to_json(const ks_journal *j)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *steps = ks_jb_array(&b), *changes = ks_jb_array(&b),
                *guard = NULL;

    ks_jb_add(&b, o, "version", ks_jb_int(&b, KS_JOURNAL_VERSION));
    ks_jb_add(&b, o, "state", ks_jb_string(&b, ks_state_to_string(j->state)));
    ks_jb_add(&b, o, "outcome", ks_jb_string(&b, ks_outcome_to_string(j->outcome)));
    ks_jb_add(&b, o, "outcome_at", ks_jb_string(&b, j->outcome_at));
    for (int i = 0; i < _KS_JF_MAX; i++)
        ks_jb_add(&b, o, ks_journal_field_table[i], ks_jb_string(&b, j->fields[i]));
    ks_jb_add(&b, o, "armed_boot_id", ks_jb_string(&b, j->armed_boot_id));
    ks_jb_add(&b, o, "armed_btime",
              j->armed_boot_id ? ks_jb_int(&b, (int64_t)j->armed_btime) : NULL);
    ks_jb_add(&b, o, "armed_at", ks_jb_string(&b, j->armed_at));
    if (j->guard_trial_boot_id) {
        guard = ks_jb_object(&b);
        ks_jb_add(&b, guard, "trial_boot_id", ks_jb_string(&b, j->guard_trial_boot_id));
        ks_jb_add(&b, guard, "boot_id", ks_jb_string(&b, j->guard_boot_id));
        ks_jb_add(&b, guard, "at", ks_jb_string(&b, j->guard_at));
    }
    ks_jb_add(&b, o, "reboot_guard", guard);
    ks_jb_add(&b, o, "snapshot", j->has_snapshot ? snapshot_to_json(&b, &j->snapshot) : NULL);
    if (j->running) {
        json_object *r = ks_run_snapshot_to_json(j->running);
        b.failed = b.failed || !r;
        ks_jb_add(&b, o, "running", r);
    }
    /* Only once a swap has one: journals without it read the same as before. */
    if (!ks_tcp_effect_is_empty(&j->tcp))
        ks_jb_add(&b, o, "tcp", ks_jb_part(&b, ks_tcp_effect_to_json(&j->tcp)));
    for (size_t i = 0; i < j->n_steps; i++) {
        const ks_journal_step *s = &j->steps[i];
        json_object *x = ks_jb_object(&b);
        ks_jb_add(&b, x, "name", ks_jb_string(&b, s->name));
        ks_jb_add(&b, x, "status", ks_jb_string(&b, ks_step_status_to_string(s->status)));
        ks_jb_add(&b, x, "started", ks_jb_string(&b, s->started));
        ks_jb_add(&b, x, "finished", ks_jb_string(&b, s->finished));
        ks_jb_add(&b, x, "detail", ks_jb_string(&b, s->detail));
        ks_jb_add(&b, x, "attempts", ks_jb_int(&b, s->attempts));
        ks_jb_push(&b, steps, x);
    }
    ks_jb_add(&b, o, "steps", steps);
    for (size_t i = 0; i < j->n_changes; i++) {
        const ks_journal_change *c = &j->changes[i];
        json_object *x = ks_jb_object(&b);
        ks_jb_add(&b, x, "kind", ks_jb_string(&b, ks_change_kind_to_string(c->kind)));
        if (c->kind == KS_CHANGE_FILE) {
            ks_jb_add(&b, x, "path", ks_jb_string(&b, c->name));
            ks_jb_add(&b, x, "existed", ks_jb_bool(&b, c->existed));
            ks_jb_add(&b, x, "previous",
                      c->existed ? ks_jb_base64(&b, c->previous, c->previous_len) : NULL);
            ks_jb_add(&b, x, "mode", c->existed ? ks_jb_int(&b, c->mode & 07777) : NULL);
        } else {
            ks_jb_add(&b, x, "name", ks_jb_string(&b, c->name));
            ks_jb_add(&b, x, "version", ks_jb_string(&b, c->version));
        }
        ks_jb_add(&b, x, "at", ks_jb_string(&b, c->at));
        ks_jb_push(&b, changes, x);
    }
    ks_jb_add(&b, o, "changes", changes);
    ks_jb_add(&b, o, "reboots_requested", ks_jb_int(&b, (int64_t)j->reboots_requested));
    ks_jb_add(&b, o, "swap_id", ks_jb_string(&b, j->swap_id));
    ks_jb_add(&b, o, "created", ks_jb_string(&b, j->created));
    ks_jb_add(&b, o, "updated", ks_jb_string(&b, j->updated));
    return ks_jb_finish(&b, o);
}

int ks_journal_format(const ks_journal *j, char **ret)
{
    json_object *o = ks_journal_to_json(j);
    const char *s;
    char *text;

    if (!o)
        return -ENOMEM;
    s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                              JSON_C_TO_STRING_NOSLASHESCAPE);
    text = s ? ks_asprintf("%s\n", s) : NULL;
    json_object_put(o);
    if (!text)
        return -ENOMEM;
    *ret = text;
    return 0;
}

int ks_journal_save(ks_journal *j)
{
    _cleanup_free_ char *text = NULL;
    char *old_updated;
    int r;

    if (!j->root)
        return -EBADF;
    if (!j->created) {
        /* A new swap: its identity for the history, which the stamp (1 s) cannot be. */
        char id[KS_ID128_STRING_MAX];
        r = j->swap_id ? 0 : ks_id128_random(id);
        if (r >= 0 && !j->swap_id)
            r = set_str(&j->swap_id, id);
        if (r >= 0)
            r = stamp(j, &j->created);
        if (r < 0)
            return r;
    }
    old_updated = j->updated;
    j->updated = now_string(j);
    if (!j->updated) {
        j->updated = old_updated;
        return -ENOMEM;
    }
    free(old_updated);
    r = ks_journal_format(j, &text);
    if (r < 0)
        return r;
    r = ks_write_atomic(j->root, KS_JOURNAL_PATH, text, strlen(text), 0644);
    if (r < 0)
        return r;
    /* What is on disk now is what the observer sees; it cannot fail the save. */
    if (j->on_save)
        j->on_save(j, j->on_save_data);
    return 0;
}

/* ---- JSON in ---- */

static int get_u64(ks_json_reader *p, json_object *o, const char *ctx, const char *key,
                   bool *present, uint64_t *dst)
{
    json_object *v = NULL;
    int64_t x;

    if (present)
        *present = false;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return ks_json_reader_fail(p, -EBADMSG, "%s'%s' is not an integer", ctx, key);
    errno = 0;
    x = json_object_get_int64(v);
    if (x < 0 || errno != 0)
        return ks_json_reader_fail(p, -EBADMSG, "%s'%s' is out of range", ctx, key);
    *dst = (uint64_t)x;
    if (present)
        *present = true;
    return 0;
}

static int get_bytes(ks_json_reader *p, json_object *o, const char *ctx, const char *key,
                     bool *present, unsigned char **dst, size_t *dst_len)
{
    _cleanup_free_ char *s = NULL;
    int r;

    *present = false;
    r = ks_json_reader_string(p, o, ctx, key, false, &s);
    if (r < 0 || !s)
        return r;
    r = ks_base64_decode(s, strlen(s), dst, dst_len);
    if (r == -ENOMEM)
        p->oom = true;
    if (r < 0)
        return r == -ENOMEM ? r : ks_json_reader_fail(p, r, "%s'%s' is not base64", ctx, key);
    *present = true;
    return 0;
}

static int get_container(ks_json_reader *p, json_object *o, const char *ctx, const char *key,
                         json_type type, json_object **ret)
{
    json_object *v = NULL;

    *ret = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, type))
        return ks_json_reader_fail(p, -EBADMSG, "%s'%s' is not an %s", ctx, key,
                                   type == json_type_array ? "array" : "object");
    *ret = v;
    return 0;
}

static int parse_snapshot(ks_json_reader *p, json_object *o, ks_snapshot *s)
{
    static const char ctx[] = "snapshot: ";
    json_object *a;
    uint64_t btime = 0;
    int r;

    if ((r = ks_json_reader_string(p, o, ctx, "taken_at", false, &s->taken_at)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "kernel", false, &s->kernel)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "boot_id", false, &s->boot_id)) < 0 ||
        (r = get_u64(p, o, ctx, "btime", NULL, &btime)) < 0 ||
        (r = get_bytes(p, o, ctx, "grubenv", &s->has_grubenv, &s->grubenv, &s->grubenv_len)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "dropin", false, &s->dropin)) < 0 ||
        (r = get_container(p, o, ctx, "sysctls", json_type_array, &a)) < 0)
        return r;
    s->btime = btime;
    if (!a)
        return 0;
    s->sysctls = calloc(json_object_array_length(a) + 1, sizeof(*s->sysctls));
    if (!s->sysctls) {
        p->oom = true;
        return -ENOMEM;
    }
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *x = json_object_array_get_idx(a, i);
        ks_snapshot_sysctl *y = &s->sysctls[s->n_sysctls];
        if (!json_object_is_type(x, json_type_object))
            return ks_json_reader_fail(p, -EBADMSG, "snapshot: sysctls[%zu] is not an object", i);
        s->n_sysctls++;
        if ((r = ks_json_reader_string(p, x, "snapshot: sysctls[]: ", "name", true, &y->name)) <
                0 ||
            (r = ks_json_reader_string(p, x, "snapshot: sysctls[]: ", "value", false, &y->value)) <
                0)
            return r;
    }
    return 0;
}

static int cmp_step_name(const void *a, const void *b)
{
    return strcmp(((const ks_journal_step *)a)->name, ((const ks_journal_step *)b)->name);
}

static int parse_steps(ks_json_reader *p, ks_journal *j, json_object *a)
{
    size_t dup = 0;
    int r;

    if (!a)
        return 0;
    j->steps = calloc(json_object_array_length(a) + 1, sizeof(*j->steps));
    if (!j->steps) {
        p->oom = true;
        return -ENOMEM;
    }
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *x = json_object_array_get_idx(a, i);
        ks_journal_step *s = &j->steps[j->n_steps];
        _cleanup_free_ char *status = NULL;
        uint64_t attempts = 1;
        char ctx[48];

        snprintf(ctx, sizeof(ctx), "steps[%zu]: ", i);
        if (!json_object_is_type(x, json_type_object))
            return ks_json_reader_fail(p, -EBADMSG, "steps[%zu] is not an object", i);
        j->n_steps++;
        if ((r = ks_json_reader_string(p, x, ctx, "name", true, &s->name)) < 0 ||
            (r = ks_json_reader_string(p, x, ctx, "status", true, &status)) < 0 ||
            (r = ks_json_reader_string(p, x, ctx, "started", false, &s->started)) < 0 ||
            (r = ks_json_reader_string(p, x, ctx, "finished", false, &s->finished)) < 0 ||
            (r = ks_json_reader_string(p, x, ctx, "detail", false, &s->detail)) < 0 ||
            (r = get_u64(p, x, ctx, "attempts", NULL, &attempts)) < 0)
            return r;
        s->status = ks_step_status_from_string(status);
        if (s->status < 0)
            return ks_json_reader_fail(p, -EBADMSG, "%s'status': unknown value '%s'", ctx, status);
        if (attempts > UINT32_MAX)
            return ks_json_reader_fail(p, -EBADMSG, "%s'attempts' is out of range", ctx);
        s->attempts = (unsigned)attempts;
    }
    r = ks_find_duplicate(j->steps, j->n_steps, sizeof(*j->steps), cmp_step_name, &dup, NULL);
    if (r < 0) {
        p->oom = true;
        return r;
    }
    if (r > 0)
        return ks_json_reader_fail(p, -EBADMSG, "steps[%zu]: step '%s' appears twice", dup,
                                   j->steps[dup].name);
    return 0;
}

static int cmp_change(const void *a, const void *b)
{
    const ks_journal_change *x = a, *y = b;

    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int parse_changes(ks_json_reader *p, ks_journal *j, json_object *a)
{
    size_t dup = 0;
    int r;

    if (!a)
        return 0;
    j->changes = calloc(json_object_array_length(a) + 1, sizeof(*j->changes));
    if (!j->changes) {
        p->oom = true;
        return -ENOMEM;
    }
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *x = json_object_array_get_idx(a, i), *v = NULL;
        ks_journal_change *c = &j->changes[j->n_changes];
        _cleanup_free_ char *kind = NULL;
        bool has_prev = false, has_mode = false;
        uint64_t mode = 0;
        char ctx[48];

        snprintf(ctx, sizeof(ctx), "changes[%zu]: ", i);
        if (!json_object_is_type(x, json_type_object))
            return ks_json_reader_fail(p, -EBADMSG, "changes[%zu] is not an object", i);
        j->n_changes++;
        if ((r = ks_json_reader_string(p, x, ctx, "kind", true, &kind)) < 0 ||
            (r = ks_json_reader_string(p, x, ctx, "at", false, &c->at)) < 0)
            return r;
        c->kind = ks_change_kind_from_string(kind);
        if (c->kind == KS_CHANGE_PACKAGE) {
            if ((r = ks_json_reader_string(p, x, ctx, "name", true, &c->name)) < 0 ||
                (r = ks_json_reader_string(p, x, ctx, "version", false, &c->version)) < 0)
                return r;
        } else if (c->kind == KS_CHANGE_FILE) {
            if ((r = ks_json_reader_string(p, x, ctx, "path", true, &c->name)) < 0 ||
                (r = get_bytes(p, x, ctx, "previous", &has_prev, &c->previous, &c->previous_len)) <
                    0 ||
                (r = get_u64(p, x, ctx, "mode", &has_mode, &mode)) < 0)
                return r;
            if (!json_object_object_get_ex(x, "existed", &v) ||
                !json_object_is_type(v, json_type_boolean))
                return ks_json_reader_fail(p, -EBADMSG, "%s'existed' is missing or not a boolean",
                                           ctx);
            c->existed = json_object_get_boolean(v);
            if (c->existed != has_prev || c->existed != has_mode)
                return ks_json_reader_fail(p, -EBADMSG,
                                           "%s'previous' and 'mode' must be given exactly when "
                                           "'existed' is true",
                                           ctx);
            if (mode > 07777)
                return ks_json_reader_fail(p, -EBADMSG, "%s'mode' is out of range", ctx);
            c->mode = (mode_t)mode;
        } else {
            return ks_json_reader_fail(p, -EBADMSG, "%s'kind': unknown value '%s'", ctx, kind);
        }
    }
    r = ks_find_duplicate(j->changes, j->n_changes, sizeof(*j->changes), cmp_change, &dup, NULL);
    if (r < 0) {
        p->oom = true;
        return r;
    }
    if (r > 0)
        return ks_json_reader_fail(p, -EBADMSG, "changes[%zu]: '%s' appears twice", dup,
                                   j->changes[dup].name);
    return 0;
}

/* The lists of "running" within what kswap keeps (their parser grows them one by one). */
static int check_running_size(ks_json_reader *p, json_object *running)
{
    static const char *const lists[] = {"items", "skipped"};

    for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
        json_object *a = NULL;
        if (json_object_object_get_ex(running, lists[i], &a) &&
            json_object_is_type(a, json_type_array) &&
            json_object_array_length(a) > KS_JOURNAL_MAX_RUNNING_ITEMS)
            return ks_json_reader_fail(
                p, -EBADMSG, "'running': '%s' holds %zu entries, more than the %u kswap keeps",
                lists[i], json_object_array_length(a), KS_JOURNAL_MAX_RUNNING_ITEMS);
    }
    return 0;
}

static int parse_object(ks_json_reader *p, ks_journal *j, json_object *o)
{
    _cleanup_free_ char *state = NULL, *outcome = NULL;
    json_object *v = NULL, *a;
    bool has_btime;
    int64_t version;
    int r;

    if (!json_object_is_type(o, json_type_object))
        return ks_json_reader_fail(p, -EBADMSG, "not a JSON object");
    if (!json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int))
        return ks_json_reader_fail(p, -EBADMSG, "'version' is missing or not an integer");
    version = json_object_get_int64(v);
    if (version != KS_JOURNAL_VERSION)
        return ks_json_reader_fail(p, -EPROTONOSUPPORT,
                                   "version %" PRId64 " is not supported (this kswap "
                                   "knows version %d)",
                                   version, KS_JOURNAL_VERSION);

    if ((r = ks_json_reader_string(p, o, "", "state", true, &state)) < 0)
        return r;
    j->state = ks_state_from_string(state);
    if (j->state < 0)
        return ks_json_reader_fail(p, -EBADMSG, "'state': unknown value '%s'", state);
    if ((r = ks_json_reader_string(p, o, "", "outcome", false, &outcome)) < 0)
        return r;
    j->outcome = KS_OUTCOME_NONE;
    if (outcome) {
        j->outcome = ks_outcome_from_string(outcome);
        if (j->outcome < 0)
            return ks_json_reader_fail(p, -EBADMSG, "'outcome': unknown value '%s'", outcome);
    }
    if ((r = ks_json_reader_string(p, o, "", "outcome_at", false, &j->outcome_at)) < 0)
        return r;
    for (int i = 0; i < _KS_JF_MAX; i++)
        if ((r = ks_json_reader_string(p, o, "", ks_journal_field_table[i], false, &j->fields[i])) <
            0)
            return r;
    if ((r = ks_json_reader_string(p, o, "", "armed_boot_id", false, &j->armed_boot_id)) < 0 ||
        (r = get_u64(p, o, "", "armed_btime", &has_btime, &j->armed_btime)) < 0 ||
        (r = ks_json_reader_string(p, o, "", "armed_at", false, &j->armed_at)) < 0)
        return r;
    if (!j->armed_boot_id != !has_btime)
        return ks_json_reader_fail(p, -EBADMSG,
                                   "'armed_boot_id' and 'armed_btime' must be given together");

    if ((r = get_container(p, o, "", "reboot_guard", json_type_object, &v)) < 0)
        return r;
    if (v && ((r = ks_json_reader_string(p, v, "reboot_guard: ", "trial_boot_id", true,
                                         &j->guard_trial_boot_id)) < 0 ||
              (r = ks_json_reader_string(p, v, "reboot_guard: ", "boot_id", false,
                                         &j->guard_boot_id)) < 0 ||
              (r = ks_json_reader_string(p, v, "reboot_guard: ", "at", false, &j->guard_at)) < 0))
        return r;

    if ((r = get_container(p, o, "", "snapshot", json_type_object, &v)) < 0)
        return r;
    if (v) {
        j->has_snapshot = true;
        r = parse_snapshot(p, v, &j->snapshot);
        if (r < 0)
            return r;
    }
    if ((r = get_container(p, o, "", "running", json_type_object, &v)) < 0)
        return r;
    if (v && (r = check_running_size(p, v)) < 0)
        return r;
    if (v) {
        j->running = calloc(1, sizeof(*j->running));
        if (!j->running)
            return -ENOMEM;
        r = ks_run_snapshot_from_json(v, j->running);
        if (r < 0) {
            free(j->running);
            j->running = NULL;
            return r == -ENOMEM ? r
                                : ks_json_reader_fail(p, -EBADMSG,
                                                      "'running' is not a snapshot of what runs");
        }
    }
    if ((r = get_container(p, o, "", "tcp", json_type_object, &v)) < 0)
        return r;
    if (v) {
        _cleanup_free_ char *why = NULL;
        r = ks_tcp_effect_from_json(v, &j->tcp, &why);
        if (r < 0)
            return r == -ENOMEM ? r : ks_json_reader_fail(p, -EBADMSG, "tcp: %s", strempty(why));
    }
    if ((r = get_container(p, o, "", "steps", json_type_array, &a)) < 0 ||
        (r = parse_steps(p, j, a)) < 0)
        return r;
    if ((r = get_container(p, o, "", "changes", json_type_array, &a)) < 0 ||
        (r = parse_changes(p, j, a)) < 0)
        return r;
    /* Absent in journals of kswap before the counter: none counted then. */
    if ((r = get_u64(p, o, "", "reboots_requested", NULL, &j->reboots_requested)) < 0)
        return r;
    if ((r = ks_json_reader_string(p, o, "", "swap_id", false, &j->swap_id)) < 0)
        return r;
    /* Absent in journals of kswap before the id; then "created" stands for it (history.c). */
    if (j->swap_id && !ks_id128_is_valid(j->swap_id))
        return ks_json_reader_fail(p, -EBADMSG,
                                   "'swap_id' is not 32 lower-case hexadecimal digits");
    if ((r = ks_json_reader_string(p, o, "", "created", false, &j->created)) < 0 ||
        (r = ks_json_reader_string(p, o, "", "updated", false, &j->updated)) < 0)
        return r;
    return 0;
}

int ks_journal_parse(const char *text, size_t len, ks_journal **ret, char **ret_error)
{
    _cleanup_journal_ ks_journal *j = NULL;
    json_object *o = NULL;
    char *why = NULL;
    ks_json_reader p = {0};
    int r;

    r = ks_json_parse_document(text, len,
                               &(ks_json_limits){.bytes = KS_JOURNAL_MAX_SIZE,
                                                 .containers = KS_JOURNAL_MAX_CONTAINERS,
                                                 .values = KS_JOURNAL_MAX_VALUES},
                               &o, &why);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        r = ks_json_reader_fail(&p, -EBADMSG, "%s", why);
        free(why);
        goto fail;
    }
    r = ks_journal_new(NULL, &j);
    if (r < 0) {
        json_object_put(o);
        return r;
    }
    r = parse_object(&p, j, o);
    json_object_put(o);
    if (r < 0)
        goto fail;
    *ret = TAKE_PTR(j);
    return 0;

fail:
    return ks_json_reader_end(&p, r, ret_error);
}

int ks_journal_load(const ks_root *root, ks_journal **ret, char **ret_error)
{
    _cleanup_free_ char *text = NULL;
    ks_journal *j = NULL;
    size_t len = 0;
    int r;

    r = ks_root_read_file(root, KS_JOURNAL_PATH, KS_JOURNAL_MAX_SIZE, &text, &len);
    if (r == -ENOENT)
        return ks_journal_new(root, ret);
    if (r == -EFBIG) {
        if (ret_error)
            *ret_error = ks_asprintf("larger than %u bytes", KS_JOURNAL_MAX_SIZE);
        return -EBADMSG;
    }
    if (r < 0) {
        /* "is a FIFO, not a regular file" rather than what errno that stands for reads as */
        if (ret_error)
            *ret_error = strdup(ks_strerror(r));
        return r;
    }
    r = ks_journal_parse(text, len, &j, ret_error);
    if (r < 0)
        return r;
    j->root = root;
    *ret = j;
    return 0;
}

/* ---- fields ---- */

ks_state ks_journal_state(const ks_journal *j)
{
    return j->state;
}

int ks_journal_set_state(ks_journal *j, ks_state s)
{
    bool legal = ks_state_transition_ok(j->state, s, NULL);

    /* An illegal transition is a bug of kswap (lib/engine/states.h): loud in tests. */
    assert(legal || s < 0 || s >= _KS_STATE_MAX);
    if (!legal)
        return -EINVAL;
    j->state = s;
    return 0;
}

ks_outcome ks_journal_outcome(const ks_journal *j)
{
    return j->outcome;
}

int ks_journal_set_outcome(ks_journal *j, ks_outcome o)
{
    int r;

    if (o < 0 || o >= _KS_OUTCOME_MAX)
        return -EINVAL;
    if (o == KS_OUTCOME_NONE) {
        r = set_str(&j->outcome_at, NULL);
    } else {
        r = stamp(j, &j->outcome_at);
    }
    if (r < 0)
        return r;
    j->outcome = o;
    return 0;
}

const char *ks_journal_outcome_at(const ks_journal *j)
{
    return j->outcome_at;
}

const char *ks_journal_get(const ks_journal *j, ks_journal_field f)
{
    return f >= 0 && f < _KS_JF_MAX ? j->fields[f] : NULL;
}

int ks_journal_set(ks_journal *j, ks_journal_field f, const char *value)
{
    if (f < 0 || f >= _KS_JF_MAX)
        return -EINVAL;
    return set_str(&j->fields[f], value);
}

int ks_journal_set_armed(ks_journal *j, const char *boot_id, uint64_t btime)
{
    _cleanup_free_ char *id = NULL, *at = NULL;

    if (!boot_id || !*boot_id)
        return -EINVAL;
    id = strdup(boot_id);
    at = now_string(j);
    if (!id || !at)
        return -ENOMEM;
    free(j->armed_boot_id);
    free(j->armed_at);
    j->armed_boot_id = TAKE_PTR(id);
    j->armed_at = TAKE_PTR(at);
    j->armed_btime = btime;
    /* A new trial: the verdict and the spent reboot belonged to the earlier one. */
    j->outcome = KS_OUTCOME_NONE;
    set_str(&j->outcome_at, NULL);
    set_str(&j->guard_trial_boot_id, NULL);
    set_str(&j->guard_boot_id, NULL);
    set_str(&j->guard_at, NULL);
    return 0;
}

const char *ks_journal_armed_boot_id(const ks_journal *j)
{
    return j->armed_boot_id;
}

uint64_t ks_journal_armed_btime(const ks_journal *j)
{
    return j->armed_boot_id ? j->armed_btime : 0;
}

const char *ks_journal_armed_at(const ks_journal *j)
{
    return j->armed_at;
}

void ks_journal_count_reboot(ks_journal *j)
{
    /* The JSON integer is signed: stop at its largest value instead of wrapping. */
    if (j->reboots_requested < (uint64_t)INT64_MAX)
        j->reboots_requested++;
}

uint64_t ks_journal_reboots_requested(const ks_journal *j)
{
    return j->reboots_requested;
}

const char *ks_journal_updated(const ks_journal *j)
{
    return j->updated;
}

const char *ks_journal_created(const ks_journal *j)
{
    return j->created;
}

const char *ks_journal_swap_id(const ks_journal *j)
{
    return j->swap_id;
}

bool ks_journal_reboot_claimed(const ks_journal *j)
{
    return j->armed_boot_id && j->guard_trial_boot_id &&
           streq(j->guard_trial_boot_id, j->armed_boot_id);
}

int ks_journal_claim_reboot(ks_journal *j, const char *boot_id)
{
    _cleanup_free_ char *trial = NULL, *id = NULL, *at = NULL;

    if (!j->armed_boot_id)
        return -ENOENT;
    if (ks_journal_reboot_claimed(j))
        return -EALREADY;
    trial = strdup(j->armed_boot_id);
    id = boot_id ? strdup(boot_id) : NULL;
    at = now_string(j);
    if (!trial || (boot_id && !id) || !at)
        return -ENOMEM;
    free(j->guard_trial_boot_id);
    free(j->guard_boot_id);
    free(j->guard_at);
    j->guard_trial_boot_id = TAKE_PTR(trial);
    j->guard_boot_id = TAKE_PTR(id);
    j->guard_at = TAKE_PTR(at);
    /* On disk before the reboot: a crash after it must not allow a second one. */
    return ks_journal_save(j);
}

/* ---- steps ---- */

static ks_journal_step *step_find(const ks_journal *j, const char *name)
{
    for (size_t i = 0; i < j->n_steps; i++)
        if (streq(j->steps[i].name, name))
            return &j->steps[i];
    return NULL;
}

static int step_add(ks_journal *j, const char *name, ks_journal_step **ret)
{
    ks_journal_step *v = realloc(j->steps, (j->n_steps + 1) * sizeof(*v));
    char *n;

    if (!v)
        return -ENOMEM;
    j->steps = v;
    n = strdup(name);
    if (!n)
        return -ENOMEM;
    v[j->n_steps] = (ks_journal_step){.name = n};
    *ret = &v[j->n_steps++];
    return 0;
}

int ks_journal_step_begin(ks_journal *j, const char *name)
{
    _cleanup_free_ char *started = NULL;
    ks_journal_step *s;
    int r;

    if (!name || !*name)
        return -EINVAL;
    started = now_string(j);
    if (!started)
        return -ENOMEM;
    s = step_find(j, name);
    if (!s) {
        r = step_add(j, name, &s);
        if (r < 0)
            return r;
    }
    free(s->started);
    s->started = TAKE_PTR(started);
    set_str(&s->finished, NULL);
    set_str(&s->detail, NULL);
    s->status = KS_STEP_STARTED;
    s->attempts++;
    return ks_journal_save(j);
}

int ks_journal_step_end(ks_journal *j, const char *name, ks_step_status status, const char *detail)
{
    _cleanup_free_ char *finished = NULL, *d = NULL;
    ks_journal_step *s;
    int r;

    if (!name || !*name)
        return -EINVAL;
    if (status != KS_STEP_DONE && status != KS_STEP_FAILED && status != KS_STEP_SKIPPED)
        return -EINVAL;
    s = step_find(j, name);
    if (!s && status != KS_STEP_SKIPPED)
        return -ENOENT;
    finished = now_string(j);
    d = detail ? strdup(detail) : NULL;
    if (!finished || (detail && !d))
        return -ENOMEM;
    if (!s) {
        r = step_add(j, name, &s);
        if (r < 0)
            return r;
        s->started = strdup(finished);
        if (!s->started)
            return -ENOMEM;
    }
    free(s->finished);
    free(s->detail);
    s->finished = TAKE_PTR(finished);
    s->detail = TAKE_PTR(d);
    s->status = status;
    return ks_journal_save(j);
}

size_t ks_journal_n_steps(const ks_journal *j)
{
    return j->n_steps;
}

const ks_journal_step *ks_journal_step_get(const ks_journal *j, size_t i)
{
    return i < j->n_steps ? &j->steps[i] : NULL;
}

const ks_journal_step *ks_journal_step_find(const ks_journal *j, const char *name)
{
    return name ? step_find(j, name) : NULL;
}

/* ---- changes ---- */

static ks_journal_change *change_find(const ks_journal *j, ks_change_kind kind, const char *name)
{
    for (size_t i = 0; i < j->n_changes; i++)
        if (j->changes[i].kind == kind && streq(j->changes[i].name, name))
            return &j->changes[i];
    return NULL;
}

static int change_add(ks_journal *j, ks_journal_change *c)
{
    ks_journal_change *v = realloc(j->changes, (j->n_changes + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    j->changes = v;
    v[j->n_changes++] = *c;
    return 0;
}

int ks_journal_note_file(ks_journal *j, const char *path)
{
    _cleanup_free_ char *previous = NULL;
    ks_journal_change c = {.kind = KS_CHANGE_FILE};
    int r;

    assert(j);
    if (!path || !*path)
        return -EINVAL;
    if (!j->root)
        return -EBADF;
    /* The first record is the state before kswap; later writes change nothing to undo. */
    if (change_find(j, KS_CHANGE_FILE, path))
        return 0;
    /* The reader of old contents a file-change transaction uses; a symlink is not followed. */
    r = ks_file_read_old(j->root, path, KS_JOURNAL_MAX_PREVIOUS, true, &c.existed, &previous,
                         &c.previous_len, &c.mode);
    if (r < 0)
        return r;
    c.previous = (unsigned char *)TAKE_PTR(previous);
    c.name = strdup(path);
    c.at = now_string(j);
    if (!c.name || !c.at) {
        change_done(&c);
        return -ENOMEM;
    }
    r = change_add(j, &c);
    if (r < 0) {
        change_done(&c);
        return r;
    }
    return ks_journal_save(j);
}

int ks_journal_note_transaction(ks_journal *j, const ks_transaction *t)
{
    int r;

    assert(j);
    assert(t);
    for (size_t i = 0; i < t->n; i++) {
        r = ks_journal_note_file(j, t->v[i].path);
        if (r >= 0 && t->v[i].new_path)
            r = ks_journal_note_file(j, t->v[i].new_path);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_journal_note_package(ks_journal *j, const char *name, const char *version)
{
    ks_journal_change c = {.kind = KS_CHANGE_PACKAGE}, *old;
    int r;

    if (!name || !*name)
        return -EINVAL;
    old = change_find(j, KS_CHANGE_PACKAGE, name);
    if (old) {
        r = set_str(&old->version, version);
        if (r < 0)
            return r;
        return ks_journal_save(j);
    }
    c.name = strdup(name);
    c.version = version ? strdup(version) : NULL;
    c.at = now_string(j);
    if (!c.name || (version && !c.version) || !c.at) {
        change_done(&c);
        return -ENOMEM;
    }
    r = change_add(j, &c);
    if (r < 0) {
        change_done(&c);
        return r;
    }
    return ks_journal_save(j);
}

size_t ks_journal_n_changes(const ks_journal *j)
{
    return j->n_changes;
}

const ks_journal_change *ks_journal_change_get(const ks_journal *j, size_t i)
{
    return i < j->n_changes ? &j->changes[i] : NULL;
}

const ks_journal_change *ks_journal_change_find(const ks_journal *j, ks_change_kind kind,
                                                const char *name)
{
    return name ? change_find(j, kind, name) : NULL;
}

int ks_journal_forget_change(ks_journal *j, ks_change_kind kind, const char *name)
{
    ks_journal_change *c = name ? change_find(j, kind, name) : NULL;
    size_t i;

    if (!c)
        return -ENOENT;
    i = (size_t)(c - j->changes);
    change_done(c);
    memmove(&j->changes[i], &j->changes[i + 1], (j->n_changes - i - 1) * sizeof(*c));
    j->n_changes--;
    return ks_journal_save(j);
}

/* ---- snapshot ---- */

int ks_journal_take_snapshot(ks_journal *j, const char *grubenv_path, const char *dropin_path,
                             char *const *sysctls)
{
    ks_snapshot s;
    int r;

    assert(j);
    if (!j->root)
        return -EBADF;
    r = ks_snapshot_take(j->root, grubenv_path, dropin_path, sysctls, journal_now(j), &s);
    if (r < 0)
        return r;
    ks_snapshot_done(&j->snapshot);
    j->snapshot = s;
    j->has_snapshot = true;
    return 0;
}

const ks_run_snapshot *ks_journal_running(const ks_journal *j)
{
    return j->running;
}

/* Cuts a list to the first KS_JOURNAL_MAX_RUNNING_ITEMS entries; 1 when it was cut. */
static bool cut_list(char **l)
{
    size_t n = ks_strv_length(l);

    if (n <= KS_JOURNAL_MAX_RUNNING_ITEMS)
        return false;
    for (size_t i = KS_JOURNAL_MAX_RUNNING_ITEMS; i < n; i++)
        l[i] = (free(l[i]), NULL);
    return true;
}

void ks_journal_set_running(ks_journal *j, ks_run_snapshot *s)
{
    size_t n = s ? ks_strv_length(s->items) : 0;

    /* What the parser would refuse is never written: the first items, and a note of the rest. */
    if (s && cut_list(s->items)) {
        _cleanup_free_ char *note =
            ks_asprintf("%zu items beyond the %u kswap keeps: not checked",
                        n - KS_JOURNAL_MAX_RUNNING_ITEMS, KS_JOURNAL_MAX_RUNNING_ITEMS);
        (void)cut_list(s->skipped);
        if (note && ks_strv_length(s->skipped) < KS_JOURNAL_MAX_RUNNING_ITEMS)
            (void)ks_strv_extend(&s->skipped, note);
    }
    if (j->running)
        ks_run_snapshot_done(j->running);
    free(j->running);
    j->running = s;
}

const ks_snapshot *ks_journal_snapshot(const ks_journal *j)
{
    return j->has_snapshot ? &j->snapshot : NULL;
}

const ks_tcp_effect *ks_journal_tcp(const ks_journal *j)
{
    return &j->tcp;
}

int ks_journal_set_tcp(ks_journal *j, ks_tcp_slot slot, const ks_tcp_sample *s)
{
    return ks_tcp_effect_set(&j->tcp, slot, s);
}
