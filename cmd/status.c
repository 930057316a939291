/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/cmd.h"
#include "cmd/forecast.h"
#include "cmd/history-output.h"
#include "cmd/swap-output.h"
#include "lib/engine/journal.h"
#include "lib/engine/lock.h"
#include "lib/engine/orphan.h"
#include "lib/engine/trial.h"
#include "lib/engine/update.h"

/* Loads the journal for display; a broken one is reported (its error in *ret_error), never
 * reset. */
static ks_journal *load_journal(const ks_ctx *ctx, char **ret_error)
{
    _cleanup_free_ char *err = NULL;
    ks_journal *j = NULL;
    int r = ks_journal_load(ctx->root, &j, &err);
    if (r < 0) {
        ks_error("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                 err ? err : strerror(-r));
        if (ret_error && !*ret_error)
            *ret_error = err ? TAKE_PTR(err) : strdup(strerror(-r));
    }
    return r < 0 ? NULL : j;
}

static void print_journal(const ks_ctx *ctx, const ks_journal *j)
{
    const char *new = ks_journal_get(j, KS_JF_NEW_KERNEL),
               *old = ks_journal_get(j, KS_JF_OLD_KERNEL);
    const char *reason = ks_journal_get(j, KS_JF_REASON);
    ks_state s = ks_journal_state(j);

    if (s == KS_STATE_IDLE) {
        ks_printf("state: idle (no swap recorded)\n");
        return;
    }
    ks_printf("state: %s", ks_state_to_string(s));
    if (ks_journal_outcome(j) != KS_OUTCOME_NONE)
        ks_printf("%soutcome %s", ctx->sep, ks_outcome_to_string(ks_journal_outcome(j)));
    ks_printf("%sold %s%snew %s\n", ctx->sep, old ? old : "-", ctx->sep, new ? new : "-");
    if (s == KS_STATE_ARMED && ks_journal_armed_at(j))
        ks_printf("armed at %s (boot %s)\n", ks_journal_armed_at(j),
                  strempty(ks_journal_armed_boot_id(j)));
    if (reason && (s == KS_STATE_FAILED || s == KS_STATE_ROLLED_BACK))
        ks_printf("reason: %s\n", reason);
}

/* The exit code of accept for a journal (lib/engine/states.h): 0 trial-ok, 3 failed, 4 nothing
 * judged (yet). */
static int verdict_exit(const ks_journal *j)
{
    return ks_outcome_info_get(j ? ks_journal_outcome(j) : KS_OUTCOME_NONE)->exit_code;
}

/* A trial armed or running without a verdict yet. */
static bool trial_pending(const ks_journal *j)
{
    return !ks_outcome_info_get(ks_journal_outcome(j))->final && ks_journal_armed_boot_id(j) &&
           ks_state_info_get(ks_journal_state(j))->trial;
}

/* Armed on this very boot: no verdict can come before a reboot. */
static bool arming_boot(const ks_journal *j, const char *boot_id)
{
    return j && ks_journal_state(j) == KS_STATE_ARMED && boot_id &&
           streq_ptr(ks_journal_armed_boot_id(j), boot_id);
}

static long long mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec;
}

/*
 * trial-ok on the trial boot while a kswap holds the lock: accept is pinning (it keeps the lock
 * from its verdict through the pin). The answer a fleet waits for is the pin, or its failure.
 */
static bool pin_pending(const ks_ctx *ctx, const ks_journal *j)
{
    _cleanup_lock_ ks_lock *l = NULL;

    if (ks_journal_outcome(j) != KS_OUTCOME_TRIAL_OK ||
        ks_journal_state(j) != KS_STATE_TRIAL_BOOTED)
        return false;
    return ks_lock_acquire_shared(ctx->root, 0, &l, NULL) == -EBUSY;
}

/*
 * --wait: polls the journal until the trial has a final outcome (and a pin that follows a pass
 * is done) or timeout_s passed.
 */
static ks_journal *wait_verdict(const ks_ctx *ctx, int timeout_s, const char *boot_id)
{
    long long deadline = mono_s() + timeout_s;
    bool told = false, told_pin = false;

    for (;;) {
        ks_journal *j = load_journal(ctx, NULL);
        if (!j || mono_s() >= deadline)
            return j;
        if (!trial_pending(j)) {
            if (!pin_pending(ctx, j))
                return j;
            if (!told_pin && !ctx->quiet)
                ks_fprintf(stderr, "[status] %s passed acceptance; waiting for the pin\n",
                           strempty(ks_journal_get(j, KS_JF_NEW_KERNEL)));
            told_pin = true;
        } else if (arming_boot(j, boot_id)) {
            if (!ctx->quiet)
                ks_fprintf(stderr, "[status] no verdict can come on the boot that armed the trial: "
                                   "reboot to start the trial\n");
            return j;
        } else if (!told) {
            if (!ctx->quiet)
                ks_fprintf(stderr, "[status] waiting up to %d s for the verdict on %s\n", timeout_s,
                           strempty(ks_journal_get(j, KS_JF_NEW_KERNEL)));
            told = true;
        }
        ks_journal_free(j);
        sleep(1);
    }
}

/*
 * --ack: the operator has seen the outcome (lib/engine/swap.h, ks_acknowledge): the login line,
 * the trial flag once judged, and a failed swap closed. The only change status makes, and only
 * when asked. Returns the exit code of that part.
 */
static int acknowledge(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_swap_result_ ks_swap_result res = {0};
    _cleanup_free_ char *words = ks_command_words(argc, argv);
    int r;

    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    r = ks_acknowledge(ctx->root, &(ks_swap_common){.config = cfg, .command = words}, &res);
    if (res.status == KS_SWAP_FAILED || res.status == KS_SWAP_BUSY) {
        ks_error("status --ack: %s", res.error ? res.error : strerror(-r));
        return KS_EXIT_ERROR;
    }
    for (size_t i = 0; i < res.findings.n; i++)
        ks_warn("%s", res.findings.v[i].message);
    if (!ctx->quiet)
        ks_fprintf(stderr, "[status] %s\n",
                   res.status == KS_SWAP_ALREADY ? "nothing to acknowledge"
                                                 : "acknowledged: the login line is gone and a "
                                                   "failed swap is closed");
    return KS_EXIT_OK;
}

static const ks_option status_options[] = {
    {"wait", 'w', NULL, "wait for the verdict on the current trial, then exit with its code", NULL},
    {"timeout", 't', "SECONDS", "with --wait: give up after SECONDS (exit 4)", "900"},
    {"ack", 'a', NULL, "clear the login line and, once judged, the trial flag", NULL},
    {"history", 'H', NULL, "the history of past swaps, newest first, instead of the state", NULL},
    {},
};

static int run_status(ks_ctx *ctx, int argc, char **argv)
{
    bool do_wait = false, ack = false, have_timeout = false, have_forecast, history = false;
    int timeout_s = 900, ack_code = KS_EXIT_OK;
    _cleanup_free_ char *running = NULL, *boot_id = NULL, *jerr = NULL, *gerr = NULL,
                        *apply_command = NULL;
    _cleanup_(ks_orphan_trial_done) ks_orphan_trial orphan = {0};
    _cleanup_(ks_update_done) ks_update update = {0};
    bool orphaned = false, drifted = false;
    ks_next next = {0};
    ks_findings findings = {0};
    ks_grub_forecast f = {0};
    ks_journal *j = NULL;
    ks_boot b = {0};
    int c, r = KS_EXIT_OK;

    while ((c = ks_getopt(&ks_cmd_status, argc, argv)) != -1) {
        if (c == 'w')
            do_wait = true;
        else if (c == 'a')
            ack = true;
        else if (c == 'H')
            history = true;
        else if (c == 't' && ks_safe_atoi(optarg, &timeout_s) >= 0 && timeout_s >= 0)
            have_timeout = true;
        else if (c == 't')
            return ks_usage_error(&ks_cmd_status, "option '--timeout' needs seconds, not '%s'",
                                  optarg);
        else
            return KS_EXIT_ERROR;
    }
    if (have_timeout && !do_wait)
        return ks_usage_error(&ks_cmd_status, "option '--timeout' goes with '--wait'");
    if (ack && do_wait)
        return ks_usage_error(&ks_cmd_status,
                              "options '--ack' and '--wait' exclude each other: wait first, "
                              "then 'kswap status --ack'");
    if (optind < argc)
        return ks_usage_error(&ks_cmd_status, "unexpected argument '%s'", argv[optind]);
    if (history && (do_wait || ack))
        return ks_usage_error(&ks_cmd_status, "option '--history' excludes '--wait' and '--ack'");
    if (history)
        return ks_status_history(ctx);

    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/osrelease", &running);
    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/random/boot_id", &boot_id);
    if (ack)
        ack_code = acknowledge(ctx, argc, argv);
    j = do_wait ? wait_verdict(ctx, timeout_s, boot_id) : load_journal(ctx, &jerr);
    have_forecast = ks_collect_forecast(ctx, &b, &f, &findings) >= 0;
    /* A trial in GRUB's setup the journal does not know (lost or damaged): said, with the way
     * out (lib/engine/orphan.h). */
    if (have_forecast) {
        int o = ks_orphan_trial_find(ctx->root, &b, j, &orphan);
        orphaned = o > 0;
        if (orphaned && ks_orphan_trial_finding(&orphan, KS_SEV_WARN, &findings) < 0)
            orphaned = false;
    }
    /* GRUB's next boots against what the journal's state promises (lib/engine/next-step.h). */
    if (have_forecast && j && !ks_state_forecast_holds(j, &f, boot_id)) {
        drifted = true;
        if (ks_findings_add(&findings, "grub.next-boots-changed", KS_SEV_WARN,
                            "run the next step below",
                            "the journal says %s, but the next boots are not the ones kswap set "
                            "up: someone changed grubenv or grub.cfg",
                            ks_state_to_string(ks_journal_state(j))) < 0)
            drifted = false;
    }
    if (!have_forecast) {
        ks_boot nb = {0};
        if (ks_boot_load(ctx->root, &nb, &gerr) >= 0 || !gerr)
            gerr = gerr ? gerr : strdup("cannot forecast the next boots");
        ks_boot_done(&nb);
    }
    /* Day two: a newer release of the node's branch is what comes next (lib/engine/update.h);
     * the engine's rules say when it is (lib/engine/next-step.c). */
    if (j && !do_wait) {
        _cleanup_(ks_config_freep) ks_config *cfg = NULL;
        _cleanup_free_ char *cfg_err = NULL;

        /* An unreadable configuration is the other commands' error: the defaults here. */
        (void)ks_config_load(ctx->root, ctx->config_path, &cfg, &cfg_err);
        if (ks_update_check_node(ctx->root, cfg, &update) >= 0 && update.newest)
            apply_command = ks_command_line(ctx, "apply");
    }
    if (ks_next_step(&(ks_next_input){.j = j,
                                      .journal_error = jerr,
                                      .running = running,
                                      .boot_id = boot_id,
                                      .orphan = orphaned ? &orphan : NULL,
                                      .grub_error = gerr,
                                      .drifted = drifted,
                                      .default_unresolved =
                                          have_forecast && ks_forecast_default_unresolved(&f),
                                      .update_newest = update.newest,
                                      .update_current = update.current,
                                      .update_installed = update.installed,
                                      .update_command = apply_command},
                     &next) < 0)
        next = (ks_next){0};
    ks_next_spell(ctx, &next);
    if (!have_forecast || !j)
        r = KS_EXIT_ERROR; /* a journal that cannot be read is never shown as idle */
    else if (do_wait)
        r = verdict_exit(j);
    else if (ack)
        r = ack_code; /* --ack did what was asked: 0 */
    else
        r = next.exit_code; /* one code per state (lib/engine/next-step.h) */
    if (ctx->json) {
        /* Even when the boot setup cannot be read: the journal, and what went wrong. */
        ks_json_builder jb = {0};
        json_object *o = ks_jb_object(&jb);
        ks_jb_add(&jb, o, "state",
                  ks_jb_string(&jb, !have_forecast || !j
                                        ? "error"
                                        : ks_state_to_string(ks_journal_state(j))));
        ks_jb_add(&jb, o, "error", ks_jb_string(&jb, have_forecast && j ? NULL : ks_first_error()));
        ks_jb_add(&jb, o, "running", ks_jb_string(&jb, running));
        ks_jb_add(&jb, o, "journal", j ? ks_jb_part(&jb, ks_journal_to_json(j)) : NULL);
        ks_jb_add(&jb, o, "grub", have_forecast ? ks_jb_part(&jb, ks_json_grub(&b, &f)) : NULL);
        ks_jb_add(&jb, o, "findings", ks_jb_part(&jb, ks_json_findings(&findings)));
        ks_json_add_next(&jb, o, &next);
        if (j && !do_wait)
            ks_jb_add(&jb, o, "update", ks_jb_part(&jb, ks_json_update(&update, apply_command)));
        if (ks_print_json_built("status", &jb, o) != KS_EXIT_OK)
            r = KS_EXIT_ERROR;
    } else if (!have_forecast) {
        ks_printf("\n");
        ks_print_next(&next);
    } else if (ctx->quiet) {
        /* -q (cron): the state line alone, and what to do when something is to be done. */
        if (j)
            print_journal(ctx, j);
        if (j && next.command)
            ks_print_next(&next);
    } else {
        if (running)
            ks_printf("running: %s\n", running);
        if (j)
            print_journal(ctx, j);
        if (update.newest)
            ks_printf("update: %s%s%s (%s)\n", update.newest, ctx->sep,
                      update.installed ? "installed, not the default" : "in apt's lists",
                      update.seen_in);
        ks_print_forecast(ctx, &b, &f);
        if (findings.n) {
            ks_printf("\n");
            ks_print_findings(ctx, &findings);
        }
        ks_printf("\n");
        ks_print_next(&next);
    }
    ks_next_done(&next);
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
    .usage = "[--wait [--timeout SECONDS]] [--ack] [--history]",
    .flags = KS_READ_ONLY,
    .options = status_options,
    .json_key = "state",
};
