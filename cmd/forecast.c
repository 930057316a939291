/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The boot forecast as people and machines see it: shared by status, apply, pin, rollback. */
#include "cmd/cmd.h"
#include "lib/basic/escape.h"
#include "cmd/forecast.h"

static const char *boot_label(const ks_grub_forecast_boot *f)
{
    if (f->waits && streq_ptr(f->wait_reason, "password"))
        return "waits for a GRUB password";
    if (f->waits && streq_ptr(f->wait_reason, "firmware-setup"))
        return "waits in the firmware's setup";
    if (f->waits)
        return "waits at the menu";
    if (f->fell_back)
        return f->one_shot ? "one-shot, no such entry: entry 0" : "default, no such entry: entry 0";
    return f->one_shot ? "one-shot" : "default";
}

static json_object *forecast_json(ks_json_builder *jb, const ks_grub_forecast *fc)
{
    json_object *a = ks_jb_array(jb);
    for (size_t i = 0; i < fc->n; i++) {
        const ks_grub_forecast_boot *f = &fc->v[i];
        json_object *o = ks_jb_object(jb);
        ks_jb_add(jb, o, "boot", ks_jb_int(jb, f->boot));
        ks_jb_add(jb, o, "kernel", ks_jb_string(jb, f->kernel));
        ks_jb_add(jb, o, "title_path", ks_jb_string(jb, f->title_path));
        ks_jb_add(jb, o, "id_path", ks_jb_string(jb, f->id_path));
        ks_jb_add(jb, o, "one_shot", ks_jb_bool(jb, f->one_shot));
        ks_jb_add(jb, o, "waits", ks_jb_bool(jb, f->waits));
        ks_jb_add(jb, o, "waits_for", ks_jb_string(jb, f->wait_reason));
        ks_jb_add(jb, o, "timeout", ks_jb_int(jb, f->timeout));
        ks_jb_add(jb, o, "default", ks_jb_string(jb, f->default_value));
        ks_jb_add(jb, o, "fell_back", ks_jb_bool(jb, f->fell_back));
        ks_jb_add(jb, o, "save_env_failures", ks_jb_int(jb, f->save_env_failures));
        ks_jb_add(jb, o, "env_changes", ks_jb_strv(jb, f->changes));
        ks_jb_push(jb, a, o);
    }
    return a;
}

static json_object *env_json(ks_json_builder *jb, const ks_grubenv *e)
{
    json_object *o;
    if (!e)
        return NULL;
    o = ks_jb_object(jb);
    for (size_t i = 0; i < ks_grubenv_count(e); i++)
        ks_jb_add(jb, o, ks_grubenv_name(e, i), ks_jb_string(jb, ks_grubenv_value(e, i)));
    return o;
}

json_object *ks_json_grub(const ks_boot *b, const ks_grub_forecast *f)
{
    ks_json_builder jb = {0};
    json_object *g = ks_jb_object(&jb);
    ks_jb_add(&jb, g, "forecast", forecast_json(&jb, f));
    ks_jb_add(&jb, g, "env", env_json(&jb, b->env));
    ks_jb_add(&jb, g, "env_writable", ks_jb_bool(&jb, b->env_writable));
    ks_jb_add(&jb, g, "env_unwritable_reason", ks_jb_string(&jb, b->unwritable_reason));
    ks_jb_add(&jb, g, "not_followed", ks_jb_strv(&jb, f->notes));
    return ks_jb_finish(&jb, g);
}

void ks_print_forecast(const ks_ctx *ctx, const ks_boot *b, const ks_grub_forecast *fc)
{
    for (size_t i = 0; i < fc->n; i++) {
        const ks_grub_forecast_boot *f = &fc->v[i];
        const char *what = f->kernel ? f->kernel : f->title_path;
        ks_printf("%s%s%s (%s)", i == 0 ? "" : ctx->sep, i == 0 ? "next boot: " : "then: ", what,
                  boot_label(f));
    }
    if (fc->n > 0 && fc->v[fc->n - 1].waits)
        ks_printf("%sthen: whatever someone picks at the console", ctx->sep);
    ks_printf("\n");
    for (size_t i = 0; i < fc->n; i++) {
        const ks_grub_forecast_boot *f = &fc->v[i];
        ks_printf("  boot %u: %s\n", f->boot, f->title_path);
        if (ctx->verbose)
            ks_printf("          id %s\n", f->id_path);
        for (char **c = f->changes; c && *c; c++)
            ks_printf("          grubenv %s\n", *c);
        if (f->save_env_failures)
            ks_printf("          save_env fails %u time(s): GRUB shows an error and boots on\n",
                      f->save_env_failures);
    }
    if (!b->env)
        ks_printf("grubenv: none (/%s)\n", KS_GRUBENV_PATH);
    else
        ks_printf("grubenv: %zu variable(s), GRUB %s write it at boot%s%s\n",
                  ks_grubenv_count(b->env), b->env_writable ? "can" : "cannot",
                  b->unwritable_reason ? ": " : "", strempty(b->unwritable_reason));
    for (char **n = fc->notes; n && *n; n++)
        ks_printf("not followed: %s\n", *n);
}

int ks_collect_forecast(const ks_ctx *ctx, ks_boot *b, ks_grub_forecast *f, ks_findings *findings)
{
    _cleanup_free_ char *err = NULL;
    int r;

    r = ks_boot_load(ctx->root, b, &err);
    if (r < 0) {
        ks_error("%s", err ? err : strerror(-r));
        return r;
    }
    r = ks_boot_forecast(b, f);
    if (r < 0) {
        /* -ELOOP here is the evaluator's own limit, not a symbolic link. */
        ks_error("cannot forecast the next boots: %s",
                 r == -ELOOP ? "grub.cfg runs beyond the evaluator's limits (too many steps or "
                               "too much expanded text); GRUB itself may never reach the menu"
                             : strerror(-r));
        return r;
    }
    if (findings) {
        r = ks_boot_forecast_findings(b, f, findings);
        if (r < 0)
            return r;
    }
    return 0;
}
