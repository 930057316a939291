/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/swap-output.h"

static bool confirm(const ks_ctx *ctx, const ks_apply_opts *o)
{
    char line[32];

    ks_fprintf(stderr,
               "kswap apply on %s will make the running kernel GRUB's default, install and verify "
               "%s%s and arm ONE trial boot of it.\nProceed? [y/N] ",
               ks_root_is_host(ctx->root) ? "this machine" : ks_root_path(ctx->root),
               o->deb       ? "the package "
               : o->package ? "the package "
               : o->kernel  ? "the kernel "
                            : "",
               o->deb       ? o->deb
               : o->package ? o->package
               : o->kernel  ? o->kernel
                            : "the XanMod package that fits the CPU");
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

static const ks_option apply_options[] = {
    {"kernel", 'k', "RELEASE", "this kernel release: installed, or installed from the repository",
     "the XanMod package that fits the CPU"},
    {"deb", 'd', "FILE", "install this kernel package (a path on this machine)", NULL},
    {"package", 'p', "NAME", "install this package from the XanMod repository", NULL},
    {"branch", 'b', "lts|main", "XanMod's LTS or main packages", "lts"},
    {"key", 'K', "FILE", "the repository's signing key (its fingerprint must be the pinned one)",
     "[repository] key, else the shipped XanMod key"},
    {"yes", 'y', NULL, "do not ask; needed when standard input is not a terminal", NULL},
    {"reboot", 'r', NULL, "reboot into the trial at once when armed", NULL},
    {"dry-run", 'n', NULL,
     "show everything apply would do (packages, files with their content, programs, the "
     "forecast after arming) and change nothing",
     NULL},
    {},
};

static int run_apply(ks_ctx *ctx, int argc, char **argv)
{
    ks_apply_opts o = {.branch = KS_BRANCH_LTS};
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_swap_result_ ks_swap_result res = {0};
    bool yes = false, branch = false, dry = false;
    int c, r, n = 0;

    while ((c = ks_getopt(&ks_cmd_apply, argc, argv)) != -1) {
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
            branch = true;
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
        case 'n':
            dry = true;
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_apply, "unexpected argument '%s'", argv[optind]);
    if (n > 1)
        return ks_usage_error(&ks_cmd_apply,
                              "options '--kernel', '--deb' and '--package' exclude each other");
    if (o.deb && o.key_path)
        return ks_usage_error(&ks_cmd_apply, "options '--deb' and '--key' exclude each other: a "
                                             "local package needs no repository key");
    if (branch && (o.deb || o.package))
        return ks_usage_error(&ks_cmd_apply,
                              "option '--branch' excludes '--%s': the package "
                              "is named already",
                              o.deb ? "deb" : "package");
    /* Without the unit nothing judges the trial boot: refuse before anything changes. */
    {
        ks_findings unit = {0};
        r = ks_accept_unit_finding(ctx, &unit);
        if (r == 0) {
            ks_error("%s; nothing changed. To fix: %s; then apply again", unit.v[0].message,
                     unit.v[0].remedy);
            ks_findings_clear(&unit);
            return KS_EXIT_REFUSED;
        }
        ks_findings_clear(&unit);
    }
    /* A dry run changes nothing: no question to answer. */
    if (!yes && !dry) {
        /* A bootstrap script without --yes must not hang waiting for an answer. */
        if (!isatty(STDIN_FILENO)) {
            ks_error("apply changes the boot setup: pass --yes when no one can answer");
            return KS_EXIT_REFUSED;
        }
        if (!confirm(ctx, &o)) {
            ks_error("apply cancelled; nothing changed");
            return KS_EXIT_REFUSED;
        }
    }
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    o.common = (ks_swap_common){.config = cfg,
                                .progress = ks_swap_progress,
                                .live = isatty(STDERR_FILENO) ? ks_swap_progress_live : NULL,
                                .trace = ks_swap_trace,
                                .userdata = ctx};
    r = dry ? ks_apply_dry_run(ctx->root, &o, &res) : ks_apply(ctx->root, &o, &res);
    /* A failure is shown like any result (lib/engine/swap.h), unless it has no words. */
    if (r < 0 && !res.error) {
        ks_error("apply: %s", strerror(-r));
        return KS_EXIT_ERROR;
    }
    r = ks_swap_render(ctx, "apply", &res);
    if (res.status == KS_SWAP_DONE && !res.rebooting && !ctx->json && !dry)
        ks_printf(
            "\nReboot to start the trial ('kswap apply --reboot' looks at what the next boots "
            "load first); 'kswap rollback' cancels it.\n");
    return r;
}

const ks_cmd ks_cmd_apply = {
    .name = "apply",
    .run = run_apply,
    .summary = "keep the old kernel as default, install and verify the new one, arm one trial boot",
    .usage = "[--kernel RELEASE | --deb FILE | --package NAME] [--branch lts|main] [--key FILE] "
             "[--yes] [--reboot] [--dry-run]",
    .flags = KS_NEEDS_ROOT_USER,
    .options = apply_options,
    .json_key = "result",
};
