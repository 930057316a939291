/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How apply, pin and rollback report: the journal, findings, the forecast, an exit code. */
#include <sys/ioctl.h>

#include "cmd/dryrun-output.h"
#include "lib/basic/escape.h"
#include "cmd/forecast.h"
#include "cmd/swap-output.h"
#include "lib/engine/apply-source.h"

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

char *ks_command_words(int argc, char **argv)
{
    char *line = NULL;

    for (int i = 0; i < argc; i++) {
        _cleanup_free_ char *q = ks_shell_quote(argv[i]);
        char *n = q ? ks_asprintf("%s%s%s", strempty(line), line ? " " : "", q) : NULL;
        free(line);
        line = n;
        if (!line)
            return NULL;
    }
    return line;
}

int ks_next_for_journal(const ks_ctx *ctx, const ks_journal *j, const ks_orphan_trial *orphan,
                        const char *journal_error, ks_next *ret)
{
    _cleanup_free_ char *running = NULL, *boot_id = NULL;

    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/osrelease", &running);
    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/random/boot_id", &boot_id);
    return ks_next_step(&(ks_next_input){.j = j,
                                         .journal_error = journal_error,
                                         .running = running,
                                         .boot_id = boot_id,
                                         .orphan = orphan},
                        ret);
}

void ks_next_spell(const ks_ctx *ctx, ks_next *n)
{
    char *spelled;

    /* "kswap --root R ..." (day two's update command) is spelled for this run already. */
    if (!n->command || !ks_startswith(n->command, "kswap ") ||
        ks_startswith(n->command, "kswap --"))
        return;
    spelled = ks_command_line(ctx, n->command + strlen("kswap "));
    if (!spelled)
        return; /* out of memory: the step as the engine gave it */
    free(n->command);
    n->command = spelled;
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
    ks_boot b = {0};
    ks_grub_forecast f = {0};
    bool have_forecast;
    ks_next next = {0};
    int exit_code;

    switch (r->status) {
    case KS_SWAP_DONE:
    case KS_SWAP_ALREADY:
        exit_code = KS_EXIT_OK;
        break;
    case KS_SWAP_REFUSED:
    case KS_SWAP_BLOCKED:
        exit_code = KS_EXIT_REFUSED;
        break;
    default:
        exit_code = KS_EXIT_ERROR;
    }
    live_clear();
    progress_end(ctx);
    /* Whatever happened, show what the next boots will be: that is what an operator needs. */
    have_forecast = ks_collect_forecast(ctx, &b, &f, NULL) >= 0;
    /* What the result itself calls for; else the journal's state (lib/engine/next-step.h). */
    if (r->status == KS_SWAP_BUSY)
        next = (ks_next){NULL,
                         ks_asprintf("another kswap holds the lock: run this again when it "
                                     "is done"),
                         exit_code};
    else if (r->status == KS_SWAP_REFUSED && ks_findings_get(&r->findings, "accept.fails-now"))
        next = (ks_next){strdup("kswap check"),
                         ks_asprintf("accept's checklist fails on this kernel: see which check, "
                                     "fix it or leave it out ([accept] ignore), then apply"),
                         exit_code};
    else if (r->dry && r->status == KS_SWAP_DONE)
        next = (ks_next){r->dry->apply_command ? strdup(r->dry->apply_command) : NULL,
                         ks_asprintf("the same without --dry-run makes these changes"), exit_code};
    else if (r->rebooting)
        next = (ks_next){strdup("kswap status --wait"),
                         ks_asprintf("after the reboot: wait for the verdict"), exit_code};
    else if (ks_next_for_journal(ctx, r->journal, NULL, NULL, &next) < 0)
        next = (ks_next){0};
    ks_next_spell(ctx, &next);

    if (ctx->json) {
        ks_json_builder jb = {0};
        json_object *o =
            r->journal ? ks_jb_part(&jb, ks_journal_to_json(r->journal)) : ks_jb_object(&jb);

        ks_jb_add(&jb, o, "result",
                  ks_jb_string(&jb, r->status == KS_SWAP_DONE && r->dry
                                        ? "dry-run"
                                        : ks_swap_status_to_string(r->status)));
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
    ks_next_done(&next);
    return exit_code;
}
