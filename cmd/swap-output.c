/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How apply, pin and rollback report: the journal, findings, the forecast, an exit code. */
#include "cmd/forecast.h"
#include "cmd/swap-output.h"

void ks_swap_progress(void *userdata, const char *step, const char *message)
{
    const ks_ctx *ctx = userdata;
    if (ctx->quiet)
        return;
    /* Progress goes to stderr, so --json keeps stdout to one document. */
    fprintf(stderr, "%s[%s]%s %s\n", ctx->stderr_color ? "\033[1m" : "", step,
            ctx->stderr_color ? "\033[0m" : "", message);
}

int ks_swap_progress_fd(void)
{
    /* Only a person at a terminal wants apt's progress bars; logs get the final output. */
    return isatty(STDERR_FILENO) ? STDERR_FILENO : 0;
}

int ks_swap_config(const ks_ctx *ctx, ks_config **ret)
{
    _cleanup_free_ char *err = NULL;
    int k = ks_config_load(ctx->root, ctx->config_path, ret, &err);
    if (k < 0)
        ks_error("cannot read the configuration: %s", err ? err : strerror(-k));
    return k;
}

int ks_swap_render(const ks_ctx *ctx, const char *what, const ks_swap_result *r)
{
    ks_boot b = {0};
    ks_grub_forecast f = {0};
    bool have_forecast;
    int exit_code;

    switch (r->status) {
    case KS_SWAP_DONE:
    case KS_SWAP_ALREADY:
        exit_code = KS_EXIT_OK;
        break;
    case KS_SWAP_REFUSED:
        exit_code = KS_EXIT_REFUSED;
        break;
    default:
        exit_code = KS_EXIT_ERROR;
    }
    /* Whatever happened, show what the next boots will be: that is what an operator needs. */
    have_forecast = ks_collect_forecast(ctx, &b, &f, NULL) >= 0;

    if (ctx->json) {
        json_object *o = r->journal ? ks_journal_to_json(r->journal) : json_object_new_object();
        json_object_object_add(o, "result",
                               json_object_new_string(r->status == KS_SWAP_DONE      ? "done"
                                                      : r->status == KS_SWAP_ALREADY ? "unchanged"
                                                      : r->status == KS_SWAP_REFUSED ? "refused"
                                                      : r->status == KS_SWAP_BUSY    ? "busy"
                                                                                     : "failed"));
        json_object_object_add(o, "error", ks_json_string_or_null(
                                               r->status == KS_SWAP_DONE ? NULL : r->error));
        json_object_object_add(o, "output", ks_json_string_or_null(r->output));
        json_object_object_add(o, "findings", ks_json_findings(&r->findings));
        json_object_object_add(o, "grub", have_forecast ? ks_json_grub(&b, &f) : NULL);
        if (ks_print_json(o) != KS_EXIT_OK)
            exit_code = KS_EXIT_ERROR;
        json_object_put(o);
    } else {
        if (r->findings.n > 0) {
            ks_print_findings(ctx, &r->findings);
            printf("\n");
        }
        if (r->status == KS_SWAP_DONE)
            printf("%s: done%s\n", what, r->rebooting ? "; rebooting now" : "");
        else if (r->status == KS_SWAP_ALREADY)
            printf("%s: nothing changed: %s\n", what, strempty(r->error));
        if (have_forecast)
            ks_print_forecast(ctx, &b, &f);
        if (r->output && r->status == KS_SWAP_FAILED)
            fprintf(stderr, "--- output of the failed program ---\n%s%s", r->output,
                    ks_endswith(r->output, "\n") ? "" : "\n");
    }
    if (r->status != KS_SWAP_DONE && r->status != KS_SWAP_ALREADY)
        ks_error("%s: %s", what, strempty(r->error));
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    return exit_code;
}
