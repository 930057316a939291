/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>

#include "cmd.h"
#include "grub/cfg.h"
#include "grub/forecast.h"
#include "grub/grubenv.h"
#include "lib/bootfs.h"

#define GRUB_CFG "boot/grub/grub.cfg"
#define GRUBENV "boot/grub/grubenv"

typedef struct status {
    ks_grub_cfg *cfg;
    ks_grubenv *env; /* NULL: no grubenv */
    bool env_writable;
    bool env_writable_known;
    char *unwritable_reason;
    char *running; /* proc/sys/kernel/osrelease */
    ks_grub_forecast forecast;
    ks_findings findings;
} status;

static void status_done(status *s)
{
    ks_grub_cfg_free(s->cfg);
    ks_grubenv_free(s->env);
    free(s->unwritable_reason);
    free(s->running);
    ks_grub_forecast_done(&s->forecast);
    ks_findings_clear(&s->findings);
}

static int status_collect(const ks_ctx *ctx, status *s)
{
    _cleanup_free_ char *text = NULL;
    ks_grub_error err = {0};
    ks_bootfs b = {0};
    size_t len = 0;
    int k;

    k = ks_root_read_file(ctx->root, GRUB_CFG, 64u << 20, &text, &len);
    if (k < 0) {
        ks_error("cannot read '%s': %s", GRUB_CFG, strerror(-k));
        return k;
    }
    k = ks_grub_cfg_parse(text, len, &s->cfg, &err);
    if (k == -EBADMSG) {
        ks_error("cannot parse '%s': line %u, column %u: %s", GRUB_CFG, err.line, err.column,
                 err.message);
        return k;
    }
    if (k < 0) {
        ks_error("cannot parse '%s': %s", GRUB_CFG, strerror(-k));
        return k;
    }
    k = ks_grubenv_load(ctx->root, GRUBENV, &s->env);
    if (k == -EMSGSIZE || k == -EBADMSG) {
        ks_error("'%s' is not a GRUB environment block (%s)", GRUBENV,
                 k == -EMSGSIZE ? "not 1024 bytes" : "no signature or broken lines");
        return k;
    }
    if (k < 0 && k != -ENOENT) {
        ks_error("cannot read '%s': %s", GRUBENV, strerror(-k));
        return k;
    }
    k = ks_bootfs_probe(ctx->root, &b);
    if (k >= 0) {
        s->env_writable = b.env_writable;
        s->env_writable_known = true;
        if (b.unwritable_reason)
            s->unwritable_reason = strdup(b.unwritable_reason);
        ks_bootfs_done(&b);
    } else {
        /* Unknown: forecast as if GRUB could not write, the case where one-shots repeat. */
        ks_info(ctx, "boot file system not probed (%s): assuming GRUB cannot write grubenv",
                strerror(-k));
    }
    (void)ks_root_read_line(ctx->root, "proc/sys/kernel/osrelease", &s->running);

    k = ks_grub_forecast_run(s->cfg, s->env, s->env_writable, 3, &s->forecast);
    if (k < 0) {
        ks_error("cannot forecast the next boots: %s", strerror(-k));
        return k;
    }
    for (size_t i = 0; i < s->forecast.n; i++) {
        const ks_grub_forecast_boot *f = &s->forecast.v[i];
        if (f->fell_back && !ks_findings_get(&s->findings, "grub.entry-missing"))
            ks_findings_add(&s->findings, "grub.entry-missing", KS_SEV_BLOCK,
                            "name an entry by its full id path, e.g. the one kswap pins",
                            "boot %u: default '%s' matches no menu entry at some level; GRUB "
                            "silently boots entry 0 there ('%s')",
                            f->boot, strempty(f->default_value), strempty(f->title_path));
        if (f->waits && streq_ptr(f->wait_reason, "timeout"))
            ks_findings_add(&s->findings, "grub.recordfail-wait", KS_SEV_BLOCK,
                            "set GRUB_RECORDFAIL_TIMEOUT to a value >= 0 and run update-grub",
                            "boot %u: GRUB stops at its menu and waits for a key", f->boot);
        else if (f->waits)
            ks_findings_add(&s->findings, "grub.boot-waits", KS_SEV_BLOCK, NULL,
                            "boot %u: GRUB waits at the console (%s)", f->boot,
                            strempty(f->wait_reason));
        if (f->one_shot && i > 0 && s->forecast.v[i - 1].one_shot && !s->env_writable &&
            !ks_findings_get(&s->findings, "grub.env-unwritable"))
            ks_findings_add(&s->findings, "grub.env-unwritable", KS_SEV_BLOCK,
                            "remove next_entry with 'grub-editenv "
                            "/" GRUBENV " unset next_entry'",
                            "GRUB cannot clear next_entry at boot%s%s: the one-shot repeats on "
                            "every boot",
                            s->unwritable_reason ? ": " : "", strempty(s->unwritable_reason));
    }
    return 0;
}

static const char *boot_label(const ks_grub_forecast_boot *f)
{
    if (f->waits && streq_ptr(f->wait_reason, "password"))
        return "waits for a GRUB password";
    if (f->waits)
        return "waits at the menu";
    if (f->fell_back)
        return f->one_shot ? "one-shot, no such entry: entry 0" : "default, no such entry: entry 0";
    return f->one_shot ? "one-shot" : "default";
}

static json_object *forecast_json(const status *s)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < s->forecast.n; i++) {
        const ks_grub_forecast_boot *f = &s->forecast.v[i];
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

static int status_json(const status *s)
{
    json_object *o = json_object_new_object(), *g = json_object_new_object(), *notes;
    int r;

    json_object_object_add(o, "running", ks_json_string_or_null(s->running));
    json_object_object_add(g, "forecast", forecast_json(s));
    json_object_object_add(g, "env", env_json(s->env));
    json_object_object_add(g, "env_writable",
                           s->env_writable_known ? json_object_new_boolean(s->env_writable) : NULL);
    notes = json_object_new_array();
    for (char **n = s->forecast.notes; n && *n; n++)
        json_object_array_add(notes, json_object_new_string(*n));
    json_object_object_add(g, "not_followed", notes);
    json_object_object_add(o, "grub", g);
    json_object_object_add(o, "findings", ks_json_findings(&s->findings));
    r = ks_print_json(o);
    json_object_put(o);
    return r;
}

static void status_print(const ks_ctx *ctx, const status *s)
{
    if (s->running)
        printf("running: %s\n", s->running);
    for (size_t i = 0; i < s->forecast.n; i++) {
        const ks_grub_forecast_boot *f = &s->forecast.v[i];
        const char *what = f->kernel ? f->kernel : strempty(f->title_path);
        printf("%s%s (%s)", i == 0 ? "next boot: " : " · then: ", what, boot_label(f));
    }
    if (s->forecast.n > 0 && s->forecast.v[s->forecast.n - 1].waits)
        printf(" · then: whatever someone picks at the console");
    printf("\n");
    for (size_t i = 0; i < s->forecast.n; i++) {
        const ks_grub_forecast_boot *f = &s->forecast.v[i];
        printf("  boot %u: %s\n", f->boot, strempty(f->title_path));
        if (ctx->verbose)
            printf("          id %s\n", strempty(f->id_path));
        for (char **c = f->changes; c && *c; c++)
            printf("          grubenv %s\n", *c);
        if (f->save_env_failures)
            printf("          save_env fails %u time(s): GRUB shows an error and boots on\n",
                   f->save_env_failures);
    }
    if (!s->env)
        printf("grubenv: none (%s)\n", GRUBENV);
    else
        printf("grubenv: %zu variable(s), GRUB %s write it at boot%s%s\n", ks_grubenv_count(s->env),
               !s->env_writable_known ? "may not be able to"
               : s->env_writable      ? "can"
                                      : "cannot",
               s->unwritable_reason ? ": " : "", strempty(s->unwritable_reason));
    for (char **n = s->forecast.notes; n && *n; n++)
        printf("not followed: %s\n", *n);
    if (s->findings.n) {
        printf("\n");
        ks_print_findings(ctx, &s->findings);
    }
}

static int run_status(ks_ctx *ctx, int argc, char **argv)
{
    static const struct option options[] = {
        {"wait", no_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 't'},
        {"ack", no_argument, NULL, 'a'},
        {},
    };
    status s = {0};
    int c, r;

    while ((c = getopt_long(argc, argv, "+", options, NULL)) >= 0) {
        switch (c) {
        case 'w':
        case 't':
        case 'a':
            /* They act on the state journal, which does not exist yet. */
            return ks_usage_error(&ks_cmd_status, "'%s' needs the state journal (not there yet)",
                                  argv[optind - 1]);
        default:
            return ks_usage_error(&ks_cmd_status, "unknown option");
        }
    }
    if (optind < argc)
        return ks_usage_error(&ks_cmd_status, "unexpected argument '%s'", argv[optind]);

    if (status_collect(ctx, &s) < 0) {
        status_done(&s);
        return KS_EXIT_ERROR;
    }
    if (ctx->json) {
        r = status_json(&s);
    } else {
        status_print(ctx, &s);
        r = KS_EXIT_OK;
    }
    status_done(&s);
    return r;
}

const ks_cmd ks_cmd_status = {
    .name = "status",
    .run = run_status,
    .summary = "the state journal and the forecast of the next boots",
    .usage = "[--wait [--timeout SECONDS]] [--ack]",
    .flags = KS_READ_ONLY,
};
