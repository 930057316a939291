/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/cmd.h"
#include "lib/engine/journal.h"
#include "lib/engine/metrics-file.h"

static const ks_option metrics_options[] = {
    {},
};

/*
 * kswap.prom anew, now: what the state journal says and whether a newer release of the node's
 * branch is there. The package's apt hook runs it after apt-get update and after dpkg ran, so
 * that an update shows in the metrics without waiting for the next swap.
 */
static int run_metrics(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_free_ char *cfg_err = NULL, *jerr = NULL, *err = NULL, *file = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    const char *dir;
    int c, r;

    while ((c = ks_getopt(&ks_cmd_metrics, argc, argv)) != -1)
        return KS_EXIT_ERROR;
    if (optind < argc)
        return ks_usage_error(&ks_cmd_metrics, "unexpected argument '%s'", argv[optind]);
    r = ks_config_load(ctx->root, ctx->config_path, &cfg, &cfg_err);
    if (r < 0) {
        ks_error("cannot read the configuration: %s", cfg_err ? cfg_err : strerror(-r));
        return KS_EXIT_ERROR;
    }
    r = ks_journal_load(ctx->root, &j, &jerr);
    if (r < 0) {
        ks_error("cannot read the state journal '/%s': %s", KS_JOURNAL_PATH,
                 jerr ? jerr : strerror(-r));
        return KS_EXIT_ERROR;
    }
    dir = ks_metrics_textfile_dir(cfg);
    r = dir && *dir ? ks_metrics_write(ctx->root, dir, j, cfg, &err) : 0;
    if (r < 0) {
        ks_error("%s", err ? err : strerror(-r));
        return KS_EXIT_ERROR;
    }
    file = r > 0 ? ks_asprintf("%s/%s", streq(dir, "/") ? "" : dir, KS_METRICS_FILE) : NULL;
    if (ctx->json) {
        ks_json_builder b = {0};
        json_object *o = ks_jb_object(&b);
        ks_jb_add(&b, o, "result", ks_jb_string(&b, r > 0 ? "written" : "off"));
        ks_jb_add(&b, o, "file", ks_jb_string(&b, file));
        ks_jb_add(&b, o, "textfile_dir", ks_jb_string(&b, dir));
        return ks_print_json_built("metrics", &b, o);
    }
    if (ctx->quiet)
        return KS_EXIT_OK;
    if (r > 0)
        ks_printf("wrote %s\n", file);
    else if (dir && *dir)
        ks_printf("metrics off: '%s' does not exist (kswap never creates it)\n", dir);
    else
        ks_printf("metrics off: [metrics] textfile_dir is empty\n");
    return KS_EXIT_OK;
}

const ks_cmd ks_cmd_metrics = {
    .name = "metrics",
    .run = run_metrics,
    .summary = "write kswap.prom for node_exporter now (the apt hook runs it after apt)",
    .usage = "",
    .flags = KS_NEEDS_ROOT_USER,
    .options = metrics_options,
    .json_key = "result",
};
