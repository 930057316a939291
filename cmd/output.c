/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

#include "cmd/cmd.h"

static void vmsg(const char *level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void vmsg(const char *level, const char *fmt, va_list ap)
{
    fprintf(stderr, "kswap: %s", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void ks_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("error: ", fmt, ap);
    va_end(ap);
}

void ks_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

void ks_info(const ks_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    if (!ctx->verbose)
        return;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
}

int ks_usage_error(const ks_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("error: ", fmt, ap);
    va_end(ap);
    fprintf(stderr, "usage: kswap [--root DIR] [--json] %s %s\n", cmd->name, cmd->usage);
    return KS_EXIT_ERROR;
}

int ks_print_json(json_object *o)
{
    const char *s = json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
        ks_error("cannot write to standard output: %m");
        return KS_EXIT_ERROR;
    }
    return KS_EXIT_OK;
}

json_object *ks_json_string_or_null(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

json_object *ks_json_findings(const ks_findings *f)
{
    ks_json_builder b = {0};
    json_object *a = ks_jb_array(&b);

    assert(f);
    for (size_t i = 0; i < f->n; i++) {
        json_object *o = ks_jb_object(&b);
        ks_jb_add(&b, o, "id", ks_jb_string(&b, f->v[i].id));
        ks_jb_add(&b, o, "severity", ks_jb_string(&b, ks_severity_to_string(f->v[i].severity)));
        ks_jb_add(&b, o, "message", ks_jb_string(&b, f->v[i].message));
        ks_jb_add(&b, o, "remedy", ks_jb_string(&b, f->v[i].remedy));
        ks_jb_push(&b, a, o);
    }
    return ks_jb_finish(&b, a);
}

const char *ks_color(const ks_ctx *ctx, ks_severity s)
{
    if (!ctx->color)
        return "";
    switch (s) {
    case KS_SEV_OK:
        return "\033[32m";
    case KS_SEV_WARN:
        return "\033[33m";
    default:
        return "\033[1;31m";
    }
}

const char *ks_color_reset(const ks_ctx *ctx)
{
    return ctx->color ? "\033[0m" : "";
}

void ks_print_findings(const ks_ctx *ctx, const ks_findings *f)
{
    static const char *const marks[_KS_SEV_MAX] = {"ok", "WARN", "BLOCK"};
    size_t w = 0;

    for (size_t i = 0; i < f->n; i++)
        if (strlen(f->v[i].id) > w)
            w = strlen(f->v[i].id);
    for (size_t i = 0; i < f->n; i++) {
        const ks_finding *x = &f->v[i];
        printf("  %s%-5s%s  %-*s  %s\n", ks_color(ctx, x->severity), marks[x->severity],
               ks_color_reset(ctx), (int)w, x->id, x->message);
        if (x->remedy && x->severity != KS_SEV_OK)
            printf("  %-5s  %-*s  -> %s\n", "", (int)w, "", x->remedy);
    }
}
