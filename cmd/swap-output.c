/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How apply, pin and rollback report: the journal, findings, the forecast, an exit code. */
#include <sys/ioctl.h>

#include "cmd/dryrun-output.h"
#include "lib/basic/escape.h"
#include "cmd/forecast.h"
#include "cmd/swap-output.h"

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double start, step_start;
static char last_step[32];
static bool live_shown; /* a live line is on the terminal, without its newline */

static void live_clear(void)
{
    if (live_shown)
        ks_fprintf(stderr, "\r\033[K");
    live_shown = false;
}

/* -v: the duration of the last step, once the command is done. */
static void progress_end(const ks_ctx *ctx)
{
    if (ctx->verbose && !ctx->quiet && last_step[0])
        ks_fprintf(stderr, "[%s] took %.1f s\n", last_step, mono_now() - step_start);
    last_step[0] = '\0';
}

void ks_swap_progress(void *userdata, const char *step, const char *message)
{
    const ks_ctx *ctx = userdata;
    double now = mono_now();

    if (start == 0)
        start = step_start = now;
    if (ctx->quiet)
        return;
    live_clear();
    /* -v: how long the step before took, once it is over. */
    if (ctx->verbose && last_step[0] && !streq(last_step, step))
        ks_fprintf(stderr, "[%s] took %.1f s\n", last_step, now - step_start);
    if (!streq(last_step, step)) {
        snprintf(last_step, sizeof(last_step), "%s", step);
        step_start = now;
    }
    /* Progress goes to stderr, so --json keeps stdout to one document; the elapsed seconds
     * since the first step tell a log reader where the time went. */
    ks_fprintf(stderr, "%s[%s]%s %s (%.0f s)\n", ks_bold(ctx->stderr_color), step,
               ks_bold_end(ctx->stderr_color), message, now - start);
}

void ks_swap_progress_live(void *userdata, const char *step, const char *message)
{
    const ks_ctx *ctx = userdata;
    double now = mono_now();
    _cleanup_free_ char *line = NULL;
    struct winsize ws = {0};
    int width;

    if (ctx->quiet)
        return;
    if (start == 0)
        start = step_start = now;
    /* One terminal line, rewritten in place: cut to the width so it never wraps. */
    width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col - 1 : 79;
    line = ks_asprintf("[%s] %s (%.0f s)", step, message, now - start);
    ks_fprintf(stderr, "\r\033[K%.*s", width, line);
    fflush(stderr);
    live_shown = true;
}

void ks_swap_trace(void *userdata, const char *what, const char *message)
{
    const ks_ctx *ctx = userdata;

    if (!ctx->verbose || ctx->quiet)
        return;
    live_clear();
    ks_fprintf(stderr, "  %s %s\n", what, message);
}

static bool failed_outcome(ks_outcome o)
{
    return o == KS_OUTCOME_HEALTH_FAILED || o == KS_OUTCOME_FELL_BACK;
}

ks_next ks_next_step(const ks_journal *j, const char *running, const char *boot_id)
{
    ks_state s = j ? ks_journal_state(j) : KS_STATE_IDLE;
    ks_outcome o = j ? ks_journal_outcome(j) : KS_OUTCOME_NONE;
    const char *old = j ? ks_journal_get(j, KS_JF_OLD_KERNEL) : NULL;
    const char *new = j ? ks_journal_get(j, KS_JF_NEW_KERNEL) : NULL;
    const char *armed = j ? ks_journal_armed_boot_id(j) : NULL;

    old = old ? old : "the old kernel";
    new = new ? new : "the new kernel";
    switch (s) {
    case KS_STATE_IDLE:
        return (ks_next){"kswap plan", ks_asprintf("assess this host, then 'kswap apply'"), 0};
    case KS_STATE_PREPARED:
    case KS_STATE_INSTALLED:
    case KS_STATE_VERIFIED:
        return (ks_next){"kswap apply --yes",
                         ks_asprintf("an apply stopped after '%s': running it again resumes; "
                                     "'kswap rollback' undoes it",
                                     ks_state_to_string(s)),
                         KS_EXIT_NOTHING};
    case KS_STATE_ARMED:
        if (armed && boot_id && streq(armed, boot_id))
            return (ks_next){"kswap apply --reboot",
                             ks_asprintf("reboot to start the trial of %s (kswap looks at what "
                                         "the next boots load first); 'kswap rollback' cancels it",
                                         new),
                             KS_EXIT_NOTHING};
        __attribute__((fallthrough));
    case KS_STATE_TRIAL_BOOTED:
        if (o == KS_OUTCOME_TRIAL_OK && running && j && ks_journal_get(j, KS_JF_NEW_KERNEL) &&
            !streq(running, new))
            return (ks_next){"kswap apply",
                             ks_asprintf("acceptance passed on %s, but the machine restarted "
                                         "before it was pinned and %s runs: apply tries it "
                                         "again, 'kswap pin --force' pins it without a trial",
                                         new, running),
                             KS_EXIT_ACCEPT_FAILED};
        if (o == KS_OUTCOME_TRIAL_OK)
            return (ks_next){"kswap pin",
                             ks_asprintf("acceptance passed on %s but it is not pinned yet", new),
                             KS_EXIT_OK};
        return (ks_next){"kswap status --wait",
                         ks_asprintf("the trial boot of %s waits for kswap-accept.service's "
                                     "verdict (journalctl -u kswap-accept.service)",
                                     new),
                         KS_EXIT_NOTHING};
    case KS_STATE_PINNED:
        if (running && !streq(running, new))
            return (ks_next){"systemctl reboot",
                             ks_asprintf("%s is pinned but %s runs", new, running), KS_EXIT_OK};
        return (ks_next){NULL, ks_asprintf("nothing to do: %s starts on every boot", new),
                         KS_EXIT_OK};
    case KS_STATE_FAILED:
        return (ks_next){"kswap rollback",
                         ks_asprintf("the swap to %s failed (see the reason): rollback makes %s "
                                     "the default again, --purge also removes what was installed",
                                     new, old),
                         KS_EXIT_ACCEPT_FAILED};
    case KS_STATE_ROLLED_BACK:
        if (running && !streq(running, old))
            return (ks_next){"kswap rollback --reboot",
                             ks_asprintf("%s is the default again but %s still runs (kswap looks "
                                         "at what the next boots load before it reboots)",
                                         old, running),
                             failed_outcome(o) ? KS_EXIT_ACCEPT_FAILED : KS_EXIT_OK};
        if (failed_outcome(o))
            return (ks_next){"journalctl -b -1 -p warning",
                             ks_asprintf("the trial of %s failed (%s) and %s runs again: read "
                                         "why, then 'kswap apply' again or 'kswap rollback "
                                         "--purge'",
                                         new, ks_outcome_to_string(o), old),
                             KS_EXIT_ACCEPT_FAILED};
        return (ks_next){
            "kswap rollback --purge",
            ks_asprintf("%s is the default; --purge removes what kswap installed", old),
            KS_EXIT_OK};
    default:
        return (ks_next){"kswap status", ks_asprintf("unknown state"), KS_EXIT_ERROR};
    }
}

void ks_print_next(const ks_next *n)
{
    if (n->command)
        ks_printf("next: %s  (%s)\n", n->command, strempty(n->why));
    else
        ks_printf("next: %s\n", strempty(n->why));
}

void ks_json_add_next(ks_json_builder *b, json_object *o, const ks_next *n)
{
    ks_jb_add(b, o, "next", ks_jb_string(b, n->command));
    ks_jb_add(b, o, "next_reason", ks_jb_string(b, n->why));
}

int ks_swap_config(const ks_ctx *ctx, ks_config **ret)
{
    _cleanup_free_ char *err = NULL;
    int r = ks_config_load(ctx->root, ctx->config_path, ret, &err);
    if (r < 0)
        ks_error("cannot read the configuration: %s", err ? err : strerror(-r));
    return r;
}

int ks_swap_render(const ks_ctx *ctx, const char *what, const ks_swap_result *r)
{
    _cleanup_free_ char *running = NULL, *boot_id = NULL;
    ks_boot b = {0};
    ks_grub_forecast f = {0};
    bool have_forecast;
    ks_next next;
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
    live_clear();
    progress_end(ctx);
    /* Whatever happened, show what the next boots will be: that is what an operator needs. */
    have_forecast = ks_collect_forecast(ctx, &b, &f, NULL) >= 0;
    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/osrelease", &running);
    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/random/boot_id", &boot_id);
    if (r->status == KS_SWAP_BUSY)
        next = (ks_next){NULL,
                         ks_asprintf("another kswap holds the lock: run this again when it "
                                     "is done"),
                         exit_code};
    else if (r->status == KS_SWAP_REFUSED && ks_findings_get(&r->findings, "accept.fails-now"))
        next = (ks_next){"kswap check",
                         ks_asprintf("accept's checklist fails on this kernel: see which check, "
                                     "fix it or leave it out ([accept] ignore), then apply"),
                         exit_code};
    else if (r->dry && r->status == KS_SWAP_DONE)
        next = (ks_next){"kswap apply --yes",
                         ks_asprintf("the same without --dry-run makes these changes"), exit_code};
    else if (r->rebooting)
        next = (ks_next){"kswap status --wait",
                         ks_asprintf("after the reboot: wait for the "
                                     "verdict"),
                         exit_code};
    else
        next = ks_next_step(r->journal, running, boot_id);

    if (ctx->json) {
        ks_json_builder jb = {0};
        json_object *o =
            r->journal ? ks_jb_part(&jb, ks_journal_to_json(r->journal)) : ks_jb_object(&jb);

        ks_jb_add(&jb, o, "result",
                  ks_jb_string(&jb, r->status == KS_SWAP_DONE && r->dry ? "dry-run"
                                    : r->status == KS_SWAP_DONE         ? "done"
                                    : r->status == KS_SWAP_ALREADY      ? "unchanged"
                                    : r->status == KS_SWAP_REFUSED      ? "refused"
                                    : r->status == KS_SWAP_BUSY         ? "busy"
                                                                        : "failed"));
        ks_jb_add(&jb, o, "error", ks_jb_string(&jb, r->status == KS_SWAP_DONE ? NULL : r->error));
        ks_jb_add(&jb, o, "output", ks_jb_string(&jb, r->output));
        ks_jb_add(&jb, o, "findings", ks_jb_part(&jb, ks_json_findings(&r->findings)));
        ks_jb_add(&jb, o, "grub", have_forecast ? ks_jb_part(&jb, ks_json_grub(&b, &f)) : NULL);
        if (r->dry)
            ks_jb_add(&jb, o, "dry_run",
                      r->status == KS_SWAP_DONE ? ks_jb_part(&jb, ks_json_dryrun(r->dry)) : NULL);
        if (streq(what, "rollback"))
            ks_jb_add(&jb, o, "removed", ks_jb_part(&jb, ks_json_removed(r)));
        ks_json_add_next(&jb, o, &next);
        if (ks_print_json_built(what, &jb, o) != KS_EXIT_OK)
            exit_code = KS_EXIT_ERROR;
    } else {
        if (r->findings.n > 0) {
            ks_print_findings(ctx, &r->findings);
            ks_printf("\n");
        }
        if (r->status == KS_SWAP_DONE && r->dry)
            ks_print_dryrun(ctx, r->dry);
        else if (r->status == KS_SWAP_DONE && r->purged)
            ks_print_removed(r);
        if (r->status == KS_SWAP_DONE && r->dry)
            ks_printf("\n%s --dry-run: apply would go ahead; the forecast below is of now\n", what);
        else if (r->status == KS_SWAP_DONE && r->purged && r->n_removed == 0)
            ks_printf("%s: done, nothing was removed\n", what);
        else if (r->status == KS_SWAP_DONE)
            ks_printf("%s: done%s\n", what, r->rebooting ? "; rebooting now" : "");
        else if (r->status == KS_SWAP_ALREADY)
            ks_printf("%s: nothing changed: %s\n", what, strempty(r->error));
        if (have_forecast)
            ks_print_forecast(ctx, &b, &f);
        ks_printf("\n");
        ks_print_next(&next);
        if (r->output && r->status == KS_SWAP_FAILED)
            ks_fprintf(stderr, "--- output of the failed program ---\n%s%s", r->output,
                       ks_endswith(r->output, "\n") ? "" : "\n");
    }
    if (r->status != KS_SWAP_DONE && r->status != KS_SWAP_ALREADY)
        ks_error("%s: %s", what, strempty(r->error));
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    free(next.why);
    return exit_code;
}
