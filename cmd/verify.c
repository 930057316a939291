/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/cmd.h"
#include "lib/kernel/verify.h"

json_object *ks_json_verify(const ks_verify_result *r)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *mods = ks_jb_array(&b);

    ks_jb_add(&b, o, "kernel", ks_jb_string(&b, r->release));
    ks_jb_add(&b, o, "source", ks_jb_string(&b, ks_verify_source_to_string(r->source)));
    for (size_t i = 0; i < r->n_modules; i++) {
        const ks_module_report *m = &r->modules[i];
        json_object *j = ks_jb_object(&b);
        ks_jb_add(&b, j, "name", ks_jb_string(&b, m->name));
        ks_jb_add(&b, j, "state", ks_jb_string(&b, ks_module_state_to_string(m->state)));
        ks_jb_add(&b, j, "version", ks_jb_string(&b, m->version));
        ks_jb_add(&b, j, "file", ks_jb_string(&b, m->file));
        ks_jb_add(&b, j, "missing_deps", ks_jb_strv(&b, m->missing_deps));
        ks_jb_push(&b, mods, j);
    }
    ks_jb_add(&b, o, "modules", mods);
    ks_jb_add(&b, o, "bbr_version", r->bbr_version < 0 ? NULL : ks_jb_int(&b, r->bbr_version));
    ks_jb_add(&b, o, "findings", ks_jb_part(&b, ks_json_findings(&r->findings)));
    ks_jb_add(&b, o, "verdict",
              ks_jb_string(&b, ks_verdict_to_string(ks_findings_worst(&r->findings))));
    return ks_jb_finish(&b, o);
}

void ks_print_verify_modules(const ks_ctx *ctx, const ks_verify_result *r)
{
    size_t w = strlen("module");

    ks_printf("kernel %s (%s)\n\n", r->release,
              r->source == KS_VERIFY_DEB ? "from the package" : "installed tree");
    for (size_t i = 0; i < r->n_modules; i++)
        if (strlen(r->modules[i].name) > w)
            w = strlen(r->modules[i].name);
    ks_printf("  %-*s  %-7s  %-8s  %s\n", (int)w, "module", "state", "version", "file");
    for (size_t i = 0; i < r->n_modules; i++) {
        const ks_module_report *m = &r->modules[i];
        bool ok = ks_module_report_ok(m);
        ks_printf("  %-*s  %s%-7s%s  %-8s  %s\n", (int)w, m->name,
                  ks_color(ctx, ok ? KS_SEV_OK : KS_SEV_BLOCK), ks_module_state_to_string(m->state),
                  ks_color_reset(ctx), m->version ? m->version : "-", m->file ? m->file : "-");
        for (char **d = m->missing_deps; d && *d; d++)
            ks_printf("  %-*s  needs %s, which the kernel lacks\n", (int)w, "", *d);
    }
    if (r->bbr_version < 0)
        ks_printf("\n  BBR: no tcp_bbr\n\n");
    else
        ks_printf("\n  BBR: version %d\n\n", r->bbr_version);
}

static void verify_print(const ks_ctx *ctx, const ks_verify_result *r)
{
    if (!ctx->quiet) {
        ks_print_verify_modules(ctx, r);
        ks_print_findings(ctx, &r->findings);
        ks_printf("\n");
    }
    ks_printf("verdict: %s\n", ks_verdict_to_string(ks_findings_worst(&r->findings)));
}

static const ks_option verify_options[] = {
    {"kernel", 'k', "RELEASE", "the installed kernel tree lib/modules/RELEASE", NULL},
    {"deb", 'd', "FILE", "a kernel package (a path on this machine), read without unpacking", NULL},
    {},
};

static int run_verify(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_free_ char *error = NULL;
    ks_verify_opts opts = {.error = &error};
    ks_verify_result res = {0};
    int c, r, ret;

    while ((c = ks_getopt(&ks_cmd_verify, argc, argv)) != -1) {
        switch (c) {
        case 'k':
            opts.release = optarg;
            break;
        case 'd':
            opts.deb_path = optarg;
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_verify, "unexpected argument '%s'", argv[optind]);
    if (!opts.release == !opts.deb_path)
        return ks_usage_error(&ks_cmd_verify, "give exactly one of --kernel and --deb");

    r = ks_config_load(ctx->root, ctx->config_path, &cfg, &error);
    if (r >= 0) {
        ks_info(ctx, "verifying %s", opts.release ? opts.release : opts.deb_path);
        r = ks_verify_run(ctx->root, cfg, &opts, &res);
    }
    if (r < 0) {
        if (!error)
            error = ks_asprintf("cannot verify '%s': %s",
                                opts.release ? opts.release : opts.deb_path, strerror(-r));
        ks_error("%s", error ? error : strerror(-r));
        if (ctx->json) {
            ks_json_builder b = {0};
            json_object *o = ks_jb_object(&b);
            ks_jb_add(&b, o, "verdict", ks_jb_string(&b, "error"));
            ks_jb_add(&b, o, "error", ks_jb_string(&b, error));
            (void)ks_print_json_built("verify", &b, o);
        }
        return KS_EXIT_ERROR;
    }
    if (opts.deb_path)
        ks_info(ctx, "read %llu bytes of data.tar with %d thread(s) in %u pass(es), %u modules",
                (unsigned long long)res.deb_stats.data_bytes, res.deb_stats.threads,
                res.deb_stats.passes, res.deb_stats.modules);

    if (ctx->json) {
        ks_json_builder b = {0};
        ret = ks_print_json_built("verify", &b, ks_jb_part(&b, ks_json_verify(&res)));
    } else {
        verify_print(ctx, &res);
        ret = KS_EXIT_OK;
    }
    if (ret == KS_EXIT_OK && ks_findings_worst(&res.findings) == KS_SEV_BLOCK)
        ret = KS_EXIT_REFUSED;
    ks_verify_result_done(&res);
    return ret;
}

const ks_cmd ks_cmd_verify = {
    .name = "verify",
    .run = run_verify,
    .summary = "prove a kernel's module set (installed tree or .deb) before any reboot",
    .usage = "(--kernel RELEASE | --deb FILE)",
    .flags = KS_READ_ONLY,
    .options = verify_options,
    .json_key = "verdict",
};
