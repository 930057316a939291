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
        ks_printf("no swap in the history yet ('/%s')\n", KS_HISTORY_PATH);
        return;
    }
    ks_printf("%-4s %-20s %-20s %-14s %-44s %s\n", "ID", "STARTED", "ENDED", "OUTCOME",
              "FROM -> TO", "BY");
    for (size_t i = h->n; i-- > 0;) {
        const ks_history_record *r = &h->v[i];
        _cleanup_free_ char *fromto =
            ks_asprintf("%s -> %s", dash(r->from.release), dash(r->to.release));
        ks_printf("%-4" PRIu64 " %-20s %-20s %-14s %-44s %s\n", r->id, r->started, r->ended,
                  r->outcome, fromto ? fromto : "-", dash(r->by));
        if (ctx->verbose) {
            ks_printf("     from %s\n", dash(r->from.id_path));
            ks_printf("     to   %s\n", dash(r->to.id_path));
            ks_printf("     kswap %s\n", dash(r->version));
        }
        if (r->reason)
            ks_printf("     reason: %s\n", r->reason);
    }
}

int ks_status_history(const ks_ctx *ctx)
{
    _cleanup_history_ ks_history h = {0};
    _cleanup_free_ char *err = NULL, *jerr = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    int r = ks_history_load(ctx->root, &h, &err);

    if (r < 0)
        ks_error("cannot read the swap history '/%s': %s; the next swap moves it to '/%s' and "
                 "starts a new one",
                 KS_HISTORY_PATH, err ? err : strerror(-r), KS_HISTORY_DAMAGED_PATH);
    /* The state beside the history, as plain status gives it; a damaged journal is named. */
    if (ks_journal_load(ctx->root, &j, &jerr) < 0) {
        ks_error("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                 jerr ? jerr : "unreadable");
        j = NULL;
    }
    if (ctx->json) {
        ks_json_builder b = {0};
        json_object *o = ks_jb_object(&b), *a = NULL;
        if (r >= 0) {
            a = ks_jb_array(&b);
            for (size_t i = h.n; i-- > 0;)
                ks_jb_push(&b, a, ks_jb_part(&b, ks_history_record_to_json(&h.v[i])));
        }
        ks_jb_add(
            &b, o, "state",
            ks_jb_string(&b, r < 0 || !j ? "error" : ks_state_to_string(ks_journal_state(j))));
        ks_jb_add(&b, o, "error", ks_jb_string(&b, r < 0 || !j ? ks_first_error() : NULL));
        ks_jb_add(&b, o, "history_file", ks_jb_string(&b, "/" KS_HISTORY_PATH));
        ks_jb_add(&b, o, "history", a);
        if (ks_print_json_built("status --history", &b, o) != KS_EXIT_OK)
            return KS_EXIT_ERROR;
    } else if (r >= 0) {
        print_table(ctx, &h);
    }
    return r < 0 || !j ? KS_EXIT_ERROR : KS_EXIT_OK;
}
