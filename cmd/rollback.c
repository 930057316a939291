/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/swap-output.h"

static const ks_option rollback_options[] = {
    {"purge", 'p', NULL, "also remove the packages, apt source and key kswap installed", NULL},
    {"reboot", 'r', NULL, "reboot when the running kernel is not the old one", NULL},
    {"yes", 'y', NULL, "--purge without asking on a terminal (scripts)", NULL},
    {},
};

/* --purge: what it will remove, on standard error; on a terminal without --yes, a question. */
static bool show_and_ask(const ks_ctx *ctx, bool yes)
{
    _cleanup_swap_result_ ks_swap_result preview = {0};
    char line[32];

    if (ks_rollback_purge_preview(ctx->root, &preview) < 0)
        return true; /* rollback itself says what cannot be read */
    if (!ctx->quiet || (!yes && isatty(STDIN_FILENO))) {
        ks_fprintf(stderr, "rollback --purge will remove%s\n",
                   preview.n_removed ? ":" : " nothing");
        for (size_t i = 0; i < preview.n_removed; i++)
            ks_fprintf(stderr, "  %s %s%s%s%s\n", preview.removed[i].kind,
                       streq(preview.removed[i].kind, "package") ? "" : "/",
                       preview.removed[i].name, preview.removed[i].what ? ": " : "",
                       strempty(preview.removed[i].what));
    }
    if (yes || !isatty(STDIN_FILENO) || preview.n_removed == 0)
        return true;
    ks_fprintf(stderr, "Proceed? [y/N] ");
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

static int run_rollback(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_swap_result_ ks_swap_result res = {0};
    bool purge = false, reboot = false, yes = false;
    int c, r;

    while ((c = ks_getopt(&ks_cmd_rollback, argc, argv)) != -1) {
        switch (c) {
        case 'p':
            purge = true;
            break;
        case 'r':
            reboot = true;
            break;
        case 'y':
            yes = true;
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_rollback, "unexpected argument '%s'", argv[optind]);
    if (yes && !purge)
        return ks_usage_error(&ks_cmd_rollback, "option '--yes' goes with '--purge'");
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    if (purge && !ctx->json && !show_and_ask(ctx, yes)) {
        ks_error("rollback --purge cancelled; nothing changed");
        return KS_EXIT_REFUSED;
    }
    r = ks_rollback(ctx->root,
                    &(ks_swap_common){.config = cfg,
                                      .progress = ks_swap_progress,
                                      .live = isatty(STDERR_FILENO) ? ks_swap_progress_live : NULL,
                                      .trace = ks_swap_trace,
                                      .userdata = ctx},
                    purge, reboot, &res);
    /* A failure is shown like any result (lib/engine/swap.h), unless it has no words. */
    if (r < 0 && !res.error) {
        ks_error("rollback: %s", strerror(-r));
        return KS_EXIT_ERROR;
    }
    return ks_swap_render(ctx, "rollback", &res);
}

const ks_cmd ks_cmd_rollback = {
    .name = "rollback",
    .run = run_rollback,
    .summary = "disarm a pending trial and make the old kernel the default again",
    .usage = "[--purge [--yes]] [--reboot]",
    .flags = KS_NEEDS_ROOT_USER,
    .options = rollback_options,
    .json_key = "result",
};
