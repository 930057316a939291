/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/swap-output.h"

static bool confirm(const ks_ctx *ctx)
{
    char line[32];

    fprintf(stderr, "kswap apply will make the running kernel GRUB's default, install and verify "
                    "the new kernel and arm ONE trial boot of it.\nProceed? [y/N] ");
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

static int run_apply(ks_ctx *ctx, int argc, char **argv)
{
    static const struct option options[] = {
        {"kernel", required_argument, NULL, 'k'}, {"deb", required_argument, NULL, 'd'},
        {"package", required_argument, NULL, 'p'}, {"branch", required_argument, NULL, 'b'},
        {"key", required_argument, NULL, 'K'},    {"yes", no_argument, NULL, 'y'},
        {"reboot", no_argument, NULL, 'r'},       {},
    };
    ks_apply_opts o = {.branch = KS_BRANCH_LTS};
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_swap_result_ ks_swap_result r = {0};
    bool yes = false;
    int c, k, n = 0;

    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'k':
            o.kernel = optarg;
            n++;
            break;
        case 'd':
            o.deb = optarg;
            n++;
            break;
        case 'p':
            o.package = optarg;
            n++;
            break;
        case 'b':
            o.branch = ks_branch_from_string(optarg);
            if (o.branch < 0)
                return ks_usage_error(&ks_cmd_apply, "unknown branch '%s': use lts or main",
                                      optarg);
            break;
        case 'K':
            o.key_path = optarg;
            break;
        case 'y':
            yes = true;
            break;
        case 'r':
            o.reboot = true;
            break;
        default:
            return ks_usage_error(&ks_cmd_apply, "unknown option");
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_apply, "unexpected argument '%s'", argv[optind]);
    if (n > 1)
        return ks_usage_error(&ks_cmd_apply, "give one of --kernel, --deb and --package");
    if (!yes) {
        /* A bootstrap script without --yes must not hang waiting for an answer. */
        if (!isatty(STDIN_FILENO)) {
            ks_error("apply changes the boot setup: pass --yes when no one can answer");
            return KS_EXIT_REFUSED;
        }
        if (!confirm(ctx)) {
            ks_error("apply cancelled; nothing changed");
            return KS_EXIT_REFUSED;
        }
    }
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    o.common = (ks_swap_common){.config = cfg, .progress = ks_swap_progress,
                           .progress_fd = ks_swap_progress_fd(), .userdata = ctx};
    k = ks_apply(ctx->root, &o, &r);
    /* A failure is shown like any result (lib/engine/swap.h), unless it has no words. */
    if (k < 0 && !r.error) {
        ks_error("apply: %s", strerror(-k));
        return KS_EXIT_ERROR;
    }
    k = ks_swap_render(ctx, "apply", &r);
    if (r.status == KS_SWAP_DONE && !r.rebooting && !ctx->json)
        printf("\nReboot to start the trial (systemctl reboot); 'kswap rollback' cancels it.\n");
    return k;
}

const ks_cmd ks_cmd_apply = {
    .name = "apply",
    .run = run_apply,
    .summary = "keep the old kernel as default, install and verify the new one, arm one trial boot",
    .usage = "[--kernel RELEASE | --deb FILE | --package NAME] [--branch lts|main] [--key FILE] "
             "[--yes] [--reboot]",
    .flags = KS_NEEDS_ROOT_USER,
};
