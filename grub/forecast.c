/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/forecast.h"
#include "grub/eval.h"

#include "lib/basic/util.h"

static void boot_done(ks_grub_forecast_boot *b)
{
    free(b->kernel);
    free(b->linux_path);
    free(b->title_path);
    free(b->id_path);
    free(b->default_value);
    ks_grubenv_free(b->env_before);
    ks_grubenv_free(b->env_after);
    ks_strv_free(b->changes);
}

void ks_grub_forecast_done(ks_grub_forecast *f)
{
    for (size_t i = 0; i < f->n; i++)
        boot_done(&f->v[i]);
    free(f->v);
    ks_strv_free(f->notes);
    *f = (ks_grub_forecast){0};
}

static int add_change(char ***l, const char *name, const char *from, const char *to)
{
    _cleanup_free_ char *a = from ? ks_asprintf("'%s'", from) : strdup("unset");
    _cleanup_free_ char *b = to ? ks_asprintf("'%s'", to) : strdup("unset");
    if (!a || !b)
        return -ENOMEM;
    return ks_strv_push(l, ks_asprintf("%s: %s -> %s", name, a, b));
}

int ks_grubenv_diff(const ks_grubenv *a, const ks_grubenv *b, char ***ret)
{
    _cleanup_strv_free_ char **l = NULL;
    int k;

    for (size_t i = 0; a && i < ks_grubenv_count(a); i++) {
        const char *name = ks_grubenv_name(a, i);
        const char *to = b ? ks_grubenv_get(b, name) : NULL;
        if (!streq_ptr(ks_grubenv_get(a, name), to) && !ks_strv_contains(l, name)) {
            k = add_change(&l, name, ks_grubenv_get(a, name), to);
            if (k < 0)
                return k;
        }
    }
    for (size_t i = 0; b && i < ks_grubenv_count(b); i++) {
        const char *name = ks_grubenv_name(b, i);
        if (a && ks_grubenv_get(a, name))
            continue;
        k = add_change(&l, name, NULL, ks_grubenv_get(b, name));
        if (k < 0)
            return k;
    }
    *ret = TAKE_PTR(l);
    return 0;
}

static int one_boot(const ks_grub_cfg *cfg, const ks_grubenv *env, bool writable, bool efi,
                    ks_grub_forecast_boot *b, char ***notes)
{
    _cleanup_grub_eval_ ks_grub_eval *ev = NULL;
    ks_grub_eval_opts o = {.env = env, .env_writable = writable, .efi = efi};
    ks_grub_boot_result r = {0};
    int k;

    k = ks_grub_eval_new(cfg, &o, &ev);
    if (k < 0)
        return k;
    k = ks_grub_eval_run(ev);
    if (k < 0)
        return k;
    k = ks_grub_eval_boot(ev, &r);
    if (k < 0)
        return k;
    b->kernel = r.waits ? NULL : TAKE_PTR(r.kernel);
    b->linux_path = TAKE_PTR(r.linux_path);
    b->title_path = TAKE_PTR(r.title_path);
    b->id_path = TAKE_PTR(r.id_path);
    b->default_value = TAKE_PTR(r.default_value);
    b->one_shot = r.one_shot;
    b->waits = r.waits;
    b->wait_reason = r.wait_reason;
    b->timeout = r.timeout;
    b->fell_back = r.fell_back;
    b->recovery = r.recovery;
    ks_grub_boot_result_done(&r);
    b->save_env_failures = ks_grub_eval_save_env_failures(ev);
    if (env && (k = ks_grubenv_dup(env, &b->env_before)) < 0)
        return k;
    if (ks_grub_eval_env(ev) && (k = ks_grubenv_dup(ks_grub_eval_env(ev), &b->env_after)) < 0)
        return k;
    k = ks_grubenv_diff(b->env_before, b->env_after, &b->changes);
    if (k < 0)
        return k;
    for (char **s = ks_grub_eval_notes(ev); s && *s; s++)
        if (!ks_strv_contains(*notes, *s) && (k = ks_strv_extend(notes, *s)) < 0)
            return k;
    return 0;
}

int ks_grub_forecast_run(const ks_grub_cfg *cfg, const ks_grubenv *env, bool env_writable, bool efi,
                         unsigned n_boots, ks_grub_forecast *ret)
{
    ks_grub_forecast f = {0};
    _cleanup_grubenv_ ks_grubenv *cur = NULL;
    int k = 0;

    if (env && (k = ks_grubenv_dup(env, &cur)) < 0)
        return k;
    f.v = calloc(n_boots ? n_boots : 1, sizeof(*f.v));
    if (!f.v)
        return -ENOMEM;
    for (unsigned i = 0; i < n_boots; i++) {
        ks_grub_forecast_boot *b = &f.v[f.n++];

        b->boot = i + 1;
        k = one_boot(cfg, cur, env_writable, efi, b, &f.notes);
        if (k < 0)
            break;
        if (b->waits)
            break;
        /* The booted system's grub-common.service: grub-editenv ... unset recordfail. It
         * writes through the file system, so it works where GRUB's save_env cannot. */
        if (b->env_after) {
            cur = ks_grubenv_free(cur);
            k = ks_grubenv_dup(b->env_after, &cur);
            if (k >= 0)
                k = ks_grubenv_unset(cur, "recordfail");
            if (k < 0)
                break;
        }
    }
    if (k < 0) {
        ks_grub_forecast_done(&f);
        return k;
    }
    *ret = f;
    return 0;
}
