/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap check: accept's whole checklist now, on the running kernel; judges and changes nothing. */
#include <getopt.h>

#include "cmd/check-output.h"
#include "cmd/swap-output.h"
#include "lib/engine/accept.h"

static int run_check(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    ks_check_now_result r = {0};
    int c, k, exit_code;

    while ((c = ks_getopt(&ks_cmd_check, argc, argv)) != -1)
        return KS_EXIT_ERROR; /* ks_getopt said what was wrong */
    if (optind < argc)
        return ks_usage_error(&ks_cmd_check, "unexpected argument '%s'", argv[optind]);
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    k = ks_check_now(ctx->root, cfg, &r);
    if (k < 0) {
        ks_error("check: %s", r.error ? r.error : strerror(-k));
        ks_check_now_result_done(&r);
        return KS_EXIT_ERROR;
    }
    exit_code = r.passed ? KS_EXIT_OK : KS_EXIT_ACCEPT_FAILED;
    if (ctx->json) {
        json_object *o = json_object_new_object(), *sk = json_object_new_array();
        json_object_object_add(o, "kernel", ks_json_string_or_null(r.kernel));
        json_object_object_add(o, "passed", json_object_new_boolean(r.passed));
        json_object_object_add(o, "checks", ks_json_checks(&r.checks));
        json_object_object_add(o, "snapshot_items", json_object_new_int64(r.n_items));
        for (char **p = r.not_snapshotted; p && *p; p++)
            json_object_array_add(sk, json_object_new_string(*p));
        json_object_object_add(o, "not_snapshotted", sk);
        json_object_object_add(o, "established", json_object_new_int64(r.established));
        if (ks_print_json(o) != KS_EXIT_OK)
            exit_code = KS_EXIT_ERROR;
        json_object_put(o);
    } else {
        printf("checklist on %s: %s\n", strempty(r.kernel),
               r.passed ? "every required check passes" : "a required check FAILS");
        for (size_t i = 0; i < r.checks.n; i++) {
            const ks_check *x = &r.checks.v[i];
            printf("  %-4s %s%s: %s\n", ks_check_status_to_string(x->status), x->id,
                   x->required ? "" : " (wanted)", strempty(x->detail));
        }
        printf("what runs now: %u items, %u established connections\n", r.n_items, r.established);
        for (char **p = r.not_snapshotted; p && *p; p++)
            printf("  not snapshotted: %s\n", *p);
    }
    ks_check_now_result_done(&r);
    return exit_code;
}

const ks_cmd ks_cmd_check = {
    .name = "check",
    .run = run_check,
    .summary = "run accept's whole checklist now, on the running kernel (changes nothing)",
    .usage = "",
    .flags = KS_READ_ONLY,
};
