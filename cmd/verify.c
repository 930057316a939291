/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/cmd.h"
#include "lib/kernel/verify.h"

static json_object *strv_array(char *const *l)
{
    json_object *a = json_object_new_array();
    for (; l && *l; l++)
        json_object_array_add(a, json_object_new_string(*l));
    return a;
}

json_object *ks_json_verify(const ks_verify_result *r)
{
    json_object *o = json_object_new_object(), *mods = json_object_new_array();

    json_object_object_add(o, "kernel", json_object_new_string(r->release));
    json_object_object_add(o, "source",
                           json_object_new_string(ks_verify_source_to_string(r->source)));
    for (size_t i = 0; i < r->n_modules; i++) {
        const ks_module_report *m = &r->modules[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "name", json_object_new_string(m->name));
        json_object_object_add(j, "state",
                               json_object_new_string(ks_module_state_to_string(m->state)));
        json_object_object_add(j, "version", ks_json_string_or_null(m->version));
        json_object_object_add(j, "file", ks_json_string_or_null(m->file));
        json_object_object_add(j, "missing_deps", strv_array(m->missing_deps));
        json_object_array_add(mods, j);
    }
    json_object_object_add(o, "modules", mods);
    json_object_object_add(o, "bbr_version",
                           r->bbr_version < 0 ? NULL : json_object_new_int(r->bbr_version));
    json_object_object_add(o, "findings", ks_json_findings(&r->findings));
    json_object_object_add(
        o, "verdict",
        json_object_new_string(ks_verdict_to_string(ks_findings_worst(&r->findings))));
    return o;
}

void ks_print_verify_modules(const ks_ctx *ctx, const ks_verify_result *r)
{
    size_t w = strlen("module");

    printf("kernel %s (%s)\n\n", r->release,
           r->source == KS_VERIFY_DEB ? "from the package" : "installed tree");
    for (size_t i = 0; i < r->n_modules; i++)
        if (strlen(r->modules[i].name) > w)
            w = strlen(r->modules[i].name);
    printf("  %-*s  %-7s  %-8s  %s\n", (int)w, "module", "state", "version", "file");
    for (size_t i = 0; i < r->n_modules; i++) {
        const ks_module_report *m = &r->modules[i];
        bool ok = ks_module_report_ok(m);
        printf("  %-*s  %s%-7s%s  %-8s  %s\n", (int)w, m->name,
               ks_color(ctx, ok ? KS_SEV_OK : KS_SEV_BLOCK), ks_module_state_to_string(m->state),
               ks_color_reset(ctx), m->version ? m->version : "-", m->file ? m->file : "-");
        for (char **d = m->missing_deps; d && *d; d++)
            printf("  %-*s  needs %s, which the kernel lacks\n", (int)w, "", *d);
    }
    if (r->bbr_version < 0)
        printf("\n  BBR: no tcp_bbr\n\n");
    else
        printf("\n  BBR: version %d\n\n", r->bbr_version);
}

static void verify_print(const ks_ctx *ctx, const ks_verify_result *r)
{
    ks_print_verify_modules(ctx, r);
    ks_print_findings(ctx, &r->findings);
    printf("\nverdict: %s\n", ks_verdict_to_string(ks_findings_worst(&r->findings)));
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
    int c, k, ret;

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

    k = ks_config_load(ctx->root, ctx->config_path, &cfg, &error);
    if (k >= 0) {
        ks_info(ctx, "verifying %s", opts.release ? opts.release : opts.deb_path);
        k = ks_verify_run(ctx->root, cfg, &opts, &res);
    }
    if (k < 0) {
        if (!error)
            error = ks_asprintf("cannot verify '%s': %s",
                                opts.release ? opts.release : opts.deb_path, strerror(-k));
        ks_error("%s", error ? error : strerror(-k));
        if (ctx->json) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "verdict", json_object_new_string("error"));
            json_object_object_add(o, "error", ks_json_string_or_null(error));
            ks_print_json(o);
            json_object_put(o);
        }
        return KS_EXIT_ERROR;
    }
    if (opts.deb_path)
        ks_info(ctx, "read %llu bytes of data.tar with %d thread(s) in %u pass(es), %u modules",
                (unsigned long long)res.deb_stats.data_bytes, res.deb_stats.threads,
                res.deb_stats.passes, res.deb_stats.modules);

    if (ctx->json) {
        json_object *o = ks_json_verify(&res);
        ret = ks_print_json(o);
        json_object_put(o);
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
