/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd.h"
#include "forecast.h"
#include "lib/journal.h"

/* Loads the journal for display; a broken one is reported, never reset. */
static ks_journal *load_journal(const ks_ctx *ctx)
{
    _cleanup_free_ char *err = NULL;
    ks_journal *j = NULL;
    int k = ks_journal_load(ctx->root, &j, &err);
    if (k < 0)
        ks_warn("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                err ? err : strerror(-k));
    return k < 0 ? NULL : j;
}

static void print_journal(const ks_journal *j)
{
    const char *new = ks_journal_get(j, KS_JF_NEW_KERNEL), *old = ks_journal_get(j, KS_JF_OLD_KERNEL);
    const char *reason = ks_journal_get(j, KS_JF_REASON);
    ks_state s = ks_journal_state(j);

    if (s == KS_STATE_IDLE) {
        printf("state: idle (no swap recorded)\n");
        return;
    }
    printf("state: %s", ks_state_to_string(s));
    if (ks_journal_outcome(j) != KS_OUTCOME_NONE)
        printf(" · outcome %s", ks_outcome_to_string(ks_journal_outcome(j)));
    printf(" · old %s · new %s\n", old ? old : "-", new ? new : "-");
    if (s == KS_STATE_ARMED && ks_journal_armed_at(j))
        printf("armed at %s (boot %s)\n", ks_journal_armed_at(j),
               strempty(ks_journal_armed_boot_id(j)));
    if (reason && (s == KS_STATE_FAILED || s == KS_STATE_ROLLED_BACK))
        printf("reason: %s\n", reason);
}

static int run_status(ks_ctx *ctx, int argc, char **argv)
{
    static const struct option options[] = {{}};
    _cleanup_free_ char *running = NULL;
    ks_findings findings = {0};
    ks_grub_forecast f = {0};
    ks_journal *j = NULL;
    ks_boot b = {0};
    int c, r = KS_EXIT_OK;

    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1)
        return ks_usage_error(&ks_cmd_status, "unknown option");
    if (optind < argc)
        return ks_usage_error(&ks_cmd_status, "unexpected argument '%s'", argv[optind]);

    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/osrelease", &running);
    j = load_journal(ctx);
    if (ks_collect_forecast(ctx, &b, &f, &findings) < 0) {
        r = KS_EXIT_ERROR;
        goto out;
    }
    if (ctx->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "running", ks_json_string_or_null(running));
        json_object_object_add(o, "journal", j ? ks_journal_to_json(j) : NULL);
        json_object_object_add(o, "grub", ks_json_grub(&b, &f));
        json_object_object_add(o, "findings", ks_json_findings(&findings));
        r = ks_print_json(o);
        json_object_put(o);
    } else {
        if (running)
            printf("running: %s\n", running);
        if (j)
            print_journal(j);
        ks_print_forecast(ctx, &b, &f);
        if (findings.n) {
            printf("\n");
            ks_print_findings(ctx, &findings);
        }
    }
out:
    ks_journal_free(j);
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    ks_findings_clear(&findings);
    return r;
}

const ks_cmd ks_cmd_status = {
    .name = "status",
    .run = run_status,
    .summary = "the state journal and the forecast of the next boots",
    .usage = "",
    .flags = KS_READ_ONLY,
};
