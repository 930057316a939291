/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "lib/basic/fileio.h"
#include "lib/basic/json-util.h"
#include "lib/basic/time-util.h"
#include "lib/engine/command-log.h"
#include "lib/host/requester.h"

static void entry_done(ks_command_entry *e)
{
    free(e->time);
    free(e->command);
    free(e->swap_id);
    free(e->result);
    free(e->state);
    free(e->by);
    *e = (ks_command_entry){0};
}

void ks_command_log_done(ks_command_log *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        entry_done(&l->v[i]);
    free(l->v);
    *l = (ks_command_log){0};
}

/* ---- JSON out ---- */

static json_object *entry_to_json(ks_json_builder *b, const ks_command_entry *e)
{
    json_object *o = ks_jb_object(b);

    ks_jb_add(b, o, "id", ks_jb_int(b, (int64_t)e->id));
    ks_jb_add(b, o, "time", ks_jb_string(b, e->time));
    ks_jb_add(b, o, "command", ks_jb_string(b, e->command));
    ks_jb_add(b, o, "swap_id", ks_jb_string(b, e->swap_id));
    ks_jb_add(b, o, "result", ks_jb_string(b, e->result));
    ks_jb_add(b, o, "state", ks_jb_string(b, e->state));
    ks_jb_add(b, o, "by", ks_jb_string(b, e->by));
    return o;
}

json_object *ks_command_entry_to_json(const ks_command_entry *e)
{
    ks_json_builder b = {0};
    return ks_jb_finish(&b, entry_to_json(&b, e));
}

int ks_command_log_format(const ks_command_log *l, char **ret)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *a = ks_jb_array(&b);

    ks_jb_add(&b, o, "version", ks_jb_int(&b, KS_COMMAND_LOG_VERSION));
    for (size_t i = 0; i < l->n; i++)
        ks_jb_push(&b, a, entry_to_json(&b, &l->v[i]));
    ks_jb_add(&b, o, "commands", a);
    /* A command line may hold any byte: the log stays valid JSON (U+FFFD for invalid bytes). */
    return ks_json_file_text(ks_jb_finish(&b, o), ret);
}

/* ---- JSON in ---- */

static int parse_entry(ks_json_reader *p, json_object *o, size_t i, ks_command_entry *e)
{
    json_object *id = NULL;
    char ctx[48];
    time_t t;
    int r;

    snprintf(ctx, sizeof(ctx), "commands[%zu]: ", i);
    if (!json_object_is_type(o, json_type_object))
        return ks_json_reader_fail(p, -EBADMSG, "commands[%zu] is not an object", i);
    if (!json_object_object_get_ex(o, "id", &id) || !json_object_is_type(id, json_type_int) ||
        json_object_get_int64(id) < 1)
        return ks_json_reader_fail(p, -EBADMSG, "commands[%zu]: 'id' is not a number from 1", i);
    e->id = (uint64_t)json_object_get_int64(id);
    if ((r = ks_json_reader_string(p, o, ctx, "time", true, &e->time)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "command", true, &e->command)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "swap_id", false, &e->swap_id)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "result", true, &e->result)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "state", false, &e->state)) < 0 ||
        (r = ks_json_reader_string(p, o, ctx, "by", false, &e->by)) < 0)
        return r;
    if (ks_parse_utc(e->time, &t) < 0)
        return ks_json_reader_fail(
            p, -EBADMSG, "commands[%zu]: 'time' is not a UTC time like 2026-11-30T07:50:00Z", i);
    return 0;
}

static int parse_object(ks_json_reader *p, json_object *o, ks_command_log *l)
{
    json_object *v = NULL, *a = NULL;
    size_t n;
    int r;

    if (!json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int))
        return ks_json_reader_fail(p, -EBADMSG, "'version' is missing or not a number");
    if (json_object_get_int64(v) != KS_COMMAND_LOG_VERSION) {
        (void)ks_json_reader_fail(p, -EBADMSG,
                                  "version %" PRId64 " is not known to this kswap (it knows %d)",
                                  json_object_get_int64(v), KS_COMMAND_LOG_VERSION);
        return -EPROTONOSUPPORT;
    }
    if (!json_object_object_get_ex(o, "commands", &a) || !json_object_is_type(a, json_type_array))
        return ks_json_reader_fail(p, -EBADMSG, "'commands' is missing or not an array");
    n = json_object_array_length(a);
    l->v = calloc(n + 1, sizeof(*l->v));
    if (!l->v) {
        p->oom = true;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        r = parse_entry(p, json_object_array_get_idx(a, i), i, &l->v[l->n]);
        l->n++;
        if (r < 0)
            return r;
        if (i > 0 && l->v[i].id <= l->v[i - 1].id)
            return ks_json_reader_fail(p, -EBADMSG,
                                       "commands[%zu]: 'id' %" PRIu64 " does not follow %" PRIu64,
                                       i, l->v[i].id, l->v[i - 1].id);
    }
    return 0;
}

int ks_command_log_parse(const char *text, size_t len, ks_command_log *ret, char **ret_error)
{
    _cleanup_command_log_ ks_command_log l = {0};
    json_object *o = NULL;
    char *why = NULL;
    ks_json_reader p = {0};
    int r;

    assert(text || len == 0);
    assert(ret);
    /* A hand-edited or hostile log may hold more entries than kswap keeps: bounded before json-c
     * builds its tree (an entry is one object of about ten values). */
    r = ks_json_parse_document(text, len,
                               &(ks_json_limits){.bytes = KS_COMMAND_LOG_MAX_SIZE,
                                                 .containers = 4 * KS_COMMAND_LOG_MAX + 16,
                                                 .values = 32 * KS_COMMAND_LOG_MAX + 64},
                               &o, &why);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        r = ks_json_reader_fail(&p, -EBADMSG, "%s", why);
        free(why);
        goto fail;
    }
    r = parse_object(&p, o, &l);
    json_object_put(o);
    if (r < 0)
        goto fail;
    *ret = l;
    l = (ks_command_log){0};
    return 0;
fail:
    return ks_json_reader_end(&p, r, ret_error);
}

int ks_command_log_load(const ks_root *root, ks_command_log *ret, char **ret_error)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    assert(root);
    r = ks_json_read_file(root, KS_COMMAND_LOG_PATH, KS_COMMAND_LOG_MAX_SIZE, &text, &len,
                          ret_error);
    if (r < 0)
        return r;
    if (!text) {
        *ret = (ks_command_log){0};
        return 0;
    }
    return ks_command_log_parse(text, len, ret, ret_error);
}

/* ---- appending ---- */

static int fill_entry(const ks_root *root, const char *command, const char *result,
                      const ks_journal *j, uint64_t id, ks_command_entry *e)
{
    char buf[KS_UTC_MAX];

    *e = (ks_command_entry){.id = id};
    e->time = strdup(ks_format_utc(time(NULL), buf));
    e->command = strdup(command);
    e->result = strdup(result);
    e->state = j ? strdup(ks_state_to_string(ks_journal_state(j))) : NULL;
    e->swap_id = j && ks_journal_swap_id(j) ? strdup(ks_journal_swap_id(j)) : NULL;
    if (!e->time || !e->command || !e->result || (j && !e->state) ||
        (j && ks_journal_swap_id(j) && !e->swap_id))
        return -ENOMEM;
    return ks_requester(root, &e->by);
}

int ks_command_log_append(const ks_root *root, const char *command, const char *result,
                          const ks_journal *j, char **ret_warning)
{
    _cleanup_command_log_ ks_command_log l = {0};
    _cleanup_free_ char *err = NULL, *text = NULL;
    ks_command_entry *grown;
    uint64_t id;
    int r;

    assert(root);
    assert(command);
    assert(result);
    r = ks_command_log_load(root, &l, &err);
    if (r == -EBADMSG || r == -EPROTONOSUPPORT) {
        r = ks_rename_durable(root, KS_COMMAND_LOG_PATH, KS_COMMAND_LOG_DAMAGED_NAME);
        if (r < 0) {
            if (ret_warning)
                *ret_warning = ks_asprintf("the command log '/%s' is damaged (%s) and cannot be "
                                           "moved aside: %s; this command is not in it",
                                           KS_COMMAND_LOG_PATH, strempty(err), strerror(-r));
            return r;
        }
        if (ret_warning)
            *ret_warning =
                ks_asprintf("the command log '/%s' was damaged (%s); it was moved to "
                            "'/%s' and a new log started",
                            KS_COMMAND_LOG_PATH, strempty(err), KS_COMMAND_LOG_DAMAGED_PATH);
        l = (ks_command_log){0};
    } else if (r < 0) {
        if (ret_warning)
            *ret_warning = ks_asprintf("cannot read the command log '/%s': %s; this command is "
                                       "not in it",
                                       KS_COMMAND_LOG_PATH, strerror(-r));
        return r;
    }
    id = l.n > 0 ? l.v[l.n - 1].id + 1 : 1;
    /* Bounded: the oldest entries go first. */
    while (l.n >= KS_COMMAND_LOG_MAX) {
        entry_done(&l.v[0]);
        memmove(&l.v[0], &l.v[1], (l.n - 1) * sizeof(l.v[0]));
        l.n--;
    }
    grown = realloc(l.v, (l.n + 1) * sizeof(*l.v));
    if (!grown)
        return -ENOMEM;
    l.v = grown;
    r = fill_entry(root, command, result, j, id, &l.v[l.n]);
    l.n++;
    if (r >= 0)
        r = ks_command_log_format(&l, &text);
    if (r >= 0)
        r = ks_mkdir_p(root, "var/lib/kswap", 0755);
    if (r >= 0)
        r = ks_write_atomic(root, KS_COMMAND_LOG_PATH, text, strlen(text), 0644);
    if (r < 0 && ret_warning && !*ret_warning)
        *ret_warning = ks_asprintf("cannot write the command log '/%s': %s; this command is not "
                                   "in it",
                                   KS_COMMAND_LOG_PATH, strerror(-r));
    return r < 0 ? r : 0;
}
