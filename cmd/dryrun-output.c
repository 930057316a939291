/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What apply --dry-run found apply would do, and what rollback --purge removed, as text and JSON.
 */
#include "cmd/dryrun-output.h"
#include "cmd/forecast.h"
#include "lib/basic/escape.h"

static json_object *argv_json(ks_json_builder *jb, char *const *argv)
{
    json_object *a = ks_jb_array(jb);
    for (char *const *p = argv; p && *p; p++)
        ks_jb_push(jb, a, ks_jb_string(jb, *p));
    return a;
}

json_object *ks_json_dryrun(const ks_dryrun *d)
{
    ks_json_builder jb = {0};
    json_object *o = ks_jb_object(&jb), *src = ks_jb_object(&jb), *steps = ks_jb_array(&jb),
                *progs = ks_jb_array(&jb), *files = ks_jb_array(&jb);

    ks_jb_add(&jb, o, "old_kernel", ks_jb_string(&jb, d->old_kernel));
    ks_jb_add(&jb, o, "new_kernel", ks_jb_string(&jb, d->new_kernel));
    ks_jb_add(&jb, o, "package", ks_jb_string(&jb, d->package));
    ks_jb_add(&jb, src, "kind", ks_jb_string(&jb, d->source_kind));
    ks_jb_add(&jb, src, "name", ks_jb_string(&jb, d->source));
    ks_jb_add(&jb, o, "source", src);
    ks_jb_add(&jb, o, "locked", ks_jb_bool(&jb, d->locked));
    ks_jb_add(&jb, o, "resume", ks_jb_bool(&jb, d->resume));
    ks_jb_add(&jb, o, "resume_state", ks_jb_string(&jb, d->resume_state));
    for (size_t i = 0; i < d->n_steps; i++) {
        json_object *s = ks_jb_object(&jb);
        ks_jb_add(&jb, s, "name", ks_jb_string(&jb, d->steps[i].name));
        ks_jb_add(&jb, s, "detail", ks_jb_string(&jb, d->steps[i].detail));
        ks_jb_push(&jb, steps, s);
    }
    ks_jb_add(&jb, o, "steps", steps);
    for (size_t i = 0; i < d->n_programs; i++) {
        json_object *p = ks_jb_object(&jb);
        ks_jb_add(&jb, p, "step", ks_jb_string(&jb, d->programs[i].step));
        ks_jb_add(&jb, p, "argv", argv_json(&jb, d->programs[i].argv));
        ks_jb_add(&jb, p, "ran", ks_jb_bool(&jb, d->programs[i].ran));
        ks_jb_push(&jb, progs, p);
    }
    ks_jb_add(&jb, o, "programs", progs);
    for (size_t i = 0; i < d->n_files; i++) {
        const ks_dry_file *f = &d->files[i];
        json_object *x = ks_jb_object(&jb);
        ks_jb_add(&jb, x, "path", ks_jb_string(&jb, f->path));
        ks_jb_add(&jb, x, "action", ks_jb_string(&jb, f->action));
        ks_jb_add(&jb, x, "what", ks_jb_string(&jb, f->what));
        ks_jb_add(&jb, x, "content", ks_jb_string(&jb, f->content));
        ks_jb_add(&jb, x, "size", ks_jb_int(&jb, (int64_t)f->size));
        ks_jb_add(&jb, x, "new_path", ks_jb_string(&jb, f->new_path));
        ks_jb_push(&jb, files, x);
    }
    ks_jb_add(&jb, o, "files", files);
    ks_jb_add(&jb, o, "forecast_known", ks_jb_bool(&jb, d->forecast_known));
    ks_jb_add(&jb, o, "forecast_promised", ks_jb_bool(&jb, d->forecast_promised));
    ks_jb_add(&jb, o, "forecast_note", ks_jb_string(&jb, d->forecast_note));
    ks_jb_add(&jb, o, "grub_after",
              d->forecast_known ? ks_jb_part(&jb, ks_json_grub(&d->boot_after, &d->forecast))
                                : NULL);
    return ks_jb_finish(&jb, o);
}

static void print_content(const char *content)
{
    const char *p = content;

    while (p && *p) {
        size_t n = strcspn(p, "\n");
        _cleanup_free_ char *line = strndup(p, n);
        ks_printf("      | %s\n", line ? line : "");
        p += n;
        if (*p == '\n')
            p++;
    }
}

void ks_print_dryrun(const ks_ctx *ctx, const ks_dryrun *d)
{
    ks_printf("apply --dry-run: nothing was changed%s\n",
              d->locked ? " (kswap's lock was held shared while reading)"
                        : " (no lock file: nobody held kswap's lock)");
    if (d->resume)
        ks_printf("resume    an interrupted apply (state %s) would go on\n",
                  strempty(d->resume_state));
    ks_printf("old       %s\n", strempty(d->old_kernel));
    ks_printf("new       %s\n", d->new_kernel ? d->new_kernel : "known once apt installed it");
    if (d->package && streq_ptr(d->source_kind, "deb"))
        ks_printf("install   the local package %s\n", d->source);
    else if (d->package)
        ks_printf("install   %s from the repository %s\n", d->package, d->source);
    else
        ks_printf("install   nothing: %s is installed already\n", d->source);
    ks_printf("steps    ");
    for (size_t i = 0; i < d->n_steps; i++)
        ks_printf(" %s", d->steps[i].name);
    ks_printf("\nprograms\n");
    for (size_t i = 0; i < d->n_programs; i++) {
        ks_printf("  [%s]", d->programs[i].step);
        for (char **a = d->programs[i].argv; a && *a; a++)
            ks_printf(" %s", *a);
        ks_printf("%s\n", d->programs[i].ran ? "  (ran: it changes nothing in the root)" : "");
    }
    ks_printf("files\n");
    for (size_t i = 0; i < d->n_files; i++) {
        const ks_dry_file *f = &d->files[i];
        ks_printf("  %s /%s%s%s", f->action, f->path, f->new_path ? " -> /" : "",
                  f->new_path ? f->new_path : "");
        if (f->what)
            ks_printf(": %s", f->what);
        if (f->size && !f->content)
            ks_printf(" (%zu bytes)", f->size);
        ks_printf("\n");
        print_content(f->content);
    }
    ks_printf("\nafter arming: ");
    if (d->forecast_known) {
        ks_print_forecast(ctx, &d->boot_after, &d->forecast);
        if (!d->forecast_promised)
            ks_printf("this is not the promised forecast (boot 1 new, boots 2 and 3 old): apply "
                      "would put the grubenv back and fail at arm\n");
    } else
        ks_printf("not evaluated now: %s\n", strempty(d->forecast_note));
}

json_object *ks_json_removed(const ks_swap_result *r)
{
    ks_json_builder jb = {0};
    json_object *a = ks_jb_array(&jb);

    for (size_t i = 0; i < r->n_removed; i++) {
        json_object *o = ks_jb_object(&jb);
        bool pkg = streq_ptr(r->removed[i].kind, "package");
        ks_jb_add(&jb, o, "kind", ks_jb_string(&jb, r->removed[i].kind));
        ks_jb_add(&jb, o, pkg ? "name" : "path", ks_jb_string(&jb, r->removed[i].name));
        ks_jb_add(&jb, o, "what", ks_jb_string(&jb, r->removed[i].what));
        ks_jb_push(&jb, a, o);
    }
    return ks_jb_finish(&jb, a);
}

void ks_print_removed(const ks_swap_result *r)
{
    if (r->n_removed == 0) {
        ks_printf("purge: nothing to remove: no package, apt source, keyring or drop-in of kswap "
                  "is left\n");
        return;
    }
    ks_printf("purge removed:\n");
    for (size_t i = 0; i < r->n_removed; i++)
        ks_printf("  %-12s %s%s%s%s\n", r->removed[i].kind,
                  streq_ptr(r->removed[i].kind, "package") ? "" : "/", r->removed[i].name,
                  r->removed[i].what ? "  " : "", r->removed[i].what ? r->removed[i].what : "");
}
