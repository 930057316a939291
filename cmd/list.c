/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd/cmd.h"
#include "lib/engine/kernel-list.h"

static const ks_option list_options[] = {
    {},
};

static void print_table(const ks_ctx *ctx, const ks_kernel_list *l)
{
    size_t w = strlen("RELEASE");

    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i].release) > w)
            w = strlen(l->v[i].release);
    ks_printf("%-*s  %-28s %s\n", (int)w, "RELEASE", "ROLE", "GRUB ID PATH");
    for (size_t i = 0; i < l->n; i++) {
        const ks_listed_kernel *x = &l->v[i];
        char role[96] = "";
        const char *relied = ks_relied_on_to_string(x->relied_on);

        /* Each word says one thing; "-" when the kernel is none of them. */
        snprintf(role, sizeof(role), "%s%s%s%s%s%s%s", x->is_default ? "default," : "",
                 x->is_running ? "running," : "", x->on_trial ? "trial," : "", relied ? relied : "",
                 relied ? "," : "", !x->has_modules ? "no-modules," : "",
                 !x->has_initrd ? "no-initrd," : "");
        if (role[0])
            role[strlen(role) - 1] = '\0';
        ks_printf("%-*s  %-28s %s\n", (int)w, x->release, role[0] ? role : "-",
                  x->id_path ? x->id_path : "(no GRUB entry)");
    }
    if (l->n == 0)
        ks_printf("no kernel installed (no /boot/vmlinuz-*)\n");
    if (ctx->verbose)
        for (size_t i = 0; i < l->n; i++)
            if (l->v[i].title_path)
                ks_printf("%s: %s\n", l->v[i].release, l->v[i].title_path);
}

static json_object *list_json(const ks_kernel_list *l)
{
    ks_json_builder b = {0};
    json_object *o = ks_jb_object(&b), *a = ks_jb_array(&b);

    ks_jb_add(&b, o, "result", ks_jb_string(&b, "ok"));
    ks_jb_add(&b, o, "running", ks_jb_string(&b, l->running));
    ks_jb_add(&b, o, "default", ks_jb_string(&b, l->default_kernel));
    ks_jb_add(&b, o, "grub_error", ks_jb_string(&b, l->grub_error));
    ks_jb_add(&b, o, "journal_error", ks_jb_string(&b, l->journal_error));
    for (size_t i = 0; i < l->n; i++) {
        const ks_listed_kernel *x = &l->v[i];
        json_object *k = ks_jb_object(&b);
        ks_jb_add(&b, k, "release", ks_jb_string(&b, x->release));
        ks_jb_add(&b, k, "id_path", ks_jb_string(&b, x->id_path));
        ks_jb_add(&b, k, "title_path", ks_jb_string(&b, x->title_path));
        ks_jb_add(&b, k, "is_default", ks_jb_bool(&b, x->is_default));
        ks_jb_add(&b, k, "is_running", ks_jb_bool(&b, x->is_running));
        ks_jb_add(&b, k, "on_trial", ks_jb_bool(&b, x->on_trial));
        ks_jb_add(&b, k, "relied_on", ks_jb_string(&b, ks_relied_on_to_string(x->relied_on)));
        ks_jb_add(&b, k, "has_modules", ks_jb_bool(&b, x->has_modules));
        ks_jb_add(&b, k, "has_initrd", ks_jb_bool(&b, x->has_initrd));
        ks_jb_push(&b, a, k);
    }
    ks_jb_add(&b, o, "kernels", a);
    return ks_jb_finish(&b, o);
}

static int run_list(ks_ctx *ctx, int argc, char **argv)
{
    ks_kernel_list l = {0};
    int c, r;

    while ((c = ks_getopt(&ks_cmd_list, argc, argv)) != -1)
        return KS_EXIT_ERROR;
    if (optind < argc)
        return ks_usage_error(&ks_cmd_list, "unexpected argument '%s'", argv[optind]);
    r = ks_kernel_list_run(ctx->root, &l);
    if (r < 0) {
        ks_error("cannot list the kernels in '/boot': %s", strerror(-r));
        return KS_EXIT_ERROR;
    }
    /* What could not be read is said, and the rest is listed. */
    if (l.grub_error)
        ks_warn("no GRUB id paths and no default: %s", l.grub_error);
    if (l.journal_error)
        ks_warn("cannot read the state journal '/var/lib/kswap/state.json': %s; trial and old "
                "kernel unknown",
                l.journal_error);
    if (ctx->json) {
        ks_json_builder b = {0};
        r = ks_print_json_built("list", &b, ks_jb_part(&b, list_json(&l)));
    } else {
        print_table(ctx, &l);
        r = KS_EXIT_OK;
    }
    ks_kernel_list_done(&l);
    return r;
}

const ks_cmd ks_cmd_list = {
    .name = "list",
    .run = run_list,
    .summary = "installed kernels: GRUB id paths, the default, the running, the trial kernel",
    .usage = "",
    .flags = KS_READ_ONLY,
    .options = list_options,
    .json_key = "result",
};
