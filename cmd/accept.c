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
    ks_fprintf(stderr, "%s[check]%s %-4s %s (attempt %u): %s\n", ks_bold(ctx->stderr_color),
               ks_bold_end(ctx->stderr_color), ks_check_status_to_string(chk->status), chk->id,
               chk->attempts, strempty(chk->detail));
}

json_object *ks_json_checks(const ks_checklist *l)
{
    ks_json_builder b = {0};
    json_object *arr = ks_jb_array(&b);

    for (size_t i = 0; i < l->n; i++) {
        const ks_check *c = &l->v[i];
        json_object *o = ks_jb_object(&b);
        ks_jb_add(&b, o, "id", ks_jb_string(&b, c->id));
        ks_jb_add(&b, o, "required", ks_jb_bool(&b, c->required));
        ks_jb_add(&b, o, "status", ks_jb_string(&b, ks_check_status_to_string(c->status)));
        ks_jb_add(&b, o, "detail", ks_jb_string(&b, c->detail));
        ks_jb_add(&b, o, "attempts", ks_jb_int(&b, c->attempts));
        if (c->output)
            ks_jb_add(&b, o, "output", ks_jb_string(&b, c->output));
        ks_jb_push(&b, arr, o);
    }
    return ks_jb_finish(&b, arr);
}

/* The document of --json and of the hooks' stdin; NULL: out of memory. */
static json_object *json_accept(const ks_accept_result *r, const ks_boot *b,
                                const ks_grub_forecast *f, bool have_forecast)
{
    ks_json_builder jb = {0};
    json_object *o = ks_jb_object(&jb);

    ks_jb_add(&jb, o, "outcome", ks_jb_string(&jb, ks_outcome_to_string(r->outcome)));
    ks_jb_add(&jb, o, "recorded", ks_jb_bool(&jb, r->recorded));
    ks_jb_add(&jb, o, "kernel", ks_jb_string(&jb, r->kernel));
    ks_jb_add(&jb, o, "expected_kernel", ks_jb_string(&jb, r->expected_kernel));
    ks_jb_add(&jb, o, "previous_boot", ks_jb_string(&jb, r->previous_boot));
    ks_jb_add(&jb, o, "trial_boot_logged",
              r->outcome == KS_OUTCOME_FELL_BACK && !r->recorded && r->trial_boot_logged >= 0
                  ? ks_jb_bool(&jb, r->trial_boot_logged)
                  : NULL);
    ks_jb_add(&jb, o, "old_kernel", ks_jb_string(&jb, r->old_kernel));
    ks_jb_add(&jb, o, "summary", ks_jb_string(&jb, r->summary));
    ks_jb_add(&jb, o, "checks", ks_jb_part(&jb, ks_json_checks(&r->checks)));
    /* NULL without a snapshot is null; with one, it is out of memory. */
    ks_jb_add(&jb, o, "diff", r->have_snapshot ? ks_jb_part(&jb, ks_accept_diff_json(r)) : NULL);
    ks_jb_add(&jb, o, "pinned", ks_jb_bool(&jb, r->pinned));
    ks_jb_add(&jb, o, "reboot", ks_jb_bool(&jb, r->reboot_claimed));
    ks_jb_add(&jb, o, "error", ks_jb_string(&jb, r->error));
    ks_jb_add(&jb, o, "state",
              r->journal ? ks_jb_string(&jb, ks_state_to_string(ks_journal_state(r->journal)))
                         : NULL);
    ks_jb_add(&jb, o, "grub", have_forecast ? ks_jb_part(&jb, ks_json_grub(b, f)) : NULL);
    return ks_jb_finish(&jb, o);
}

/* The users of each service's port: before, now, back (wanted unless required). */
static void print_conns(const ks_accept_result *r)
{
    bool any = false;

    for (size_t i = 0; i < r->checks.n; i++) {
        const ks_check *c = &r->checks.v[i];
        long long now;

        if (c->run != ks_check_connections)
            continue;
        now = ks_accept_conns_now(r, c);
        if (!any)
            ks_printf("connections to the ports services listened on at arming:\n");
        any = true;
        ks_printf("  %s: %u at arming, ", c->arg, c->baseline);
        if (now >= 0)
            ks_printf("%lld now", now);
        else
            ks_printf("now unknown");
        ks_printf(", %s (%s)\n", c->status == KS_CHECK_PASS ? "back" : "not back",
                  c->required ? "required" : "wanted, not required");
    }
}

/* What ran on the old kernel and came back, what did not, what is new. */
static void print_diff(const ks_accept_result *r)
{
    size_t back = 0, missing = 0;

    for (size_t i = 0; i < r->checks.n; i++)
        if (r->checks.v[i].from_snapshot)
            r->checks.v[i].status == KS_CHECK_PASS ? back++ : missing++;
    ks_printf("what ran on the old kernel: %zu came back, %zu did not\n", back, missing);
    for (size_t i = 0; i < r->checks.n; i++)
        if (r->checks.v[i].from_snapshot && r->checks.v[i].status != KS_CHECK_PASS)
            ks_printf("  - %s\n", r->checks.v[i].id);
    for (char **p = r->new_items; p && *p; p++)
        ks_printf("  + %s (new)\n", *p);
    for (char **p = r->not_snapshotted; p && *p; p++)
        ks_printf("  not snapshotted: %s\n", *p);
    print_conns(r);
    ks_printf("established connections: %u before, %u now (reported, not required)\n",
              r->established_before, r->established_now);
}

static void print_human(const ks_ctx *ctx, const ks_accept_result *r, const ks_boot *b,
                        const ks_grub_forecast *f, bool have_forecast)
{
    const char *o = ks_outcome_to_string(r->outcome);

    ks_printf("outcome: %s%s\n", o ? o : "nothing to judge", r->recorded ? " (judged before)" : "");
    if (r->kernel)
        ks_printf("running: %s%strial kernel: %s\n", r->kernel, ctx->sep,
                  strempty(r->expected_kernel));
    for (size_t i = 0; i < r->checks.n; i++) {
        const ks_check *c = &r->checks.v[i];
        ks_printf("  %-4s %s%s", ks_check_status_to_string(c->status), c->id,
                  c->required ? "" : " (wanted)");
        if (c->attempts > 1)
            ks_printf(" (%u attempts)", c->attempts);
        ks_printf(": %s\n", strempty(c->detail));
    }
    if (r->have_snapshot)
        print_diff(r);
    if (r->summary)
        ks_printf("%s\n", r->summary);
    if (r->previous_boot)
        ks_printf("the previous boot's journal (warnings and errors):\n%s%s", r->previous_boot,
                  ks_endswith(r->previous_boot, "\n") ? "" : "\n");
    if (r->pinned)
        ks_printf("pinned: %s is the default on every boot\n", strempty(r->expected_kernel));
    if (have_forecast) {
        ks_printf("\n");
        ks_print_forecast(ctx, b, f);
    }
}

/* After the verdict: pinned/ or failed/ hooks with the JSON on stdin; failures are logged. */
static void run_hooks(const ks_ctx *ctx, const ks_accept_result *res, json_object *doc,
                      const ks_config *cfg)
{
    _cleanup_strv_free_ char **failures = NULL;
    _cleanup_free_ char *text = NULL;
    const char *which;
    int tmo = 30, r;

    if (res->recorded)
        return;
    if (res->outcome == KS_OUTCOME_TRIAL_OK && res->pinned)
        which = "pinned";
    else if (res->outcome == KS_OUTCOME_HEALTH_FAILED || res->outcome == KS_OUTCOME_FELL_BACK ||
             res->outcome == KS_OUTCOME_TRIAL_HUNG)
        which = "failed";
    else
        return;
    if (cfg && (ks_config_get_int(cfg, "accept", "hook_timeout", 30, &tmo) < 0 || tmo <= 0))
        tmo = 30;
    text = ks_json_to_utf8(doc, JSON_C_TO_STRING_PLAIN);
    r = text ? ks_accept_run_hooks(ctx->root, which, text, (unsigned)tmo * 1000u, &failures)
             : -ENOMEM;
    if (r < 0)
        ks_warn("cannot run the %s hooks in '/%s/%s': %s", which, KS_HOOKS_DIR, which,
                strerror(-r));
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
    ks_accept_result res = {0};
    ks_grub_forecast f = {0};
    ks_boot b = {0};
    json_object *doc;
    bool have_forecast;
    int c, r, exit_code;

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

    r = ks_accept(ctx->root, &opts, &res);
    if (r < 0) {
        ks_error("accept: %s", res.error ? res.error : strerror(-r));
        ks_accept_result_done(&res);
        return KS_EXIT_ERROR;
    }
    exit_code = outcome_exit(res.outcome);
    /* trial-ok but not pinned and the old kernel runs: not done, whatever the verdict was */
    if (res.pin_lost)
        exit_code = KS_EXIT_ACCEPT_FAILED;
    have_forecast = ks_collect_forecast(ctx, &b, &f, NULL) >= 0;
    doc = json_accept(&res, &b, &f, have_forecast);
    if (ctx->json) {
        /* The verdict is on disk whatever happens here; only its report can fail. */
        if (!doc)
            ks_error("accept: cannot build the JSON document: %s", strerror(ENOMEM));
        if (!doc || ks_print_json(doc) != KS_EXIT_OK)
            exit_code = KS_EXIT_ERROR;
    } else {
        print_human(ctx, &res, &b, &f, have_forecast);
    }
    if (res.error)
        ks_error("accept: %s", res.error);
    if (res.outcome == KS_OUTCOME_TRIAL_HUNG && !res.recorded)
        ks_warn("TRIAL HUNG: the trial kernel %s missed its boot deadline, was rebooted by force "
                "and %s runs; the trial is disarmed. %s",
                strempty(res.expected_kernel), strempty(res.kernel),
                res.journal ? strempty(ks_journal_get(res.journal, KS_JF_REASON)) : "");
    if (res.outcome == KS_OUTCOME_FELL_BACK && !res.recorded)
        ks_warn("FELL BACK: the trial kernel %s did not come up and %s runs; the trial is "
                "disarmed. %s",
                strempty(res.expected_kernel), strempty(res.kernel),
                res.trial_boot_logged == 0
                    ? "The trial boot left nothing in the system journal (it stopped in the "
                      "kernel or initramfs): read its console log (serial console, the "
                      "provider's console)"
                    : "Read the previous boot's log: journalctl -b -1");
    if (res.pin_lost)
        ks_warn("NOT PINNED: %s", strempty(res.summary));
    /* accept has no findings list: a failure to write kswap.prom is a warning on stderr. */
    if (res.metrics_error)
        ks_warn("metrics.unwritable: %s; the verdict stands", res.metrics_error);
    if (res.history_error)
        ks_warn("history: %s; the verdict stands", res.history_error);
    fflush(stdout);
    if (doc)
        run_hooks(ctx, &res, doc, cfg);
    else if (!res.recorded && res.outcome != KS_OUTCOME_NONE)
        ks_warn("no hook in '/%s' ran: the JSON document they read cannot be built: %s",
                KS_HOOKS_DIR, strerror(ENOMEM));
    json_object_put(doc);
    if (res.reboot_claimed) {
        _cleanup_free_ char *err = NULL;
        bool warned = res.metrics_error;

        ks_swap_progress(ctx, "accept", "rebooting into the old kernel (once for this trial)");
        if (ks_accept_reboot(ctx->root, &res, &err) < 0)
            ks_error("accept: %s", err ? err : "cannot reboot");
        if (res.metrics_error && !warned)
            ks_warn("metrics.unwritable: %s", res.metrics_error);
    } else if (res.reboot_refused && !res.recorded) {
        ks_warn("not rebooting again: this trial had its one reboot already");
    }
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    ks_accept_result_done(&res);
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
