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

static json_object *forecast_json(const ks_grub_forecast *fc)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < fc->n; i++) {
        const ks_grub_forecast_boot *f = &fc->v[i];
        json_object *o = json_object_new_object(), *ch = json_object_new_array();
        json_object_object_add(o, "boot", json_object_new_int((int)f->boot));
        json_object_object_add(o, "kernel", ks_json_string_or_null(f->kernel));
        json_object_object_add(o, "title_path", ks_json_string_or_null(f->title_path));
        json_object_object_add(o, "id_path", ks_json_string_or_null(f->id_path));
        json_object_object_add(o, "one_shot", json_object_new_boolean(f->one_shot));
        json_object_object_add(o, "waits", json_object_new_boolean(f->waits));
        json_object_object_add(o, "waits_for", ks_json_string_or_null(f->wait_reason));
        json_object_object_add(o, "timeout", json_object_new_int(f->timeout));
        json_object_object_add(o, "default", ks_json_string_or_null(f->default_value));
        json_object_object_add(o, "fell_back", json_object_new_boolean(f->fell_back));
        json_object_object_add(o, "save_env_failures",
                               json_object_new_int((int)f->save_env_failures));
        for (char **c = f->changes; c && *c; c++)
            json_object_array_add(ch, json_object_new_string(*c));
        json_object_object_add(o, "env_changes", ch);
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *env_json(const ks_grubenv *e)
{
    json_object *o;
    if (!e)
        return NULL;
    o = json_object_new_object();
    for (size_t i = 0; i < ks_grubenv_count(e); i++)
        json_object_object_add(o, ks_grubenv_name(e, i),
                               json_object_new_string(ks_grubenv_value(e, i)));
    return o;
}

json_object *ks_json_grub(const ks_boot *b, const ks_grub_forecast *f)
{
    json_object *g = json_object_new_object(), *notes = json_object_new_array();
    json_object_object_add(g, "forecast", forecast_json(f));
    json_object_object_add(g, "env", env_json(b->env));
    json_object_object_add(g, "env_writable", json_object_new_boolean(b->env_writable));
    json_object_object_add(g, "env_unwritable_reason",
                           ks_json_string_or_null(b->unwritable_reason));
    for (char **n = f->notes; n && *n; n++)
        json_object_array_add(notes, json_object_new_string(*n));
    json_object_object_add(g, "not_followed", notes);
    return g;
}

void ks_print_forecast(const ks_ctx *ctx, const ks_boot *b, const ks_grub_forecast *fc)
{
    for (size_t i = 0; i < fc->n; i++) {
        const ks_grub_forecast_boot *f = &fc->v[i];
        const char *what = ks_esc(f->kernel ? f->kernel : f->title_path);
        printf("%s%s%s (%s)", i == 0 ? "" : ctx->sep, i == 0 ? "next boot: " : "then: ", what,
               boot_label(f));
    }
    if (fc->n > 0 && fc->v[fc->n - 1].waits)
        printf("%sthen: whatever someone picks at the console", ctx->sep);
    printf("\n");
    for (size_t i = 0; i < fc->n; i++) {
        const ks_grub_forecast_boot *f = &fc->v[i];
        printf("  boot %u: %s\n", f->boot, ks_esc(f->title_path));
        if (ctx->verbose)
            printf("          id %s\n", ks_esc(f->id_path));
        for (char **c = f->changes; c && *c; c++)
            printf("          grubenv %s\n", *c);
        if (f->save_env_failures)
            printf("          save_env fails %u time(s): GRUB shows an error and boots on\n",
                   f->save_env_failures);
    }
    if (!b->env)
        printf("grubenv: none (/%s)\n", KS_GRUBENV_PATH);
    else
        printf("grubenv: %zu variable(s), GRUB %s write it at boot%s%s\n", ks_grubenv_count(b->env),
               b->env_writable ? "can" : "cannot", b->unwritable_reason ? ": " : "",
               strempty(b->unwritable_reason));
    for (char **n = fc->notes; n && *n; n++)
        printf("not followed: %s\n", *n);
}

int ks_collect_forecast(const ks_ctx *ctx, ks_boot *b, ks_grub_forecast *f, ks_findings *findings)
{
    _cleanup_free_ char *err = NULL;
    int k;

    k = ks_boot_load(ctx->root, b, &err);
    if (k < 0) {
        ks_error("%s", err ? err : strerror(-k));
        return k;
    }
    k = ks_boot_forecast(b, f);
    if (k < 0) {
        /* -ELOOP here is the evaluator's own limit, not a symbolic link. */
        ks_error("cannot forecast the next boots: %s",
                 k == -ELOOP ? "grub.cfg runs beyond the evaluator's limits (too many steps or "
                               "too much expanded text); GRUB itself may never reach the menu"
                             : strerror(-k));
        return k;
    }
    if (findings) {
        k = ks_boot_forecast_findings(b, f, findings);
        if (k < 0)
            return k;
    }
    return 0;
}
