/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <limits.h>

#include "cmd/cmd.h"
#include "lib/basic/escape.h"
#include "lib/basic/fileio.h"
#include "lib/engine/plan.h"

#define MIB (1024ULL * 1024ULL)

static json_object *strv_json(char *const *l)
{
    json_object *a = json_object_new_array();
    for (; l && *l; l++)
        json_object_array_add(a, json_object_new_string(*l));
    return a;
}

static json_object *plan_json(const ks_plan *p)
{
    json_object *o = json_object_new_object(), *host, *boot, *target, *grub, *bbr, *kernels;
    ks_severity worst = ks_findings_worst(&p->findings);

    json_object_object_add(o, "verdict", json_object_new_string(ks_verdict_to_string(worst)));

    host = json_object_new_object();
    json_object_object_add(host, "os_id", ks_json_string_or_null(p->os_id));
    json_object_object_add(host, "os_version_id", ks_json_string_or_null(p->os_version_id));
    json_object_object_add(host, "os_codename", ks_json_string_or_null(p->os_codename));
    json_object_object_add(host, "os_pretty_name", ks_json_string_or_null(p->os_pretty_name));
    json_object_object_add(host, "virt", ks_json_string_or_null(p->virt));
    json_object_object_add(host, "virt_evidence", ks_json_string_or_null(p->virt_evidence));
    json_object_object_add(host, "x86_64_level", json_object_new_int(p->x86_64_level));
    json_object_object_add(host, "x86_64_level_source",
                           json_object_new_string(p->level_from_cpuid ? "cpuid" : "cpuinfo"));
    json_object_object_add(host, "processors", json_object_new_int((int)p->n_processors));
    json_object_object_add(host, "cpu_model", ks_json_string_or_null(p->cpu_model));
    json_object_object_add(host, "running_kernel", ks_json_string_or_null(p->running_kernel));
    kernels = json_object_new_array();
    for (size_t i = 0; i < p->kernels.n; i++)
        json_object_array_add(kernels, json_object_new_string(p->kernels.v[i].release));
    json_object_object_add(host, "installed_kernels", kernels);
    json_object_object_add(o, "host", host);

    boot = json_object_new_object();
    json_object_object_add(boot, "firmware",
                           json_object_new_string(p->secureboot.efi ? "uefi" : "bios"));
    json_object_object_add(boot, "secure_boot", json_object_new_boolean(p->secureboot.enabled));
    json_object_object_add(boot, "mount_point", ks_json_string_or_null(p->bootfs.mount_point));
    json_object_object_add(boot, "device", ks_json_string_or_null(p->bootfs.source));
    json_object_object_add(boot, "fs_type", ks_json_string_or_null(p->bootfs.fs_type));
    json_object_object_add(boot, "uuid", ks_json_string_or_null(p->bootfs.uuid));
    json_object_object_add(boot, "stack", strv_json(p->bootfs.stack));
    json_object_object_add(boot, "env_writable", json_object_new_boolean(p->env_writable));
    json_object_object_add(boot, "env_unwritable_reason",
                           ks_json_string_or_null(p->bootfs.unwritable_reason));
    json_object_object_add(boot, "free_bytes",
                           json_object_new_int64((int64_t)p->bootfs.free_bytes));
    json_object_object_add(boot, "needed_bytes",
                           json_object_new_int64((int64_t)p->boot_needed_bytes));
    json_object_object_add(o, "boot", boot);

    target = json_object_new_object();
    json_object_object_add(target, "branch",
                           json_object_new_string(ks_branch_to_string(p->branch)));
    json_object_object_add(target, "package", ks_json_string_or_null(p->target_package));
    json_object_object_add(target, "release", ks_json_string_or_null(p->target_release));
    json_object_object_add(target, "installed", json_object_new_boolean(p->target_installed));
    json_object_object_add(target, "repository_suite", ks_json_string_or_null(p->xanmod_suite));
    {
        json_object *repo = json_object_new_object(), *comps = NULL;
        json_object_object_add(repo, "uri", ks_json_string_or_null(p->repo_uri));
        json_object_object_add(repo, "suite", ks_json_string_or_null(p->xanmod_suite));
        if (p->repo_components) {
            comps = json_object_new_array();
            for (char **c = p->repo_components; *c; c++)
                json_object_array_add(comps, json_object_new_string(*c));
        }
        json_object_object_add(repo, "components", comps);
        json_object_object_add(repo, "configured", json_object_new_boolean(p->repo_configured));
        json_object_object_add(target, "repository", repo);
    }
    json_object_object_add(o, "target", target);
    if (p->verified)
        json_object_object_add(o, "modules", ks_json_verify(&p->verify));

    grub = json_object_new_object();
    json_object_object_add(grub, "default", ks_json_string_or_null(p->grub_default));
    json_object_object_add(grub, "default_file", ks_json_string_or_null(p->grub_default_file));
    json_object_object_add(
        grub, "recordfail_timeout",
        p->recordfail_timeout == INT_MIN ? NULL : json_object_new_int(p->recordfail_timeout));
    json_object_object_add(grub, "panic", ks_json_string_or_null(p->panic_value));
    json_object_object_add(grub, "panic_source", ks_json_string_or_null(p->panic_source));
    json_object_object_add(o, "grub", grub);

    bbr = json_object_new_object();
    json_object_object_add(bbr, "congestion_control_live", ks_json_string_or_null(p->cc_live));
    json_object_object_add(bbr, "congestion_control_configured",
                           ks_json_string_or_null(p->cc_config));
    json_object_object_add(bbr, "congestion_control_file",
                           ks_json_string_or_null(p->cc_config_file));
    json_object_object_add(bbr, "default_qdisc_live", ks_json_string_or_null(p->qdisc_live));
    json_object_object_add(bbr, "default_qdisc_configured",
                           ks_json_string_or_null(p->qdisc_config));
    json_object_object_add(bbr, "tcp_bbr",
                           json_object_new_string(p->bbr_builtin  ? "builtin"
                                                  : p->bbr_module ? "module"
                                                                  : "absent"));
    json_object_object_add(bbr, "modules_load_file", ks_json_string_or_null(p->bbr_listed_file));
    json_object_object_add(o, "bbr", bbr);

    json_object_object_add(o, "findings", ks_json_findings(&p->findings));
    return o;
}

static void plan_print(const ks_ctx *ctx, const ks_plan *p)
{
    ks_severity worst = ks_findings_worst(&p->findings);
    const char *sep = ctx->sep;
    size_t warns = 0, blocks = 0;

    printf("host    %s%s%s%sx86-64-v%d (%s)%s%u CPUs%srunning %s\n", ks_esc(p->os_pretty_name), sep,
           strempty(p->virt), sep, p->x86_64_level, p->level_from_cpuid ? "CPUID" : "cpuinfo", sep,
           p->n_processors, sep, strempty(p->running_kernel));
    printf("boot    %s%sboot/grub on %s %s", p->secureboot.efi ? "UEFI" : "BIOS", sep,
           p->bootfs.fs_type ? p->bootfs.fs_type : "unknown fs",
           p->bootfs.source ? p->bootfs.source : "(unknown device)");
    if (p->bootfs.stack && p->bootfs.stack[0]) {
        printf(" (");
        for (char **s = p->bootfs.stack; *s; s++)
            printf("%s%s", s == p->bootfs.stack ? "" : " on ", *s);
        printf(")");
    }
    printf("%s%llu MiB free\n", sep, (unsigned long long)(p->bootfs.free_bytes / MIB));
    if (p->target_package || p->target_release)
        printf("target  %s%s%s%s%s\n", strempty(p->target_package),
               p->target_release && p->target_package ? " " : "",
               p->target_release ? p->target_release : "", sep,
               p->target_installed ? "installed" : "not installed");
    else
        printf("target  none (no XanMod build fits)\n");
    if (p->xanmod_suite) {
        _cleanup_free_ char *comps =
            p->repo_components ? ks_strv_join(p->repo_components, " ") : NULL;
        printf("repo    %s %s%s%s%s%s\n", ks_esc(p->repo_uri), ks_esc(p->xanmod_suite),
               comps ? " " : "", comps ? ks_esc(comps) : "", sep,
               p->repo_configured ? "from kswap.conf" : "XanMod's archive");
    } else
        printf("repo    none (XanMod has no suite for this OS: --deb FILE or [repository] "
               "suite)\n");
    printf("\n");
    if (p->verified)
        ks_print_verify_modules(ctx, &p->verify);
    ks_print_findings(ctx, &p->findings);
    for (size_t i = 0; i < p->findings.n; i++) {
        warns += p->findings.v[i].severity == KS_SEV_WARN;
        blocks += p->findings.v[i].severity == KS_SEV_BLOCK;
    }
    printf("\nverdict: %s%s%s (%zu blocking, %zu warning%s)\n", ks_color(ctx, worst),
           ks_verdict_to_string(worst), ks_color_reset(ctx), blocks, warns, warns == 1 ? "" : "s");
}

static const ks_option plan_options[] = {
    {"kernel", 'k', "RELEASE", "assess this kernel release (installed or from the repository)",
     "the XanMod package that fits the CPU"},
    {"deb", 'd', "FILE", "assess this kernel package (a path on this machine)", NULL},
    {"branch", 'b', "lts|main", "XanMod's LTS or main packages", "lts"},
    {},
};

static int run_plan(ks_ctx *ctx, int argc, char **argv)
{
    ks_plan_opts opts = {.branch = KS_BRANCH_LTS};
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_free_ char *cfg_err = NULL;
    ks_plan p = {0};
    int c, k, ret;

    while ((c = ks_getopt(&ks_cmd_plan, argc, argv)) != -1) {
        switch (c) {
        case 'k':
            opts.kernel = optarg;
            break;
        case 'd':
            opts.deb = optarg;
            break;
        case 'b':
            opts.branch = ks_branch_from_string(optarg);
            if (opts.branch < 0)
                return ks_usage_error(&ks_cmd_plan, "unknown branch '%s': use lts or main", optarg);
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_plan, "unexpected argument '%s'", argv[optind]);
    if (opts.kernel && opts.deb)
        return ks_usage_error(&ks_cmd_plan, "options '--kernel' and '--deb' exclude each other");

    k = ks_config_load(ctx->root, ctx->config_path, &cfg, &cfg_err);
    if (k < 0 && k != -EBADMSG) {
        ks_error("cannot read the configuration: %s", cfg_err ? cfg_err : strerror(-k));
        return KS_EXIT_ERROR;
    }
    /* A configuration that cannot be read as written blocks; the rest is assessed with the
     * defaults, so that one typo does not hide every other finding. */
    opts.config = cfg;
    k = ks_plan_run(ctx->root, &opts, &p);
    if (k >= 0 && !cfg &&
        ks_findings_add(&p.findings, "config.invalid", KS_SEV_BLOCK,
                        "fix the configuration; every other command refuses it too",
                        "the configuration is invalid: %s", cfg_err ? cfg_err : "cannot parse") < 0)
        k = -ENOMEM;
    if (k >= 0 && ks_accept_unit_finding(ctx, &p.findings) < 0)
        ks_warn("cannot tell whether kswap-accept.service is enabled");
    if (k < 0) {
        if (p.error_detail)
            ks_error("cannot assess '%s': %s", ks_root_path(ctx->root), p.error_detail);
        else
            ks_error("cannot assess '%s': cannot read '%s': %s", ks_root_path(ctx->root),
                     strempty(p.error_file),
                     k == -EBADMSG ? "not in the expected format" : ks_strerror(k));
        if (ctx->json) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "verdict", json_object_new_string("error"));
            json_object_object_add(o, "error_file", ks_json_string_or_null(p.error_file));
            json_object_object_add(
                o, "error",
                json_object_new_string(p.error_detail ? p.error_detail : ks_strerror(k)));
            ks_print_json(o);
            json_object_put(o);
        }
        ks_plan_done(&p);
        return KS_EXIT_ERROR;
    }

    if (ctx->json) {
        json_object *o = plan_json(&p);
        ret = ks_print_json(o);
        json_object_put(o);
    } else {
        plan_print(ctx, &p);
        ret = KS_EXIT_OK;
    }
    if (ret == KS_EXIT_OK && ks_findings_worst(&p.findings) == KS_SEV_BLOCK)
        ret = KS_EXIT_REFUSED;
    ks_plan_done(&p);
    return ret;
}

const ks_cmd ks_cmd_plan = {
    .name = "plan",
    .run = run_plan,
    .summary = "read-only assessment of this host and the target kernel",
    .usage = "[--kernel RELEASE | --deb FILE] [--branch lts|main]",
    .flags = KS_READ_ONLY,
    .options = plan_options,
    .json_key = "verdict",
};
