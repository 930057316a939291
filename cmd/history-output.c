/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cmd/history-output.h"
#include "lib/engine/history.h"
#include "lib/engine/journal.h"

static const char *dash(const char *s)
{
    return s && *s ? s : "-";
}

static void print_table(const ks_ctx *ctx, const ks_history *h)
{
    if (h->n == 0) {
        printf("no swap in the history yet ('/%s')\n", KS_HISTORY_PATH);
        return;
    }
    printf("%-4s %-20s %-20s %-14s %-44s %s\n", "ID", "STARTED", "ENDED", "OUTCOME", "FROM -> TO",
           "BY");
    for (size_t i = h->n; i-- > 0;) {
        const ks_history_record *r = &h->v[i];
        _cleanup_free_ char *fromto =
            ks_asprintf("%s -> %s", dash(r->from.release), dash(r->to.release));
        printf("%-4" PRIu64 " %-20s %-20s %-14s %-44s %s\n", r->id, r->started, r->ended,
               r->outcome, fromto ? fromto : "-", dash(r->by));
        if (ctx->verbose) {
            printf("     from %s\n", dash(r->from.id_path));
            printf("     to   %s\n", dash(r->to.id_path));
            printf("     kswap %s\n", dash(r->version));
        }
        if (r->reason)
            printf("     reason: %s\n", r->reason);
    }
}

int ks_status_history(const ks_ctx *ctx)
{
    _cleanup_history_ ks_history h = {0};
    _cleanup_free_ char *err = NULL, *jerr = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    int k = ks_history_load(ctx->root, &h, &err);

    if (k < 0)
        ks_error("cannot read the swap history '/%s': %s; the next swap moves it to '/%s' and "
                 "starts a new one",
                 KS_HISTORY_PATH, err ? err : strerror(-k), KS_HISTORY_DAMAGED_PATH);
    /* The state beside the history, as plain status gives it; a damaged journal is named. */
    if (ks_journal_load(ctx->root, &j, &jerr) < 0) {
        ks_error("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                 jerr ? jerr : "unreadable");
        j = NULL;
    }
    if (ctx->json) {
        json_object *o = json_object_new_object(), *a = json_object_new_array();
        if (!o || !a)
            return KS_EXIT_ERROR;
        for (size_t i = h.n; k >= 0 && i-- > 0;) {
            json_object *x = ks_history_record_to_json(&h.v[i]);
            if (!x || json_object_array_add(a, x) < 0)
                return KS_EXIT_ERROR;
        }
        json_object_object_add(
            o, "state",
            json_object_new_string(k < 0 || !j ? "error"
                                               : ks_state_to_string(ks_journal_state(j))));
        json_object_object_add(o, "error",
                               ks_json_string_or_null(k < 0 || !j ? ks_first_error() : NULL));
        json_object_object_add(o, "history_file", json_object_new_string("/" KS_HISTORY_PATH));
        json_object_object_add(o, "history", k < 0 ? NULL : a);
        if (k < 0)
            json_object_put(a);
        ks_print_json(o);
        json_object_put(o);
    } else if (k >= 0) {
        print_table(ctx, &h);
    }
    return k < 0 || !j ? KS_EXIT_ERROR : KS_EXIT_OK;
}
