/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap check: accept's whole checklist now, on the running kernel; judges and changes nothing. */
#include <getopt.h>

#include "cmd/check-output.h"
#include "cmd/swap-output.h"
#include "lib/engine/accept.h"

static int run_check(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    ks_check_now_result res = {0};
    int c, r, exit_code;

    while ((c = ks_getopt(&ks_cmd_check, argc, argv)) != -1)
        return KS_EXIT_ERROR; /* ks_getopt said what was wrong */
    if (optind < argc)
        return ks_usage_error(&ks_cmd_check, "unexpected argument '%s'", argv[optind]);
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    r = ks_check_now(ctx->root, cfg, &res);
    if (r < 0) {
        ks_error("check: %s", res.error ? res.error : strerror(-r));
        ks_check_now_result_done(&res);
        return KS_EXIT_ERROR;
    }
    exit_code = res.passed ? KS_EXIT_OK : KS_EXIT_ACCEPT_FAILED;
    if (ctx->json) {
        ks_json_builder b = {0};
        json_object *o = ks_jb_object(&b);
        ks_jb_add(&b, o, "kernel", ks_jb_string(&b, res.kernel));
        ks_jb_add(&b, o, "passed", ks_jb_bool(&b, res.passed));
        ks_jb_add(&b, o, "checks", ks_jb_part(&b, ks_json_checks(&res.checks)));
        ks_jb_add(&b, o, "snapshot_items", ks_jb_int(&b, res.n_items));
        ks_jb_add(&b, o, "not_snapshotted", ks_jb_strv(&b, res.not_snapshotted));
        ks_jb_add(&b, o, "established", ks_jb_int(&b, res.established));
        if (ks_print_json_built("check", &b, o) != KS_EXIT_OK)
            exit_code = KS_EXIT_ERROR;
    } else {
        ks_printf("checklist on %s: %s\n", strempty(res.kernel),
                  res.passed ? "every required check passes" : "a required check FAILS");
        for (size_t i = 0; i < res.checks.n; i++) {
            const ks_check *x = &res.checks.v[i];
            /* -q keeps what is wrong: the required checks that fail. */
            if (ctx->quiet && !(x->required && x->status == KS_CHECK_FAIL))
                continue;
            ks_printf("  %-4s %s%s: %s\n", ks_check_status_to_string(x->status), x->id,
                      x->required ? "" : " (wanted)", strempty(x->detail));
        }
        if (!ctx->quiet)
            ks_printf("what runs now: %u items, %u established connections\n", res.n_items,
                      res.established);
        for (char **p = res.not_snapshotted; p && *p && !ctx->quiet; p++)
            ks_printf("  not snapshotted: %s\n", *p);
    }
    ks_check_now_result_done(&res);
    return exit_code;
}

const ks_cmd ks_cmd_check = {
    .name = "check",
    .run = run_check,
    .summary = "run accept's whole checklist now, on the running kernel (changes nothing)",
    .usage = "",
    .flags = KS_READ_ONLY,
};
