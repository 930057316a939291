/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/cmd.h"
#include "cmd/forecast.h"
#include "lib/engine/journal.h"
#include "lib/engine/trial.h"

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

/* The exit code of accept for a journal: 0 trial-ok, 3 failed, 4 nothing judged (yet). */
static int verdict_exit(const ks_journal *j)
{
    switch (j ? ks_journal_outcome(j) : KS_OUTCOME_NONE) {
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

static bool trial_pending(const ks_journal *j)
{
    ks_state s = ks_journal_state(j);
    return verdict_exit(j) == KS_EXIT_NOTHING && ks_journal_armed_boot_id(j) &&
           (s == KS_STATE_ARMED || s == KS_STATE_TRIAL_BOOTED);
}

static long long mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec;
}

/* --wait: polls the journal until the trial has a final outcome or timeout_s passed. */
static ks_journal *wait_verdict(const ks_ctx *ctx, int timeout_s)
{
    long long deadline = mono_s() + timeout_s;
    bool told = false;

    for (;;) {
        ks_journal *j = load_journal(ctx);
        if (!j || !trial_pending(j) || mono_s() >= deadline)
            return j;
        if (!told) {
            fprintf(stderr, "[status] waiting up to %d s for the verdict on %s\n", timeout_s,
                    strempty(ks_journal_get(j, KS_JF_NEW_KERNEL)));
            told = true;
        }
        ks_journal_free(j);
        sleep(1);
    }
}

/*
 * --ack: the operator has seen the outcome. Clears the login line and, once the trial is
 * judged, the flag that makes kswap-accept.service write it again at every boot. The only
 * change status makes, and only when asked.
 */
static void acknowledge(const ks_ctx *ctx, const ks_journal *j)
{
    int k = ks_motd_clear(ctx->root);
    if (k < 0)
        ks_warn("cannot remove '/%s': %s", KS_MOTD_PATH, strerror(-k));
    if (j && !trial_pending(j) && (k = ks_trial_flag_clear(ctx->root)) < 0)
        ks_warn("cannot remove '/%s': %s", KS_TRIAL_FLAG_PATH, strerror(-k));
}

static int run_status(ks_ctx *ctx, int argc, char **argv)
{
    static const struct option options[] = {
        {"wait", no_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 't'},
        {"ack", no_argument, NULL, 'a'},
        {},
    };
    bool do_wait = false, ack = false, have_timeout = false;
    int timeout_s = 900;
    _cleanup_free_ char *running = NULL;
    ks_findings findings = {0};
    ks_grub_forecast f = {0};
    ks_journal *j = NULL;
    ks_boot b = {0};
    int c, r = KS_EXIT_OK;

    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (c == 'w')
            do_wait = true;
        else if (c == 'a')
            ack = true;
        else if (c == 't' && ks_safe_atoi(optarg, &timeout_s) >= 0 && timeout_s >= 0)
            have_timeout = true;
        else
            return ks_usage_error(&ks_cmd_status,
                                  c == 't' ? "--timeout needs seconds" : "unknown option");
    }
    if (have_timeout && !do_wait)
        return ks_usage_error(&ks_cmd_status, "--timeout goes with --wait");
    if (optind < argc)
        return ks_usage_error(&ks_cmd_status, "unexpected argument '%s'", argv[optind]);

    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/osrelease", &running);
    j = do_wait ? wait_verdict(ctx, timeout_s) : load_journal(ctx);
    if (ack)
        acknowledge(ctx, j);
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
        if (do_wait && r == KS_EXIT_OK)
            r = verdict_exit(j);
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
        if (do_wait)
            r = verdict_exit(j);
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
    .usage = "[--wait [--timeout SECONDS]] [--ack]",
    .flags = KS_READ_ONLY,
};
