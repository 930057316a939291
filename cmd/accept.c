/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap accept: the post-reboot acceptance checklist, then pin or back to the old kernel. */
#include <getopt.h>

#include "lib/engine/accept.h"
#include "cmd/check-output.h"
#include "cmd/forecast.h"
#include "cmd/swap-output.h"

static int outcome_exit(ks_outcome o)
{
    switch (o) {
    case KS_OUTCOME_TRIAL_OK:
        return KS_EXIT_OK;
    case KS_OUTCOME_HEALTH_FAILED:
    case KS_OUTCOME_FELL_BACK:
    case KS_OUTCOME_TRIAL_HUNG:
        return KS_EXIT_ACCEPT_FAILED;
    default:
        return KS_EXIT_NOTHING;
    }
}

static void check_progress(void *userdata, const ks_check *chk)
{
    const ks_ctx *ctx = userdata;

    if (ctx->quiet)
        return;
    fprintf(stderr, "%s[check]%s %-4s %s (attempt %u): %s\n", ctx->stderr_color ? "\033[1m" : "",
            ctx->stderr_color ? "\033[0m" : "", ks_check_status_to_string(chk->status), chk->id,
            chk->attempts, strempty(chk->detail));
}

json_object *ks_json_checks(const ks_checklist *l)
{
    json_object *arr = json_object_new_array();

    for (size_t i = 0; i < l->n; i++) {
        const ks_check *c = &l->v[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(c->id));
        json_object_object_add(o, "required", json_object_new_boolean(c->required));
        json_object_object_add(o, "status",
                               json_object_new_string(ks_check_status_to_string(c->status)));
        json_object_object_add(o, "detail", ks_json_string_or_null(c->detail));
        json_object_object_add(o, "attempts", json_object_new_int((int)c->attempts));
        if (c->output)
            json_object_object_add(o, "output", json_object_new_string(c->output));
        json_object_array_add(arr, o);
    }
    return arr;
}

static json_object *json_accept(const ks_accept_result *r, const ks_boot *b,
                                const ks_grub_forecast *f, bool have_forecast)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "outcome", ks_json_string_or_null(ks_outcome_to_string(r->outcome)));
    json_object_object_add(o, "recorded", json_object_new_boolean(r->recorded));
    json_object_object_add(o, "kernel", ks_json_string_or_null(r->kernel));
    json_object_object_add(o, "expected_kernel", ks_json_string_or_null(r->expected_kernel));
    json_object_object_add(o, "previous_boot", ks_json_string_or_null(r->previous_boot));
    json_object_object_add(o, "trial_boot_logged",
                           r->outcome == KS_OUTCOME_FELL_BACK && !r->recorded &&
                                   r->trial_boot_logged >= 0
                               ? json_object_new_boolean(r->trial_boot_logged)
                               : NULL);
    json_object_object_add(o, "old_kernel", ks_json_string_or_null(r->old_kernel));
    json_object_object_add(o, "summary", ks_json_string_or_null(r->summary));
    json_object_object_add(o, "checks", ks_json_checks(&r->checks));
    json_object_object_add(o, "diff",
                           ks_accept_diff_json(&r->checks, r->have_snapshot, r->new_items,
                                               r->not_snapshotted, r->established_before,
                                               r->established_now));
    json_object_object_add(o, "pinned", json_object_new_boolean(r->pinned));
    json_object_object_add(o, "reboot", json_object_new_boolean(r->reboot_claimed));
    json_object_object_add(o, "error", ks_json_string_or_null(r->error));
    json_object_object_add(
        o, "state",
        r->journal ? ks_json_string_or_null(ks_state_to_string(ks_journal_state(r->journal)))
                   : NULL);
    json_object_object_add(o, "grub", have_forecast ? ks_json_grub(b, f) : NULL);
    return o;
}

/* What ran on the old kernel and came back, what did not, what is new. */
static void print_diff(const ks_accept_result *r)
{
    size_t back = 0, missing = 0;

    for (size_t i = 0; i < r->checks.n; i++)
        if (r->checks.v[i].from_snapshot)
            r->checks.v[i].status == KS_CHECK_PASS ? back++ : missing++;
    printf("what ran on the old kernel: %zu came back, %zu did not\n", back, missing);
    for (size_t i = 0; i < r->checks.n; i++)
        if (r->checks.v[i].from_snapshot && r->checks.v[i].status != KS_CHECK_PASS)
            printf("  - %s\n", r->checks.v[i].id);
    for (char **p = r->new_items; p && *p; p++)
        printf("  + %s (new)\n", *p);
    for (char **p = r->not_snapshotted; p && *p; p++)
        printf("  not snapshotted: %s\n", *p);
    printf("established connections: %u before, %u now (reported, not required)\n",
           r->established_before, r->established_now);
}

static void print_human(const ks_ctx *ctx, const ks_accept_result *r, const ks_boot *b,
                        const ks_grub_forecast *f, bool have_forecast)
{
    const char *o = ks_outcome_to_string(r->outcome);

    printf("outcome: %s%s\n", o ? o : "nothing to judge", r->recorded ? " (judged before)" : "");
    if (r->kernel)
        printf("running: %s%strial kernel: %s\n", r->kernel, ctx->sep,
               strempty(r->expected_kernel));
    for (size_t i = 0; i < r->checks.n; i++) {
        const ks_check *c = &r->checks.v[i];
        printf("  %-4s %s%s", ks_check_status_to_string(c->status), c->id,
               c->required ? "" : " (wanted)");
        if (c->attempts > 1)
            printf(" (%u attempts)", c->attempts);
        printf(": %s\n", strempty(c->detail));
    }
    if (r->have_snapshot)
        print_diff(r);
    if (r->summary)
        printf("%s\n", r->summary);
    if (r->previous_boot)
        printf("the previous boot's journal (warnings and errors):\n%s%s", r->previous_boot,
               ks_endswith(r->previous_boot, "\n") ? "" : "\n");
    if (r->pinned)
        printf("pinned: %s is the default on every boot\n", strempty(r->expected_kernel));
    if (have_forecast) {
        printf("\n");
        ks_print_forecast(ctx, b, f);
    }
}

/* After the verdict: pinned/ or failed/ hooks with the JSON on stdin; failures are logged. */
static void run_hooks(const ks_ctx *ctx, const ks_accept_result *r, json_object *doc,
                      const ks_config *cfg)
{
    _cleanup_strv_free_ char **failures = NULL;
    const char *which;
    int tmo = 30, k;

    if (r->recorded)
        return;
    if (r->outcome == KS_OUTCOME_TRIAL_OK && r->pinned)
        which = "pinned";
    else if (r->outcome == KS_OUTCOME_HEALTH_FAILED || r->outcome == KS_OUTCOME_FELL_BACK ||
             r->outcome == KS_OUTCOME_TRIAL_HUNG)
        which = "failed";
    else
        return;
    if (cfg && (ks_config_get_int(cfg, "accept", "hook_timeout", 30, &tmo) < 0 || tmo <= 0))
        tmo = 30;
    k = ks_accept_run_hooks(ctx->root, which,
                            json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN),
                            (unsigned)tmo * 1000u, &failures);
    if (k < 0)
        ks_warn("cannot run the %s hooks in '/%s/%s': %s", which, KS_HOOKS_DIR, which,
                strerror(-k));
    for (char **f = failures; f && *f; f++)
        ks_warn("hook %s/%s", which, *f);
}

static const ks_option accept_options[] = {
    {"timeout", 't', "SECONDS", "give the checks SECONDS to pass", "[accept] timeout, 300"},
    {"no-pin", 'P', NULL, "after a pass, leave the pin to 'kswap pin'", NULL},
    {"no-reboot", 'R', NULL, "after a failure, do not reboot into the old kernel", NULL},
    {},
};

static int run_accept(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    ks_accept_opts opts = {.timeout_s = -1};
    ks_accept_result r = {0};
    ks_grub_forecast f = {0};
    ks_boot b = {0};
    json_object *doc;
    bool have_forecast;
    int c, k, exit_code;

    while ((c = ks_getopt(&ks_cmd_accept, argc, argv)) != -1) {
        switch (c) {
        case 't':
            if (ks_safe_atoi(optarg, &opts.timeout_s) < 0 || opts.timeout_s < 0)
                return ks_usage_error(&ks_cmd_accept, "--timeout needs seconds, not '%s'", optarg);
            break;
        case 'P':
            opts.no_pin = true;
            break;
        case 'R':
            opts.no_reboot = true;
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_accept, "unexpected argument '%s'", argv[optind]);
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    opts.config = cfg;
    opts.progress = ks_swap_progress;
    opts.check_progress = check_progress;
    opts.userdata = ctx;

    k = ks_accept(ctx->root, &opts, &r);
    if (k < 0) {
        ks_error("accept: %s", r.error ? r.error : strerror(-k));
        ks_accept_result_done(&r);
        return KS_EXIT_ERROR;
    }
    exit_code = outcome_exit(r.outcome);
    /* trial-ok but not pinned and the old kernel runs: not done, whatever the verdict was */
    if (r.pin_lost)
        exit_code = KS_EXIT_ACCEPT_FAILED;
    have_forecast = ks_collect_forecast(ctx, &b, &f, NULL) >= 0;
    doc = json_accept(&r, &b, &f, have_forecast);
    if (ctx->json) {
        if (ks_print_json(doc) != KS_EXIT_OK)
            exit_code = KS_EXIT_ERROR;
    } else {
        print_human(ctx, &r, &b, &f, have_forecast);
    }
    if (r.error)
        ks_error("accept: %s", r.error);
    if (r.outcome == KS_OUTCOME_TRIAL_HUNG && !r.recorded)
        ks_warn("TRIAL HUNG: the trial kernel %s missed its boot deadline, was rebooted by force "
                "and %s runs; the trial is disarmed. %s",
                strempty(r.expected_kernel), strempty(r.kernel),
                r.journal ? strempty(ks_journal_get(r.journal, KS_JF_REASON)) : "");
    if (r.outcome == KS_OUTCOME_FELL_BACK && !r.recorded)
        ks_warn("FELL BACK: the trial kernel %s did not come up and %s runs; the trial is "
                "disarmed. %s",
                strempty(r.expected_kernel), strempty(r.kernel),
                r.trial_boot_logged == 0
                    ? "The trial boot left nothing in the system journal (it stopped in the "
                      "kernel or initramfs): read its console log (serial console, the "
                      "provider's console)"
                    : "Read the previous boot's log: journalctl -b -1");
    if (r.pin_lost)
        ks_warn("NOT PINNED: %s", strempty(r.summary));
    /* accept has no findings list: a failure to write kswap.prom is a warning on stderr. */
    if (r.metrics_error)
        ks_warn("metrics.unwritable: %s; the verdict stands", r.metrics_error);
    if (r.history_error)
        ks_warn("history: %s; the verdict stands", r.history_error);
    fflush(stdout);
    run_hooks(ctx, &r, doc, cfg);
    json_object_put(doc);
    if (r.reboot_claimed) {
        _cleanup_free_ char *err = NULL;
        bool warned = r.metrics_error;

        ks_swap_progress(ctx, "accept", "rebooting into the old kernel (once for this trial)");
        if (ks_accept_reboot(ctx->root, &r, &err) < 0)
            ks_error("accept: %s", err ? err : "cannot reboot");
        if (r.metrics_error && !warned)
            ks_warn("metrics.unwritable: %s", r.metrics_error);
    } else if (r.reboot_refused && !r.recorded) {
        ks_warn("not rebooting again: this trial had its one reboot already");
    }
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    ks_accept_result_done(&r);
    return exit_code;
}

const ks_cmd ks_cmd_accept = {
    .name = "accept",
    .run = run_accept,
    .summary = "after the trial reboot: check the running system, then pin or go back",
    .usage = "[--timeout SECONDS] [--no-pin] [--no-reboot]",
    .flags = KS_NEEDS_ROOT_USER,
    .options = accept_options,
    .json_key = "outcome",
};
