/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>

#include "lib/basic/fileio.h"
#include "lib/engine/journal.h"
#include "lib/host/kernels.h"
#include "lib/host/sysctl.h"

struct ks_journal {
    const ks_root *root; /* NULL for a parsed journal: it cannot be saved */
    time_t (*now)(void);

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

    ks_journal_step *steps;
    size_t n_steps;
    ks_journal_change *changes;
    size_t n_changes;

    char *created;
    char *updated;
};

static const char *const state_names[_KS_STATE_MAX] = {
    [KS_STATE_IDLE] = "idle",
    [KS_STATE_PREPARED] = "prepared",
    [KS_STATE_INSTALLED] = "installed",
    [KS_STATE_VERIFIED] = "verified",
    [KS_STATE_ARMED] = "armed",
    [KS_STATE_TRIAL_BOOTED] = "trial-booted",
    [KS_STATE_PINNED] = "pinned",
    [KS_STATE_FAILED] = "failed",
    [KS_STATE_ROLLED_BACK] = "rolled-back",
};

static const char *const outcome_names[_KS_OUTCOME_MAX] = {
    [KS_OUTCOME_NONE] = NULL,
    [KS_OUTCOME_TRIAL_OK] = "trial-ok",
    [KS_OUTCOME_HEALTH_FAILED] = "health-failed",
    [KS_OUTCOME_FELL_BACK] = "fell-back",
    [KS_OUTCOME_NO_REBOOT] = "no-reboot",
    [KS_OUTCOME_TRIAL_HUNG] = "trial-hung",
};

static const char *const step_status_names[_KS_STEP_STATUS_MAX] = {
    [KS_STEP_STARTED] = "started",
    [KS_STEP_DONE] = "done",
    [KS_STEP_FAILED] = "failed",
    [KS_STEP_SKIPPED] = "skipped",
};

static const char *const change_kind_names[_KS_CHANGE_KIND_MAX] = {
    [KS_CHANGE_FILE] = "file",
    [KS_CHANGE_PACKAGE] = "package",
};

static const char *const field_names[_KS_JF_MAX] = {
    [KS_JF_OLD_KERNEL] = "old_kernel",
    [KS_JF_NEW_KERNEL] = "new_kernel",
    [KS_JF_OLD_PATH] = "old_path",
    [KS_JF_NEW_PATH] = "new_path",
    [KS_JF_OLD_TITLE_PATH] = "old_title_path",
    [KS_JF_NEW_TITLE_PATH] = "new_title_path",
    [KS_JF_REASON] = "reason",
};

static int lookup(const char *const *names, int n, const char *s)
{
    if (!s)
        return -EINVAL;
    for (int i = 0; i < n; i++)
        if (names[i] && streq(names[i], s))
            return i;
    return -EINVAL;
}

const char *ks_state_to_string(ks_state s)
{
    return s >= 0 && s < _KS_STATE_MAX ? state_names[s] : NULL;
}

ks_state ks_state_from_string(const char *s)
{
    return (ks_state)lookup(state_names, _KS_STATE_MAX, s);
}

const char *ks_outcome_to_string(ks_outcome o)
{
    return o >= 0 && o < _KS_OUTCOME_MAX ? outcome_names[o] : NULL;
}

ks_outcome ks_outcome_from_string(const char *s)
{
    return (ks_outcome)lookup(outcome_names, _KS_OUTCOME_MAX, s);
}

const char *ks_step_status_to_string(ks_step_status s)
{
    return s >= 0 && s < _KS_STEP_STATUS_MAX ? step_status_names[s] : NULL;
}

ks_step_status ks_step_status_from_string(const char *s)
{
    return (ks_step_status)lookup(step_status_names, _KS_STEP_STATUS_MAX, s);
}

const char *ks_change_kind_to_string(ks_change_kind k)
{
    return k >= 0 && k < _KS_CHANGE_KIND_MAX ? change_kind_names[k] : NULL;
}

ks_change_kind ks_change_kind_from_string(const char *s)
{
    return (ks_change_kind)lookup(change_kind_names, _KS_CHANGE_KIND_MAX, s);
}

const char *ks_journal_field_to_string(ks_journal_field f)
{
    return f >= 0 && f < _KS_JF_MAX ? field_names[f] : NULL;
}

/* ---- base64 (RFC 4648, padded): grubenv and previous file contents are bytes ---- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64_encode(const unsigned char *p, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        *o++ = b64_alphabet[(v >> 18) & 63];
        *o++ = b64_alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
        *o++ = i + 2 < len ? b64_alphabet[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64_alphabet, c) : NULL;
    return p ? (int)(p - b64_alphabet) : -1;
}

static int base64_decode(const char *s, unsigned char **ret, size_t *ret_len)
{
    size_t n = strlen(s), len = 0;
    unsigned char *out;

    if (n % 4 != 0)
        return -EBADMSG;
    out = malloc(n / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i += 4) {
        int a = b64_value(s[i]), b = b64_value(s[i + 1]), c, d;
        bool last = i + 4 == n;
        /* Padding only at the very end, and only as "x=" or "=="-shaped tails. */
        c = last && s[i + 2] == '=' && s[i + 3] == '=' ? -2 : b64_value(s[i + 2]);
        d = last && s[i + 3] == '=' && c != -1 ? -2 : b64_value(s[i + 3]);
        if (a < 0 || b < 0 || c == -1 || d == -1) {
            free(out);
            return -EBADMSG;
        }
        out[len++] = (unsigned char)(a << 2 | b >> 4);
        if (c >= 0)
            out[len++] = (unsigned char)((b & 15) << 4 | c >> 2);
        if (c >= 0 && d >= 0)
            out[len++] = (unsigned char)((c & 3) << 6 | d);
    }
    *ret = out;
    *ret_len = len;
    return 0;
}

/* ---- time ---- */

char *ks_format_utc(time_t t, char buf[static 21])
{
    struct tm tm;

    if (!gmtime_r(&t, &tm) || strftime(buf, 21, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, 21, "1970-01-01T00:00:00Z");
    return buf;
}

static char *now_string(const ks_journal *j)
{
    char buf[21];
    return strdup(ks_format_utc(j->now ? j->now() : time(NULL), buf));
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

static void snapshot_done(ks_snapshot *s)
{
    free(s->taken_at);
    free(s->kernel);
    free(s->boot_id);
    free(s->grubenv);
    free(s->dropin);
    for (size_t i = 0; i < s->n_sysctls; i++) {
        free(s->sysctls[i].name);
        free(s->sysctls[i].value);
    }
    free(s->sysctls);
    *s = (ks_snapshot){0};
}

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
    snapshot_done(&j->snapshot);
    for (size_t i = 0; i < j->n_steps; i++)
        step_done(&j->steps[i]);
    free(j->steps);
    for (size_t i = 0; i < j->n_changes; i++)
        change_done(&j->changes[i]);
    free(j->changes);
    free(j->created);
    free(j->updated);
    *j = (ks_journal){.root = j->root, .now = j->now};
}

ks_journal *ks_journal_free(ks_journal *j)
{
    if (!j)
        return NULL;
    journal_clear(j);
    free(j);
    return NULL;
}

void ks_journal_reset(ks_journal *j)
{
    journal_clear(j);
}

void ks_journal_set_clock(ks_journal *j, time_t (*now)(void))
{
    j->now = now;
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

/* Builds objects without checking every call: one failure poisons the whole document. */
typedef struct jb {
    bool oom;
} jb;

static json_object *jstr(jb *b, const char *s)
{
    json_object *o;
    if (!s)
        return NULL;
    o = json_object_new_string(s);
    if (!o)
        b->oom = true;
    return o;
}

static json_object *jb64(jb *b, const unsigned char *p, size_t len)
{
    _cleanup_free_ char *s = base64_encode(p, len);
    if (!s) {
        b->oom = true;
        return NULL;
    }
    return jstr(b, s);
}

static json_object *jint(jb *b, int64_t v)
{
    json_object *o = json_object_new_int64(v);
    if (!o)
        b->oom = true;
    return o;
}

static json_object *jbool(jb *b, bool v)
{
    json_object *o = json_object_new_boolean(v);
    if (!o)
        b->oom = true;
    return o;
}

static json_object *jobj(jb *b)
{
    json_object *o = json_object_new_object();
    if (!o)
        b->oom = true;
    return o;
}

static json_object *jarr(jb *b)
{
    json_object *o = json_object_new_array();
    if (!o)
        b->oom = true;
    return o;
}

static void jadd(jb *b, json_object *o, const char *key, json_object *v)
{
    if (!o) {
        json_object_put(v);
        return;
    }
    if (json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        b->oom = true;
    }
}

static void jpush(jb *b, json_object *a, json_object *v)
{
    if (!a || !v || json_object_array_add(a, v) < 0) {
        json_object_put(v);
        b->oom = true;
    }
}

static json_object *snapshot_to_json(jb *b, const ks_snapshot *s)
{
    json_object *o = jobj(b), *a = jarr(b);

    jadd(b, o, "taken_at", jstr(b, s->taken_at));
    jadd(b, o, "kernel", jstr(b, s->kernel));
    jadd(b, o, "boot_id", jstr(b, s->boot_id));
    jadd(b, o, "btime", jint(b, (int64_t)s->btime));
    jadd(b, o, "grubenv", s->has_grubenv ? jb64(b, s->grubenv, s->grubenv_len) : NULL);
    jadd(b, o, "dropin", jstr(b, s->dropin));
    for (size_t i = 0; i < s->n_sysctls; i++) {
        json_object *x = jobj(b);
        jadd(b, x, "name", jstr(b, s->sysctls[i].name));
        jadd(b, x, "value", jstr(b, s->sysctls[i].value));
        jpush(b, a, x);
    }
    jadd(b, o, "sysctls", a);
    return o;
}

json_object *ks_journal_to_json(const ks_journal *j)
{
    jb b = {0};
    json_object *o = jobj(&b), *steps = jarr(&b), *changes = jarr(&b), *guard = NULL;

    jadd(&b, o, "version", jint(&b, KS_JOURNAL_VERSION));
    jadd(&b, o, "state", jstr(&b, ks_state_to_string(j->state)));
    jadd(&b, o, "outcome", jstr(&b, ks_outcome_to_string(j->outcome)));
    jadd(&b, o, "outcome_at", jstr(&b, j->outcome_at));
    for (int i = 0; i < _KS_JF_MAX; i++)
        jadd(&b, o, field_names[i], jstr(&b, j->fields[i]));
    jadd(&b, o, "armed_boot_id", jstr(&b, j->armed_boot_id));
    jadd(&b, o, "armed_btime", j->armed_boot_id ? jint(&b, (int64_t)j->armed_btime) : NULL);
    jadd(&b, o, "armed_at", jstr(&b, j->armed_at));
    if (j->guard_trial_boot_id) {
        guard = jobj(&b);
        jadd(&b, guard, "trial_boot_id", jstr(&b, j->guard_trial_boot_id));
        jadd(&b, guard, "boot_id", jstr(&b, j->guard_boot_id));
        jadd(&b, guard, "at", jstr(&b, j->guard_at));
    }
    jadd(&b, o, "reboot_guard", guard);
    jadd(&b, o, "snapshot", j->has_snapshot ? snapshot_to_json(&b, &j->snapshot) : NULL);
    for (size_t i = 0; i < j->n_steps; i++) {
        const ks_journal_step *s = &j->steps[i];
        json_object *x = jobj(&b);
        jadd(&b, x, "name", jstr(&b, s->name));
        jadd(&b, x, "status", jstr(&b, ks_step_status_to_string(s->status)));
        jadd(&b, x, "started", jstr(&b, s->started));
        jadd(&b, x, "finished", jstr(&b, s->finished));
        jadd(&b, x, "detail", jstr(&b, s->detail));
        jadd(&b, x, "attempts", jint(&b, s->attempts));
        jpush(&b, steps, x);
    }
    jadd(&b, o, "steps", steps);
    for (size_t i = 0; i < j->n_changes; i++) {
        const ks_journal_change *c = &j->changes[i];
        json_object *x = jobj(&b);
        jadd(&b, x, "kind", jstr(&b, ks_change_kind_to_string(c->kind)));
        if (c->kind == KS_CHANGE_FILE) {
            jadd(&b, x, "path", jstr(&b, c->name));
            jadd(&b, x, "existed", jbool(&b, c->existed));
            jadd(&b, x, "previous", c->existed ? jb64(&b, c->previous, c->previous_len) : NULL);
            jadd(&b, x, "mode", c->existed ? jint(&b, c->mode & 07777) : NULL);
        } else {
            jadd(&b, x, "name", jstr(&b, c->name));
            jadd(&b, x, "version", jstr(&b, c->version));
        }
        jadd(&b, x, "at", jstr(&b, c->at));
        jpush(&b, changes, x);
    }
    jadd(&b, o, "changes", changes);
    jadd(&b, o, "created", jstr(&b, j->created));
    jadd(&b, o, "updated", jstr(&b, j->updated));
    if (b.oom) {
        json_object_put(o);
        return NULL;
    }
    return o;
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
    int k;

    if (!j->root)
        return -EBADF;
    if (!j->created) {
        k = stamp(j, &j->created);
        if (k < 0)
            return k;
    }
    old_updated = j->updated;
    j->updated = now_string(j);
    if (!j->updated) {
        j->updated = old_updated;
        return -ENOMEM;
    }
    free(old_updated);
    k = ks_journal_format(j, &text);
    if (k < 0)
        return k;
    return ks_write_atomic(j->root, KS_JOURNAL_PATH, text, strlen(text), 0644);
}

/* ---- JSON in ---- */

typedef struct parser {
    char *error; /* first error, malloc'd */
    bool oom;
} parser;

static int perr(parser *p, int err, const char *fmt, ...) _printf_(3, 4);
static int perr(parser *p, int err, const char *fmt, ...)
{
    va_list ap;

    if (!p->error) {
        va_start(ap, fmt);
        if (vasprintf(&p->error, fmt, ap) < 0) {
            p->error = NULL;
            p->oom = true;
        }
        va_end(ap);
    }
    return err;
}

/* A string or null field; absent counts as null. */
static int get_str(parser *p, json_object *o, const char *ctx, const char *key, char **dst)
{
    json_object *v = NULL;

    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return perr(p, -EBADMSG, "%s'%s' is not a string", ctx, key);
    if (set_str(dst, json_object_get_string(v)) < 0) {
        p->oom = true;
        return -ENOMEM;
    }
    return 0;
}

static int get_required_str(parser *p, json_object *o, const char *ctx, const char *key, char **dst)
{
    int k = get_str(p, o, ctx, key, dst);
    if (k < 0)
        return k;
    if (!*dst)
        return perr(p, -EBADMSG, "%s'%s' is missing", ctx, key);
    return 0;
}

static int get_u64(parser *p, json_object *o, const char *ctx, const char *key, bool *present,
                   uint64_t *dst)
{
    json_object *v = NULL;
    int64_t x;

    if (present)
        *present = false;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return perr(p, -EBADMSG, "%s'%s' is not an integer", ctx, key);
    errno = 0;
    x = json_object_get_int64(v);
    if (x < 0 || errno != 0)
        return perr(p, -EBADMSG, "%s'%s' is out of range", ctx, key);
    *dst = (uint64_t)x;
    if (present)
        *present = true;
    return 0;
}

static int get_bytes(parser *p, json_object *o, const char *ctx, const char *key, bool *present,
                     unsigned char **dst, size_t *dst_len)
{
    _cleanup_free_ char *s = NULL;
    int k;

    *present = false;
    k = get_str(p, o, ctx, key, &s);
    if (k < 0 || !s)
        return k;
    k = base64_decode(s, dst, dst_len);
    if (k == -ENOMEM)
        p->oom = true;
    if (k < 0)
        return k == -ENOMEM ? k : perr(p, k, "%s'%s' is not base64", ctx, key);
    *present = true;
    return 0;
}

static int get_container(parser *p, json_object *o, const char *ctx, const char *key,
                         json_type type, json_object **ret)
{
    json_object *v = NULL;

    *ret = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, type))
        return perr(p, -EBADMSG, "%s'%s' is not an %s", ctx, key,
                    type == json_type_array ? "array" : "object");
    *ret = v;
    return 0;
}

static int parse_snapshot(parser *p, json_object *o, ks_snapshot *s)
{
    static const char ctx[] = "snapshot: ";
    json_object *a;
    uint64_t btime = 0;
    int k;

    if ((k = get_str(p, o, ctx, "taken_at", &s->taken_at)) < 0 ||
        (k = get_str(p, o, ctx, "kernel", &s->kernel)) < 0 ||
        (k = get_str(p, o, ctx, "boot_id", &s->boot_id)) < 0 ||
        (k = get_u64(p, o, ctx, "btime", NULL, &btime)) < 0 ||
        (k = get_bytes(p, o, ctx, "grubenv", &s->has_grubenv, &s->grubenv, &s->grubenv_len)) < 0 ||
        (k = get_str(p, o, ctx, "dropin", &s->dropin)) < 0 ||
        (k = get_container(p, o, ctx, "sysctls", json_type_array, &a)) < 0)
        return k;
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
            return perr(p, -EBADMSG, "snapshot: sysctls[%zu] is not an object", i);
        s->n_sysctls++;
        if ((k = get_required_str(p, x, "snapshot: sysctls[]: ", "name", &y->name)) < 0 ||
            (k = get_str(p, x, "snapshot: sysctls[]: ", "value", &y->value)) < 0)
            return k;
    }
    return 0;
}

static int parse_steps(parser *p, ks_journal *j, json_object *a)
{
    int k;

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
            return perr(p, -EBADMSG, "steps[%zu] is not an object", i);
        j->n_steps++;
        if ((k = get_required_str(p, x, ctx, "name", &s->name)) < 0 ||
            (k = get_required_str(p, x, ctx, "status", &status)) < 0 ||
            (k = get_str(p, x, ctx, "started", &s->started)) < 0 ||
            (k = get_str(p, x, ctx, "finished", &s->finished)) < 0 ||
            (k = get_str(p, x, ctx, "detail", &s->detail)) < 0 ||
            (k = get_u64(p, x, ctx, "attempts", NULL, &attempts)) < 0)
            return k;
        s->status = ks_step_status_from_string(status);
        if (s->status < 0)
            return perr(p, -EBADMSG, "%s'status': unknown value '%s'", ctx, status);
        if (attempts > UINT32_MAX)
            return perr(p, -EBADMSG, "%s'attempts' is out of range", ctx);
        s->attempts = (unsigned)attempts;
        for (size_t m = 0; m + 1 < j->n_steps; m++)
            if (streq(j->steps[m].name, s->name))
                return perr(p, -EBADMSG, "%sstep '%s' appears twice", ctx, s->name);
    }
    return 0;
}

static int parse_changes(parser *p, ks_journal *j, json_object *a)
{
    int k;

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
            return perr(p, -EBADMSG, "changes[%zu] is not an object", i);
        j->n_changes++;
        if ((k = get_required_str(p, x, ctx, "kind", &kind)) < 0 ||
            (k = get_str(p, x, ctx, "at", &c->at)) < 0)
            return k;
        c->kind = ks_change_kind_from_string(kind);
        if (c->kind == KS_CHANGE_PACKAGE) {
            if ((k = get_required_str(p, x, ctx, "name", &c->name)) < 0 ||
                (k = get_str(p, x, ctx, "version", &c->version)) < 0)
                return k;
        } else if (c->kind == KS_CHANGE_FILE) {
            if ((k = get_required_str(p, x, ctx, "path", &c->name)) < 0 ||
                (k = get_bytes(p, x, ctx, "previous", &has_prev, &c->previous, &c->previous_len)) <
                    0 ||
                (k = get_u64(p, x, ctx, "mode", &has_mode, &mode)) < 0)
                return k;
            if (!json_object_object_get_ex(x, "existed", &v) ||
                !json_object_is_type(v, json_type_boolean))
                return perr(p, -EBADMSG, "%s'existed' is missing or not a boolean", ctx);
            c->existed = json_object_get_boolean(v);
            if (c->existed != has_prev || c->existed != has_mode)
                return perr(p, -EBADMSG,
                            "%s'previous' and 'mode' must be given exactly when "
                            "'existed' is true",
                            ctx);
            if (mode > 07777)
                return perr(p, -EBADMSG, "%s'mode' is out of range", ctx);
            c->mode = (mode_t)mode;
        } else {
            return perr(p, -EBADMSG, "%s'kind': unknown value '%s'", ctx, kind);
        }
        for (size_t m = 0; m + 1 < j->n_changes; m++)
            if (j->changes[m].kind == c->kind && streq(j->changes[m].name, c->name))
                return perr(p, -EBADMSG, "%s'%s' appears twice", ctx, c->name);
    }
    return 0;
}

static int parse_object(parser *p, ks_journal *j, json_object *o)
{
    _cleanup_free_ char *state = NULL, *outcome = NULL;
    json_object *v = NULL, *a;
    bool has_btime;
    int64_t version;
    int k;

    if (!json_object_is_type(o, json_type_object))
        return perr(p, -EBADMSG, "not a JSON object");
    if (!json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int))
        return perr(p, -EBADMSG, "'version' is missing or not an integer");
    version = json_object_get_int64(v);
    if (version != KS_JOURNAL_VERSION)
        return perr(p, -EPROTONOSUPPORT,
                    "version %" PRId64 " is not supported (this kswap "
                    "knows version %d)",
                    version, KS_JOURNAL_VERSION);

    if ((k = get_required_str(p, o, "", "state", &state)) < 0)
        return k;
    j->state = ks_state_from_string(state);
    if (j->state < 0)
        return perr(p, -EBADMSG, "'state': unknown value '%s'", state);
    if ((k = get_str(p, o, "", "outcome", &outcome)) < 0)
        return k;
    j->outcome = KS_OUTCOME_NONE;
    if (outcome) {
        j->outcome = ks_outcome_from_string(outcome);
        if (j->outcome < 0)
            return perr(p, -EBADMSG, "'outcome': unknown value '%s'", outcome);
    }
    if ((k = get_str(p, o, "", "outcome_at", &j->outcome_at)) < 0)
        return k;
    for (int i = 0; i < _KS_JF_MAX; i++)
        if ((k = get_str(p, o, "", field_names[i], &j->fields[i])) < 0)
            return k;
    if ((k = get_str(p, o, "", "armed_boot_id", &j->armed_boot_id)) < 0 ||
        (k = get_u64(p, o, "", "armed_btime", &has_btime, &j->armed_btime)) < 0 ||
        (k = get_str(p, o, "", "armed_at", &j->armed_at)) < 0)
        return k;
    if (!j->armed_boot_id != !has_btime)
        return perr(p, -EBADMSG, "'armed_boot_id' and 'armed_btime' must be given together");

    if ((k = get_container(p, o, "", "reboot_guard", json_type_object, &v)) < 0)
        return k;
    if (v && ((k = get_required_str(p, v, "reboot_guard: ", "trial_boot_id",
                                    &j->guard_trial_boot_id)) < 0 ||
              (k = get_str(p, v, "reboot_guard: ", "boot_id", &j->guard_boot_id)) < 0 ||
              (k = get_str(p, v, "reboot_guard: ", "at", &j->guard_at)) < 0))
        return k;

    if ((k = get_container(p, o, "", "snapshot", json_type_object, &v)) < 0)
        return k;
    if (v) {
        j->has_snapshot = true;
        k = parse_snapshot(p, v, &j->snapshot);
        if (k < 0)
            return k;
    }
    if ((k = get_container(p, o, "", "steps", json_type_array, &a)) < 0 ||
        (k = parse_steps(p, j, a)) < 0)
        return k;
    if ((k = get_container(p, o, "", "changes", json_type_array, &a)) < 0 ||
        (k = parse_changes(p, j, a)) < 0)
        return k;
    if ((k = get_str(p, o, "", "created", &j->created)) < 0 ||
        (k = get_str(p, o, "", "updated", &j->updated)) < 0)
        return k;
    return 0;
}

static bool all_space(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)s[i]))
            return false;
    return true;
}

int ks_journal_parse(const char *text, size_t len, ks_journal **ret, char **ret_error)
{
    _cleanup_journal_ ks_journal *j = NULL;
    json_tokener *tok;
    json_object *o;
    parser p = {0};
    size_t end;
    int k;

    if (len > KS_JOURNAL_MAX_SIZE) {
        k = perr(&p, -EBADMSG, "larger than %u bytes", KS_JOURNAL_MAX_SIZE);
        goto fail;
    }
    /* json-c would stop at a NUL and report success on what came before. */
    if (memchr(text, '\0', len)) {
        k = perr(&p, -EBADMSG, "contains a NUL byte");
        goto fail;
    }
    tok = json_tokener_new();
    if (!tok)
        return -ENOMEM;
    o = json_tokener_parse_ex(tok, text, (int)len);
    if (!o) {
        enum json_tokener_error e = json_tokener_get_error(tok);
        if (e == json_tokener_success) /* the document "null" */
            k = perr(&p, -EBADMSG, "not a JSON object");
        else if (e == json_tokener_continue)
            k = perr(&p, -EBADMSG, "not valid JSON: unexpected end of input");
        else
            k = perr(&p, -EBADMSG, "not valid JSON at byte %zu: %s",
                     json_tokener_get_parse_end(tok), json_tokener_error_desc(e));
        json_tokener_free(tok);
        goto fail;
    }
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (end < len && !all_space(text + end, len - end)) {
        json_object_put(o);
        k = perr(&p, -EBADMSG, "not valid JSON: trailing data at byte %zu", end);
        goto fail;
    }
    k = ks_journal_new(NULL, &j);
    if (k < 0) {
        json_object_put(o);
        return k;
    }
    k = parse_object(&p, j, o);
    json_object_put(o);
    if (k < 0)
        goto fail;
    *ret = TAKE_PTR(j);
    return 0;

fail:
    if (p.oom || k == -ENOMEM) {
        free(p.error);
        return -ENOMEM;
    }
    if (ret_error)
        *ret_error = p.error;
    else
        free(p.error);
    return k;
}

int ks_journal_load(const ks_root *root, ks_journal **ret, char **ret_error)
{
    _cleanup_free_ char *text = NULL;
    ks_journal *j = NULL;
    size_t len = 0;
    int k;

    k = ks_root_read_file(root, KS_JOURNAL_PATH, KS_JOURNAL_MAX_SIZE, &text, &len);
    if (k == -ENOENT)
        return ks_journal_new(root, ret);
    if (k == -EFBIG) {
        if (ret_error)
            *ret_error = ks_asprintf("larger than %u bytes", KS_JOURNAL_MAX_SIZE);
        return -EBADMSG;
    }
    if (k < 0)
        return k;
    k = ks_journal_parse(text, len, &j, ret_error);
    if (k < 0)
        return k;
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
    if (s < 0 || s >= _KS_STATE_MAX)
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
    int k;

    if (o < 0 || o >= _KS_OUTCOME_MAX)
        return -EINVAL;
    if (o == KS_OUTCOME_NONE) {
        k = set_str(&j->outcome_at, NULL);
    } else {
        k = stamp(j, &j->outcome_at);
    }
    if (k < 0)
        return k;
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
    int k;

    if (!name || !*name)
        return -EINVAL;
    started = now_string(j);
    if (!started)
        return -ENOMEM;
    s = step_find(j, name);
    if (!s) {
        k = step_add(j, name, &s);
        if (k < 0)
            return k;
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
    int k;

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
        k = step_add(j, name, &s);
        if (k < 0)
            return k;
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
    ks_journal_change c = {.kind = KS_CHANGE_FILE};
    _cleanup_close_ int fd = -1;
    struct stat st;
    size_t len = 0;
    int k;

    if (!path || !*path)
        return -EINVAL;
    if (!j->root)
        return -EBADF;
    /* The first record is the state before kswap; later writes change nothing to undo. */
    if (change_find(j, KS_CHANGE_FILE, path))
        return 0;
    fd = ks_root_open_at(j->root, path, O_RDONLY | O_NOFOLLOW, 0);
    if (fd < 0 && fd != -ENOENT)
        return fd;
    if (fd >= 0) {
        if (fstat(fd, &st) < 0)
            return -errno;
        if (!S_ISREG(st.st_mode))
            return -EISDIR;
        if ((uint64_t)st.st_size > KS_JOURNAL_MAX_PREVIOUS)
            return -EFBIG;
        c.previous = malloc((size_t)st.st_size + 1);
        if (!c.previous)
            return -ENOMEM;
        while (len <= KS_JOURNAL_MAX_PREVIOUS) {
            ssize_t n = read(fd, c.previous + len, (size_t)st.st_size + 1 - len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                k = n < 0 ? -errno : 0;
                if (k < 0) {
                    free(c.previous);
                    return k;
                }
                break;
            }
            len += (size_t)n;
            if (len > (size_t)st.st_size) {
                /* Grew while we read: not the content we were told about. */
                free(c.previous);
                return -EAGAIN;
            }
        }
        c.existed = true;
        c.previous_len = len;
        c.mode = st.st_mode & 07777;
    }
    c.name = strdup(path);
    c.at = now_string(j);
    if (!c.name || !c.at) {
        change_done(&c);
        return -ENOMEM;
    }
    k = change_add(j, &c);
    if (k < 0) {
        change_done(&c);
        return k;
    }
    return ks_journal_save(j);
}

int ks_journal_note_package(ks_journal *j, const char *name, const char *version)
{
    ks_journal_change c = {.kind = KS_CHANGE_PACKAGE}, *old;
    int k;

    if (!name || !*name)
        return -EINVAL;
    old = change_find(j, KS_CHANGE_PACKAGE, name);
    if (old) {
        k = set_str(&old->version, version);
        if (k < 0)
            return k;
        return ks_journal_save(j);
    }
    c.name = strdup(name);
    c.version = version ? strdup(version) : NULL;
    c.at = now_string(j);
    if (!c.name || (version && !c.version) || !c.at) {
        change_done(&c);
        return -ENOMEM;
    }
    k = change_add(j, &c);
    if (k < 0) {
        change_done(&c);
        return k;
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

/* ---- boot identity and snapshot ---- */

int ks_boot_id_parse(const char *text, size_t len, char **ret)
{
    char *id;

    if (len > 0 && text[len - 1] == '\n')
        len--;
    if (len != 36)
        return -EBADMSG;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? text[i] != '-' : !isxdigit((unsigned char)text[i]))
            return -EBADMSG;
    }
    id = strndup(text, len);
    if (!id)
        return -ENOMEM;
    for (char *s = id; *s; s++)
        *s = (char)tolower((unsigned char)*s);
    *ret = id;
    return 0;
}

int ks_btime_parse(const char *text, size_t len, uint64_t *ret)
{
    const char *line;
    size_t pos = 0, n;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        char buf[32];
        unsigned long long v;
        size_t i = 5;

        if (n < 6 || memcmp(line, "btime", 5) != 0 || (line[5] != ' ' && line[5] != '\t'))
            continue;
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        while (n > i && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
            n--;
        if (n - i == 0 || n - i >= sizeof(buf))
            return -EBADMSG;
        memcpy(buf, line + i, n - i);
        buf[n - i] = '\0';
        if (ks_safe_atou64(buf, &v) < 0)
            return -EBADMSG;
        *ret = v;
        return 0;
    }
    return -EBADMSG;
}

int ks_read_boot_id(const ks_root *root, char **ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int k;

    k = ks_root_read_file(root, "proc/sys/kernel/random/boot_id", 4096, &text, &len);
    if (k < 0)
        return k;
    return ks_boot_id_parse(text, len, ret);
}

int ks_read_btime(const ks_root *root, uint64_t *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int k;

    /* proc/stat grows with the CPU count; a few MiB covers thousands of CPUs. */
    k = ks_root_read_file(root, "proc/stat", 8u << 20, &text, &len);
    if (k < 0)
        return k;
    return ks_btime_parse(text, len, ret);
}

/* Reads an optional file: *ret NULL when it does not exist. */
static int read_optional(const ks_root *root, const char *path, size_t max, char **ret,
                         size_t *ret_len)
{
    int k;

    *ret = NULL;
    *ret_len = 0;
    if (!path)
        return 0;
    k = ks_root_read_file(root, path, max, ret, ret_len);
    return k == -ENOENT ? 0 : k;
}

int ks_journal_take_snapshot(ks_journal *j, const char *grubenv_path, const char *dropin_path,
                             char *const *sysctls)
{
    ks_snapshot s = {0};
    _cleanup_free_ char *env = NULL;
    size_t n = ks_strv_length(sysctls), len;
    int k;

    if (!j->root)
        return -EBADF;
    k = ks_running_kernel(j->root, &s.kernel);
    if (k >= 0)
        k = ks_read_boot_id(j->root, &s.boot_id);
    if (k >= 0)
        k = ks_read_btime(j->root, &s.btime);
    if (k >= 0)
        k = read_optional(j->root, grubenv_path, 64 * 1024, &env, &len);
    if (k >= 0 && env) {
        s.has_grubenv = true;
        s.grubenv_len = len;
        s.grubenv = (unsigned char *)TAKE_PTR(env);
    }
    if (k >= 0)
        k = read_optional(j->root, dropin_path, 1u << 20, &s.dropin, &len);
    if (k >= 0) {
        s.sysctls = calloc(n + 1, sizeof(*s.sysctls));
        if (!s.sysctls)
            k = -ENOMEM;
    }
    for (size_t i = 0; k >= 0 && i < n; i++) {
        ks_snapshot_sysctl *y = &s.sysctls[s.n_sysctls++];
        int r;

        y->name = strdup(sysctls[i]);
        if (!y->name) {
            k = -ENOMEM;
            break;
        }
        r = ks_sysctl_live(j->root, sysctls[i], &y->value);
        if (r == -ENOMEM)
            k = r;
    }
    if (k >= 0) {
        s.taken_at = now_string(j);
        if (!s.taken_at)
            k = -ENOMEM;
    }
    if (k < 0) {
        snapshot_done(&s);
        return k;
    }
    snapshot_done(&j->snapshot);
    j->snapshot = s;
    j->has_snapshot = true;
    return 0;
}

const ks_snapshot *ks_journal_snapshot(const ks_journal *j)
{
    return j->has_snapshot ? &j->snapshot : NULL;
}
