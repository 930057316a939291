/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/forecast.h"
#include "grub/eval.h"

#include "lib/basic/util.h"

static void boot_done(ks_grub_forecast_boot *b)
{
    free(b->kernel);
    free(b->linux_path);
    ks_strv_free(b->initrds);
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
    int r;

    for (size_t i = 0; a && i < ks_grubenv_count(a); i++) {
        const char *name = ks_grubenv_name(a, i);
        const char *to = b ? ks_grubenv_get(b, name) : NULL;
        if (!streq_ptr(ks_grubenv_get(a, name), to) && !ks_strv_contains(l, name)) {
            r = add_change(&l, name, ks_grubenv_get(a, name), to);
            if (r < 0)
                return r;
        }
    }
    for (size_t i = 0; b && i < ks_grubenv_count(b); i++) {
        const char *name = ks_grubenv_name(b, i);
        if (a && ks_grubenv_get(a, name))
            continue;
        r = add_change(&l, name, NULL, ks_grubenv_get(b, name));
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(l);
    return 0;
}

static int one_boot(const ks_grub_cfg *cfg, const ks_grubenv *env, bool writable, bool efi,
                    ks_grub_forecast_boot *b, char ***notes)
{
    _cleanup_grub_eval_ ks_grub_eval *ev = NULL;
    ks_grub_eval_opts o = {.env = env, .env_writable = writable, .efi = efi};
    ks_grub_boot_result res = {0};
    int r;

    r = ks_grub_eval_new(cfg, &o, &ev);
    if (r < 0)
        return r;
    r = ks_grub_eval_run(ev);
    if (r < 0)
        return r;
    r = ks_grub_eval_boot(ev, &res);
    if (r < 0)
        return r;
    b->kernel = res.waits ? NULL : TAKE_PTR(res.kernel);
    b->linux_path = TAKE_PTR(res.linux_path);
    b->initrds = TAKE_PTR(res.initrds);
    b->title_path = TAKE_PTR(res.title_path);
    b->id_path = TAKE_PTR(res.id_path);
    b->default_value = TAKE_PTR(res.default_value);
    b->one_shot = res.one_shot;
    b->waits = res.waits;
    b->wait_reason = res.wait_reason;
    b->timeout = res.timeout;
    b->fell_back = res.fell_back;
    b->recovery = res.recovery;
    ks_grub_boot_result_done(&res);
    b->save_env_failures = ks_grub_eval_save_env_failures(ev);
    if (env && (r = ks_grubenv_dup(env, &b->env_before)) < 0)
        return r;
    if (ks_grub_eval_env(ev) && (r = ks_grubenv_dup(ks_grub_eval_env(ev), &b->env_after)) < 0)
        return r;
    r = ks_grubenv_diff(b->env_before, b->env_after, &b->changes);
    if (r < 0)
        return r;
    for (char **s = ks_grub_eval_notes(ev); s && *s; s++)
        if (!ks_strv_contains(*notes, *s) && (r = ks_strv_extend(notes, *s)) < 0)
            return r;
    return 0;
}

int ks_grub_forecast_run(const ks_grub_cfg *cfg, const ks_grubenv *env, bool env_writable, bool efi,
                         unsigned n_boots, ks_grub_forecast *ret)
{
    ks_grub_forecast f = {0};
    _cleanup_grubenv_ ks_grubenv *cur = NULL;
    int r = 0;

    if (env && (r = ks_grubenv_dup(env, &cur)) < 0)
        return r;
    f.v = calloc(n_boots ? n_boots : 1, sizeof(*f.v));
    if (!f.v)
        return -ENOMEM;
    for (unsigned i = 0; i < n_boots; i++) {
        ks_grub_forecast_boot *b = &f.v[f.n++];

        b->boot = i + 1;
        r = one_boot(cfg, cur, env_writable, efi, b, &f.notes);
        if (r < 0)
            break;
        if (b->waits)
            break;
        /* The booted system's grub-common.service: grub-editenv ... unset recordfail. It
         * writes through the file system, so it works where GRUB's save_env cannot. */
        if (b->env_after) {
            cur = ks_grubenv_free(cur);
            r = ks_grubenv_dup(b->env_after, &cur);
            if (r >= 0)
                r = ks_grubenv_unset(cur, "recordfail");
            if (r < 0)
                break;
        }
    }
    if (r < 0) {
        ks_grub_forecast_done(&f);
        return r;
    }
    *ret = f;
    return 0;
}
