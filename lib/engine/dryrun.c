/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>

#include "lib/basic/alloc-util.h"
#include "lib/engine/dryrun.h"
#include "lib/engine/trialboot.h"

void ks_dryrun_free(ks_dryrun *d)
{
    if (!d)
        return;
    free(d->old_kernel);
    free(d->new_kernel);
    free(d->package);
    free(d->source_kind);
    free(d->source);
    free(d->version);
    free(d->resume_state);
    free(d->apply_command);
    for (size_t i = 0; i < d->n_files; i++) {
        free(d->files[i].path);
        free(d->files[i].action);
        free(d->files[i].what);
        free(d->files[i].content);
        free(d->files[i].new_path);
    }
    free(d->files);
    for (size_t i = 0; i < d->n_programs; i++) {
        free(d->programs[i].step);
        ks_strv_free(d->programs[i].argv);
    }
    free(d->programs);
    for (size_t i = 0; i < d->n_steps; i++) {
        free(d->steps[i].name);
        free(d->steps[i].detail);
    }
    free(d->steps);
    free(d->forecast_note);
    ks_boot_done(&d->boot_after);
    ks_grub_forecast_done(&d->forecast);
    free(d);
}

static bool is_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t'))
            return false;
    return true;
}

int ks_dryrun_add_file(ks_dryrun *d, const char *path, const char *action, const char *what,
                       const char *content, size_t size, bool binary)
{
    size_t cap = d->n_files;
    ks_dry_file *f;

    assert(d);
    assert(path);
    assert(action);
    if (!GREEDY_REALLOC(d->files, cap, d->n_files + 1))
        return -ENOMEM;
    f = &d->files[d->n_files];
    *f = (ks_dry_file){.path = strdup(path),
                       .action = strdup(action),
                       .what = what ? strdup(what) : NULL,
                       .content = content && !binary ? strndup(content, size) : NULL,
                       .size = size};
    d->n_files++;
    if (!f->path || !f->action || (what && !f->what) || (content && !binary && !f->content))
        return -ENOMEM;
    return 0;
}

int ks_dryrun_add_transaction(ks_dryrun *d, const ks_transaction *t)
{
    int r;

    for (size_t i = 0; i < t->n; i++) {
        const ks_file_change *c = &t->v[i];
        const char *action = ks_file_change_kind_to_string(c->kind);

        r = ks_dryrun_add_file(d, c->path, action ? action : "change", c->what, c->data, c->len,
                               c->data && !is_text(c->data, c->len));
        if (r < 0)
            return r;
        if (c->new_path) {
            d->files[d->n_files - 1].new_path = strdup(c->new_path);
            if (!d->files[d->n_files - 1].new_path)
                return -ENOMEM;
        }
    }
    return 0;
}

int ks_dryrun_add_program(ks_dryrun *d, const char *step, char *const *argv, bool ran)
{
    size_t cap = d->n_programs;
    ks_dry_program *p;

    if (!GREEDY_REALLOC(d->programs, cap, d->n_programs + 1))
        return -ENOMEM;
    p = &d->programs[d->n_programs++];
    *p = (ks_dry_program){.step = strdup(step), .ran = ran};
    if (!p->step)
        return -ENOMEM;
    for (char *const *a = argv; *a; a++)
        if (ks_strv_extend(&p->argv, *a) < 0)
            return -ENOMEM;
    return 0;
}

int ks_dryrun_add_step(ks_dryrun *d, const char *name, const char *detail)
{
    size_t cap = d->n_steps;
    ks_dry_step *s;

    if (!GREEDY_REALLOC(d->steps, cap, d->n_steps + 1))
        return -ENOMEM;
    s = &d->steps[d->n_steps++];
    *s = (ks_dry_step){.name = strdup(name), .detail = detail ? strdup(detail) : NULL};
    return s->name && (!detail || s->detail) ? 0 : -ENOMEM;
}

/*
 * grub.cfg as update-grub writes it once the trial's script is in /etc/grub.d and the drop-in
 * says GRUB_DEFAULT=saved: the script's static text (what `exec tail -n +3 $0` prints) as the
 * section after 00_header, and 00_header's default "${saved_entry}". NULL when grub.cfg has no
 * 00_header section to place it after.
 */
static char *cfg_after_arming(const char *cfg, const char *script)
{
    static const char end_header[] = "### END /etc/grub.d/00_header ###\n";
    const char *end = strstr(cfg, end_header), *body = script;
    _cleanup_free_ char *header = NULL;
    char *line;

    if (!end)
        return NULL;
    for (int i = 0; i < 2 && body; i++) {
        body = strchr(body, '\n');
        if (body)
            body++;
    }
    if (!body)
        return NULL;
    end += strlen(end_header);
    header = strndup(cfg, (size_t)(end - cfg));
    if (!header)
        return NULL;
    /* 00_header's else branch: `set default="0"` (or an entry) becomes the saved entry. */
    for (line = strstr(header, "set default=\""); line; line = strstr(line + 1, "set default=\"")) {
        char *q = strchr(line + strlen("set default=\""), '"');
        if (!q || ks_startswith(line, "set default=\"${next_entry}\""))
            continue;
        if (!ks_startswith(line, "set default=\"${saved_entry}\"")) {
            char *n = ks_asprintf("%.*sset default=\"${saved_entry}\"%s", (int)(line - header),
                                  header, q + 1);
            if (!n)
                return NULL;
            free(header);
            header = n;
        }
        break;
    }
    return ks_asprintf("%s### BEGIN /%s ###\n%s### END /%s ###\n%s", header, KS_TRIAL_GRUBD_PATH,
                       body, KS_TRIAL_GRUBD_PATH, end);
}

static char *env_text(const ks_grubenv *e)
{
    char *s = strdup("");

    for (size_t i = 0; s && i < ks_grubenv_count(e); i++) {
        char *n = ks_asprintf("%s%s=%s\n", s, ks_grubenv_name(e, i), ks_grubenv_value(e, i));
        free(s);
        s = n;
    }
    return s;
}

static int note(ks_dryrun *d, const char *fmt, ...) _printf_(2, 3);
static int note(ks_dryrun *d, const char *fmt, ...)
{
    va_list ap;

    free(d->forecast_note);
    d->forecast_note = NULL;
    va_start(ap, fmt);
    (void)ks_vasprintf_r(&d->forecast_note, fmt, ap);
    va_end(ap);
    return d->forecast_note ? 0 : -ENOMEM;
}

int ks_dryrun_forecast(ks_dryrun *d, const ks_root *root, const ks_boot *b, const char *old,
                       const char *new, const char *trial_args)
{
    _cleanup_free_ char *cfg_text = NULL, *script = NULL, *detail = NULL, *after = NULL,
                        *envs = NULL;
    ks_grub_entry_path p = {0};
    ks_grub_error perr = {0};
    _cleanup_grubenv_ ks_grubenv *env = NULL;
    size_t len = 0;
    int r;

    assert(d);
    assert(b);
    r = b->env ? ks_grubenv_dup(b->env, &env) : ks_grubenv_new(&env);
    if (r < 0)
        return r;
    /* prepare: saved_entry = the old kernel's id path (next_entry, prev_saved_entry unset);
     * arm: next_entry = the trial entry. */
    r = ks_boot_entry_path(b, old, &p);
    if (r < 0)
        return r == -ENOMEM ? r
                            : note(d, "the old kernel %s has no entry GRUB can name in /%s", old,
                                   KS_GRUB_CFG_PATH);
    r = ks_grubenv_set(env, "saved_entry", p.id_path);
    ks_grub_entry_path_done(&p);
    if (r >= 0)
        r = ks_grubenv_unset(env, "prev_saved_entry");
    if (r >= 0)
        r = ks_grubenv_set(env, "next_entry", KS_TRIAL_ENTRY_ID);
    if (r < 0)
        return r == -ENOMEM ? r : note(d, "the environment block cannot hold the entry paths");
    envs = env_text(env);
    if (!envs)
        return -ENOMEM;
    r = ks_dryrun_add_file(d, KS_GRUBENV_PATH, "write",
                           "GRUB's environment block: the old kernel the default, a one-shot "
                           "next_entry for the trial",
                           envs, strlen(envs), false);
    if (r >= 0)
        d->files[d->n_files - 1].size = KS_GRUBENV_SIZE;
    if (r < 0)
        return r;
    if (!new)
        return note(d,
                    "the new kernel is known only once apt installed it; apply evaluates the "
                    "forecast on the grub.cfg update-grub writes then, and refuses to arm "
                    "when boot 1 is not the new kernel or boots 2 and 3 not %s",
                    old);
    r = ks_trial_grubd_text(b->cfg, new, old, trial_args, &script, &detail);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return note(d, "%s is not in /%s yet (update-grub runs after the install): %s", new,
                    KS_GRUB_CFG_PATH, strempty(detail));
    r = ks_dryrun_add_file(d, KS_TRIAL_GRUBD_PATH, "write",
                           "the trial's GRUB entries (kswap-way-back, kswap-trial)", script,
                           strlen(script), false);
    if (r < 0)
        return r;
    r = ks_root_read_file(root, KS_GRUB_CFG_PATH, 16u << 20, &cfg_text, &len);
    if (r < 0)
        return r == -ENOMEM ? r : note(d, "cannot read /%s: %s", KS_GRUB_CFG_PATH, strerror(-r));
    after = cfg_after_arming(cfg_text, script);
    if (!after)
        return note(d, "/%s has no 00_header section to place the trial's entries after",
                    KS_GRUB_CFG_PATH);
    r = ks_grub_cfg_parse(after, strlen(after), &d->boot_after.cfg, &perr);
    if (r < 0)
        return r == -ENOMEM ? r : note(d, "the grub.cfg after arming does not parse");
    d->boot_after.env = TAKE_PTR(env);
    d->boot_after.env_writable = b->env_writable;
    d->boot_after.efi = b->efi;
    r = ks_boot_forecast(&d->boot_after, &d->forecast);
    if (r < 0)
        return r == -ENOMEM ? r : note(d, "cannot forecast the next boots: %s", strerror(-r));
    d->forecast_known = true;
    d->forecast_promised = d->forecast.n >= KS_FORECAST_BOOTS;
    for (size_t i = 0; i < d->forecast.n && i < KS_FORECAST_BOOTS; i++) {
        const ks_grub_forecast_boot *x = &d->forecast.v[i];
        if (x->waits || x->fell_back || x->one_shot != (i == 0) ||
            !streq_ptr(x->kernel, i == 0 ? new : old))
            d->forecast_promised = false;
    }
    return note(d,
                "evaluated on /%s as update-grub would write it with kswap's trial entries "
                "and GRUB_DEFAULT=saved, and the grubenv above",
                KS_GRUB_CFG_PATH);
}
