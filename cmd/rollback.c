/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/swap-output.h"

static const ks_option rollback_options[] = {
    {"purge", 'p', NULL, "also remove the packages, apt source and key kswap installed", NULL},
    {"reboot", 'r', NULL, "reboot when the running kernel is not the old one", NULL},
    {},
};

static int run_rollback(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_swap_result_ ks_swap_result res = {0};
    _cleanup_free_ char *words = ks_command_words(argc, argv);
    bool purge = false, reboot = false;
    int c, r;

    while ((c = ks_getopt(&ks_cmd_rollback, argc, argv)) != -1) {
        switch (c) {
        case 'p':
            purge = true;
            break;
        case 'r':
            reboot = true;
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_rollback, "unexpected argument '%s'", argv[optind]);
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    r = ks_rollback(ctx->root,
                    &(ks_swap_common){.config = cfg,
                                      .command = words,
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
    .usage = "[--purge] [--reboot]",
    .flags = KS_NEEDS_ROOT_USER,
    .options = rollback_options,
    .json_key = "result",
};
