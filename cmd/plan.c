/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <limits.h>

#include "cmd/cmd.h"
#include "lib/basic/escape.h"
#include "lib/basic/fileio.h"
#include "lib/engine/plan.h"

#define MIB (1024ULL * 1024ULL)

/* NULL: out of memory. */
static json_object *plan_json(const ks_plan *p, const char *apply_command)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *host, *boot, *target, *grub, *bbr, *kernels;
    ks_severity worst = ks_findings_worst(&p->findings);

    ks_jb_add(&b, o, "verdict", ks_jb_string(&b, ks_verdict_to_string(worst)));

    host = ks_jb_object(&b);
    ks_jb_add(&b, host, "os_id", ks_jb_string(&b, p->os_id));
    ks_jb_add(&b, host, "os_version_id", ks_jb_string(&b, p->os_version_id));
    ks_jb_add(&b, host, "os_codename", ks_jb_string(&b, p->os_codename));
    ks_jb_add(&b, host, "os_pretty_name", ks_jb_string(&b, p->os_pretty_name));
    ks_jb_add(&b, host, "virt", ks_jb_string(&b, p->virt));
    ks_jb_add(&b, host, "virt_evidence", ks_jb_string(&b, p->virt_evidence));
    ks_jb_add(&b, host, "x86_64_level", ks_jb_int(&b, p->x86_64_level));
    ks_jb_add(&b, host, "x86_64_level_source",
              ks_jb_string(&b, p->level_from_cpuid ? "cpuid" : "cpuinfo"));
    ks_jb_add(&b, host, "processors", ks_jb_int(&b, p->n_processors));
    ks_jb_add(&b, host, "cpu_model", ks_jb_string(&b, p->cpu_model));
    ks_jb_add(&b, host, "running_kernel", ks_jb_string(&b, p->running_kernel));
    kernels = ks_jb_array(&b);
    for (size_t i = 0; i < p->kernels.n; i++)
        ks_jb_push(&b, kernels, ks_jb_string(&b, p->kernels.v[i].release));
    ks_jb_add(&b, host, "installed_kernels", kernels);
    ks_jb_add(&b, o, "host", host);

    boot = ks_jb_object(&b);
    ks_jb_add(&b, boot, "firmware", ks_jb_string(&b, p->secureboot.efi ? "uefi" : "bios"));
    ks_jb_add(&b, boot, "secure_boot", ks_jb_bool(&b, p->secureboot.enabled));
    ks_jb_add(&b, boot, "mount_point", ks_jb_string(&b, p->bootfs.mount_point));
    ks_jb_add(&b, boot, "device", ks_jb_string(&b, p->bootfs.source));
    ks_jb_add(&b, boot, "fs_type", ks_jb_string(&b, p->bootfs.fs_type));
    ks_jb_add(&b, boot, "uuid", ks_jb_string(&b, p->bootfs.uuid));
    ks_jb_add(&b, boot, "stack", ks_jb_strv(&b, p->bootfs.stack));
    ks_jb_add(&b, boot, "env_writable", ks_jb_bool(&b, p->env_writable));
    ks_jb_add(&b, boot, "env_unwritable_reason", ks_jb_string(&b, p->bootfs.unwritable_reason));
    ks_jb_add(&b, boot, "free_bytes", ks_jb_int(&b, (int64_t)p->bootfs.free_bytes));
    ks_jb_add(&b, boot, "needed_bytes", ks_jb_int(&b, (int64_t)p->boot_needed_bytes));
    ks_jb_add(&b, o, "boot", boot);

    target = ks_jb_object(&b);
    ks_jb_add(&b, target, "branch", ks_jb_string(&b, ks_branch_to_string(p->branch)));
    ks_jb_add(&b, target, "package", ks_jb_string(&b, p->target_package));
    ks_jb_add(&b, target, "release", ks_jb_string(&b, p->target_release));
    ks_jb_add(&b, target, "installed", ks_jb_bool(&b, p->target_installed));
    ks_jb_add(&b, target, "repository_suite", ks_jb_string(&b, p->xanmod_suite));
    {
        json_object *repo = ks_jb_object(&b), *comps = NULL;
        ks_jb_add(&b, repo, "uri", ks_jb_string(&b, p->repo_uri));
        ks_jb_add(&b, repo, "suite", ks_jb_string(&b, p->xanmod_suite));
        if (p->repo_components) {
            comps = ks_jb_array(&b);
            for (char **c = p->repo_components; *c; c++)
                ks_jb_push(&b, comps, ks_jb_string(&b, *c));
        }
        ks_jb_add(&b, repo, "components", comps);
        ks_jb_add(&b, repo, "configured", ks_jb_bool(&b, p->repo_configured));
        ks_jb_add(&b, target, "repository", repo);
    }
    ks_jb_add(&b, o, "target", target);
    ks_jb_add(&b, o, "update", ks_jb_part(&b, ks_json_update(&p->update, apply_command)));
    if (p->verified)
        ks_jb_add(&b, o, "modules", ks_jb_part(&b, ks_json_verify(&p->verify)));

    grub = ks_jb_object(&b);
    ks_jb_add(&b, grub, "default", ks_jb_string(&b, p->grub_default));
    ks_jb_add(&b, grub, "default_file", ks_jb_string(&b, p->grub_default_file));
    ks_jb_add(&b, grub, "recordfail_timeout",
              p->recordfail_timeout == INT_MIN ? NULL : ks_jb_int(&b, p->recordfail_timeout));
    ks_jb_add(&b, grub, "panic", ks_jb_string(&b, p->panic_value));
    ks_jb_add(&b, grub, "panic_source", ks_jb_string(&b, p->panic_source));
    ks_jb_add(&b, o, "grub", grub);

    bbr = ks_jb_object(&b);
    ks_jb_add(&b, bbr, "congestion_control_live", ks_jb_string(&b, p->cc_live));
    ks_jb_add(&b, bbr, "congestion_control_configured", ks_jb_string(&b, p->cc_config));
    ks_jb_add(&b, bbr, "congestion_control_file", ks_jb_string(&b, p->cc_config_file));
    ks_jb_add(&b, bbr, "default_qdisc_live", ks_jb_string(&b, p->qdisc_live));
    ks_jb_add(&b, bbr, "default_qdisc_configured", ks_jb_string(&b, p->qdisc_config));
    ks_jb_add(&b, bbr, "tcp_bbr",
              ks_jb_string(&b, p->bbr_builtin  ? "builtin"
                               : p->bbr_module ? "module"
                                               : "absent"));
    ks_jb_add(&b, bbr, "modules_load_file", ks_jb_string(&b, p->bbr_listed_file));
    ks_jb_add(&b, o, "bbr", bbr);

    ks_jb_add(&b, o, "findings", ks_jb_part(&b, ks_json_findings(&p->findings)));
    return ks_jb_finish(&b, o);
}

static void plan_print(const ks_ctx *ctx, const ks_plan *p, const char *apply_command)
{
    ks_severity worst = ks_findings_worst(&p->findings);
    const char *sep = ctx->sep;
    size_t warns = 0, blocks = 0;

    for (size_t i = 0; i < p->findings.n; i++) {
        warns += p->findings.v[i].severity == KS_SEV_WARN;
        blocks += p->findings.v[i].severity == KS_SEV_BLOCK;
    }
    /* -q (cron): the verdict line alone; a run that needs a look says so there. */
    if (ctx->quiet) {
        ks_printf("verdict: %s%s%s (%zu blocking, %zu warning%s)\n", ks_color(ctx, worst),
                  ks_verdict_to_string(worst), ks_color_reset(ctx), blocks, warns,
                  warns == 1 ? "" : "s");
        return;
    }
    ks_printf("host    %s%s%s%sx86-64-v%d (%s)%s%u CPUs%srunning %s\n", p->os_pretty_name, sep,
              strempty(p->virt), sep, p->x86_64_level, p->level_from_cpuid ? "CPUID" : "cpuinfo",
              sep, p->n_processors, sep, strempty(p->running_kernel));
    ks_printf("boot    %s%sboot/grub on %s %s", p->secureboot.efi ? "UEFI" : "BIOS", sep,
              p->bootfs.fs_type ? p->bootfs.fs_type : "unknown fs",
              p->bootfs.source ? p->bootfs.source : "(unknown device)");
    if (p->bootfs.stack && p->bootfs.stack[0]) {
        ks_printf(" (");
        for (char **s = p->bootfs.stack; *s; s++)
            ks_printf("%s%s", s == p->bootfs.stack ? "" : " on ", *s);
        ks_printf(")");
    }
    ks_printf("%s%llu MiB free\n", sep, (unsigned long long)(p->bootfs.free_bytes / MIB));
    if (p->target_package || p->target_release)
        ks_printf("target  %s%s%s%s%s\n", strempty(p->target_package),
                  p->target_release && p->target_package ? " " : "",
                  p->target_release ? p->target_release : "", sep,
                  p->target_installed ? "installed" : "not installed");
    else
        ks_printf("target  none (no XanMod build fits)\n");
    if (p->xanmod_suite) {
        _cleanup_free_ char *comps =
            p->repo_components ? ks_strv_join(p->repo_components, " ") : NULL;
        ks_printf("repo    %s %s%s%s%s%s\n", p->repo_uri, p->xanmod_suite, comps ? " " : "",
                  comps ? comps : "", sep,
                  p->repo_configured ? "from kswap.conf" : "XanMod's archive");
    } else
        ks_printf("repo    none (XanMod has no suite for this OS: --deb FILE or [repository] "
                  "suite)\n");
    if (p->update.newest)
        ks_printf("update  %s%s%s (%s)%s%s\n", p->update.newest, sep,
                  p->update.installed ? "installed, not the default" : "in apt's lists",
                  p->update.seen_in, sep, apply_command);
    ks_printf("\n");
    if (p->verified)
        ks_print_verify_modules(ctx, &p->verify);
    ks_print_findings(ctx, &p->findings);
    ks_printf("\nverdict: %s%s%s (%zu blocking, %zu warning%s)\n", ks_color(ctx, worst),
              ks_verdict_to_string(worst), ks_color_reset(ctx), blocks, warns,
              warns == 1 ? "" : "s");
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
    _cleanup_free_ char *cfg_err = NULL, *apply_command = NULL;
    ks_plan p = {0};
    int c, r, ret;

    while ((c = ks_getopt(&ks_cmd_plan, argc, argv)) != -1) {
        switch (c) {
        case 'k':
            opts.kernel = optarg;
            break;
        case 'd':
            opts.deb = optarg;
            break;
        case 'b':
            opts.branch_given = true;
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

    r = ks_config_load(ctx->root, ctx->config_path, &cfg, &cfg_err);
    if (r < 0 && r != -EBADMSG) {
        ks_error("cannot read the configuration: %s", cfg_err ? cfg_err : strerror(-r));
        return KS_EXIT_ERROR;
    }
    /* A configuration that cannot be read as written blocks; the rest is assessed with the
     * defaults, so that one typo does not hide every other finding. */
    opts.config = cfg;
    apply_command = ks_command_line(ctx, "apply");
    if (!apply_command) {
        ks_error("cannot assess '%s': %s", ks_root_path(ctx->root), strerror(ENOMEM));
        return KS_EXIT_ERROR;
    }
    opts.apply_command = apply_command;
    r = ks_plan_run(ctx->root, &opts, &p);
    if (r >= 0 && !cfg &&
        ks_findings_add(&p.findings, "config.invalid", KS_SEV_BLOCK,
                        "fix the configuration; every other command refuses it too",
                        "the configuration is invalid: %s", cfg_err ? cfg_err : "cannot parse") < 0)
        r = -ENOMEM;
    if (r >= 0 && ks_accept_unit_finding(ctx, &p.findings) < 0)
        ks_warn("cannot tell whether kswap-accept.service is enabled");
    if (r < 0) {
        if (p.error_detail)
            ks_error("cannot assess '%s': %s", ks_root_path(ctx->root), p.error_detail);
        else
            ks_error("cannot assess '%s': cannot read '%s': %s", ks_root_path(ctx->root),
                     strempty(p.error_file),
                     r == -EBADMSG ? "not in the expected format" : ks_strerror(r));
        if (ctx->json) {
            ks_json_builder b = {0};
            json_object *o = ks_jb_object(&b);
            ks_jb_add(&b, o, "verdict", ks_jb_string(&b, "error"));
            ks_jb_add(&b, o, "error_file", ks_jb_string(&b, p.error_file));
            ks_jb_add(&b, o, "error",
                      ks_jb_string(&b, p.error_detail ? p.error_detail : ks_strerror(r)));
            (void)ks_print_json_built("plan", &b, o);
        }
        ks_plan_done(&p);
        return KS_EXIT_ERROR;
    }

    if (ctx->json) {
        ks_json_builder b = {0};
        ret = ks_print_json_built("plan", &b, ks_jb_part(&b, plan_json(&p, apply_command)));
    } else {
        plan_print(ctx, &p, apply_command);
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
