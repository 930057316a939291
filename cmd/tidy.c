/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/swap-output.h"
#include "lib/engine/tidy.h"
#include "lib/repo/autoremove.h"

static const ks_option tidy_options[] = {
    {"dry-run", 'n', NULL, "show what would be removed, change nothing", NULL},
    {"yes", 'y', NULL, "remove without asking (scripts, Ansible)", NULL},
    {},
};

static void print_list(const ks_ctx *ctx, const ks_tidy *t, bool dry)
{
    ks_printf("running   %s (pinned)\nfallback  %s\n", t->running, t->fallback);
    for (size_t i = 0; i < t->n; i++) {
        _cleanup_free_ char *pkgs = ks_strv_join(t->v[i].packages, " ");
        ks_printf("%s %s%s%s\n          %s\n", dry ? "would remove" : "remove   ",
                  t->v[i].release ? t->v[i].release : "metapackages", ctx->sep, strempty(pkgs),
                  t->v[i].why);
    }
    if (t->kept_metapackages) {
        _cleanup_free_ char *pkgs = ks_strv_join(t->kept_metapackages, " ");
        ks_printf("keep      %s%s%s\n", strempty(pkgs), ctx->sep, t->kept_why);
    }
}

static bool confirm(const ks_tidy *t)
{
    _cleanup_free_ char **pkgs = ks_tidy_packages(t);
    char line[32];

    ks_fprintf(stderr, "apt-get purge %zu packages; %s and %s stay. Proceed? [y/N] ",
               pkgs ? ks_strv_length(pkgs) : 0, t->running, t->fallback);
    if (!fgets(line, sizeof(line), stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

static json_object *tidy_json(const ks_tidy *t, const char *result)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *a = ks_jb_array(&b);

    ks_jb_add(&b, o, "result", ks_jb_string(&b, result));
    ks_jb_add(&b, o, "running", ks_jb_string(&b, t->running));
    ks_jb_add(&b, o, "fallback", ks_jb_string(&b, t->fallback));
    for (size_t i = 0; i < t->n; i++) {
        json_object *x = ks_jb_object(&b);
        ks_jb_add(&b, x, "release", ks_jb_string(&b, t->v[i].release));
        ks_jb_add(&b, x, "packages", ks_jb_strv(&b, t->v[i].packages));
        ks_jb_add(&b, x, "why", ks_jb_string(&b, t->v[i].why));
        ks_jb_push(&b, a, x);
    }
    ks_jb_add(&b, o, "remove", a);
    ks_jb_add(&b, o, "kept_metapackages", ks_jb_strv(&b, t->kept_metapackages));
    ks_jb_add(&b, o, "kept_why", ks_jb_string(&b, t->kept_why));
    ks_jb_add(&b, o, "removed", ks_jb_strv(&b, t->removed));
    ks_jb_add(&b, o, "guard", ks_jb_string(&b, "/" KS_AUTOREMOVE_PATH));
    ks_jb_add(&b, o, "error",
              ks_jb_string(&b, t->error     ? t->error
                               : t->refused ? t->refused
                                            : ks_first_error()));
    ks_jb_add(&b, o, "remedy", ks_jb_string(&b, t->remedy));
    ks_jb_add(&b, o, "output", ks_jb_string(&b, t->output));
    return ks_jb_finish(&b, o);
}

static int finish(const ks_ctx *ctx, const ks_tidy *t, const char *result, int code)
{
    if (ctx->json) {
        ks_json_builder b = {0};
        if (ks_print_json_built("tidy", &b, ks_jb_part(&b, tidy_json(t, result))) != KS_EXIT_OK)
            return KS_EXIT_ERROR;
    }
    return code;
}

static int run_tidy(ks_ctx *ctx, int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = NULL;
    _cleanup_(ks_tidy_done) ks_tidy t = {0};
    _cleanup_free_ char **pkgs = NULL;
    bool dry = false, yes = false;
    int c, r;

    while ((c = ks_getopt(&ks_cmd_tidy, argc, argv)) != -1) {
        switch (c) {
        case 'n':
            dry = true;
            break;
        case 'y':
            yes = true;
            break;
        default:
            return KS_EXIT_ERROR;
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_tidy, "unexpected argument '%s'", argv[optind]);
    if (ks_swap_config(ctx, &cfg) < 0)
        return KS_EXIT_ERROR;
    r = ks_tidy_plan(ctx->root, &t);
    if (r < 0) {
        ks_error("tidy: %s", strerror(-r));
        return KS_EXIT_ERROR;
    }
    if (t.refused) {
        if (t.remedy)
            ks_error("tidy: %s; nothing changed. Instead: %s", t.refused, t.remedy);
        else
            ks_error("tidy: %s; nothing changed", t.refused);
        return finish(ctx, &t, "refused", KS_EXIT_REFUSED);
    }
    pkgs = ks_tidy_packages(&t);
    if (!pkgs)
        return KS_EXIT_ERROR;
    if (!ctx->json && !ctx->quiet)
        print_list(ctx, &t, dry);
    if (dry) {
        if (!ctx->json)
            ks_printf("%s\n", pkgs[0] ? "dry run: nothing changed" : "nothing to tidy");
        return finish(ctx, &t, "dry-run", KS_EXIT_OK);
    }
    if (pkgs[0] && !yes) {
        /* A script without --yes must not hang waiting for an answer. */
        if (!isatty(STDIN_FILENO)) {
            ks_error("tidy removes packages: pass --yes when no one can answer, or --dry-run to "
                     "see them");
            return finish(ctx, &t, "refused", KS_EXIT_REFUSED);
        }
        if (!confirm(&t)) {
            ks_error("tidy cancelled; nothing changed");
            return finish(ctx, &t, "refused", KS_EXIT_REFUSED);
        }
    }
    r = ks_tidy_run(ctx->root,
                    &(ks_swap_common){.config = cfg,
                                      .progress = ks_swap_progress,
                                      .live = isatty(STDERR_FILENO) ? ks_swap_progress_live : NULL,
                                      .trace = ks_swap_trace,
                                      .userdata = ctx},
                    &t);
    if (r == -EPERM) {
        ks_error("tidy: %s; nothing changed", t.refused);
        return finish(ctx, &t, "refused", KS_EXIT_REFUSED);
    }
    if (r < 0) {
        ks_error("tidy: %s", t.error ? t.error : strerror(-r));
        if (t.output && !ctx->json)
            ks_fprintf(stderr, "%s\n", t.output);
        return finish(ctx, &t, "error", KS_EXIT_ERROR);
    }
    if (!ctx->json) {
        _cleanup_free_ char *gone = ks_strv_join(t.removed, " ");
        if (t.removed)
            ks_printf("removed %zu packages: %s\n", ks_strv_length(t.removed), strempty(gone));
        else
            ks_printf("nothing to tidy\n");
        if (!ctx->quiet)
            ks_printf("apt autoremove keeps %s and %s (/%s)\n", t.running, t.fallback,
                      KS_AUTOREMOVE_PATH);
    }
    return finish(ctx, &t, t.removed ? "done" : "nothing", KS_EXIT_OK);
}

const ks_cmd ks_cmd_tidy = {
    .name = "tidy",
    .run = run_tidy,
    .summary = "after a pinned swap: remove older kernels and the distribution's metapackage",
    .usage = "[--dry-run] [--yes]",
    .flags = KS_NEEDS_ROOT_USER,
    .options = tidy_options,
    .json_key = "result",
};
