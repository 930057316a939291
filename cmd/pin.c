/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/swap-output.h"

static const ks_option pin_options[] = {
    {"force", 'f', NULL, "pin even when acceptance did not pass on the running kernel", NULL},
    {},
};

static int run_pin(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_swap_result_ ks_swap_result res = {0};
    _cleanup_free_ char *words = ks_command_words(argc, argv);
    bool force = false;
    int c, r;

    while ((c = ks_getopt(&ks_cmd_pin, argc, argv)) != -1) {
        if (c != 'f')
            return KS_EXIT_ERROR;
        force = true;
    }
    if (argc - optind > 1)
        return ks_usage_error(&ks_cmd_pin, "give at most one kernel release");
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    r = ks_pin(ctx->root,
               &(ks_swap_common){.config = cfg,
                                 .command = words,
                                 .progress = ks_swap_progress,
                                 .live = isatty(STDERR_FILENO) ? ks_swap_progress_live : NULL,
                                 .trace = ks_swap_trace,
                                 .userdata = ctx},
               optind < argc ? argv[optind] : NULL, force, &res);
    /* A failure is shown like any result (lib/engine/swap.h), unless it has no words. */
    if (r < 0 && !res.error) {
        ks_error("pin: %s", strerror(-r));
        return KS_EXIT_ERROR;
    }
    return ks_swap_render(ctx, "pin", &res);
}

const ks_cmd ks_cmd_pin = {
    .name = "pin",
    .run = run_pin,
    .summary = "make the accepted trial kernel (or RELEASE) the default on every boot",
    .usage = "[RELEASE] [--force]",
    .flags = KS_NEEDS_ROOT_USER,
    .options = pin_options,
    .json_key = "result",
};
