/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>

#include "lib/engine/journal.h"
#include "lib/engine/kernel-list.h"

const char *ks_relied_on_to_string(ks_relied_on r)
{
    switch (r) {
    case KS_RELIED_OLD:
        return "old";
    case KS_RELIED_PINNED:
        return "pinned";
    default:
        return NULL;
    }
}

int ks_boot_default_kernel(const ks_boot *b, char **ret)
{
    ks_grub_forecast f = {0};
    int r;

    *ret = NULL;
    r = ks_boot_forecast(b, &f);
    if (r < 0)
        return r;
    for (size_t i = 0; i < f.n; i++)
        if (!f.v[i].one_shot) {
            if (f.v[i].kernel && !(*ret = strdup(f.v[i].kernel)))
                r = -ENOMEM;
            break;
        }
    ks_grub_forecast_done(&f);
    return r;
}

void ks_kernel_list_done(ks_kernel_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].release);
        free(l->v[i].id_path);
        free(l->v[i].title_path);
    }
    free(l->v);
    free(l->running);
    free(l->default_kernel);
    free(l->grub_error);
    free(l->journal_error);
    *l = (ks_kernel_list){0};
}

int ks_kernel_list_run(const ks_root *root, ks_kernel_list *ret)
{
    _cleanup_free_ char *jerr = NULL;
    ks_kernel_list l = {0};
    ks_kernels ks = {0};
    ks_journal *j = NULL;
    const char *trial = NULL, *old = NULL, *pinned = NULL;
    ks_boot b = {0};
    bool have_boot;
    int r;

    assert(root);
    assert(ret);
    r = ks_kernels_list(root, &ks);
    if (r < 0 && r != -ENOENT)
        return r;
    (void)ks_running_kernel(root, &l.running);
    have_boot = ks_boot_load(root, &b, &l.grub_error) >= 0;
    if (have_boot && ks_boot_default_kernel(&b, &l.default_kernel) == -ENOMEM) {
        r = -ENOMEM;
        goto out;
    }
    if (ks_journal_load(root, &j, &jerr) < 0) {
        l.journal_error = jerr ? TAKE_PTR(jerr) : strdup("cannot be read");
        j = NULL;
    }
    if (j) {
        const ks_state_info *s = ks_state_info_get(ks_journal_state(j));
        /* The roles come from the state table (lib/engine/states.h). */
        if (s->trial)
            trial = ks_journal_get(j, KS_JF_NEW_KERNEL);
        if (s->in_flight)
            old = ks_journal_get(j, KS_JF_OLD_KERNEL);
        if (ks_journal_state(j) == KS_STATE_PINNED)
            pinned = ks_journal_get(j, KS_JF_NEW_KERNEL);
    }
    l.v = calloc(ks.n + 1, sizeof(*l.v));
    if (!l.v) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < ks.n; i++) {
        ks_listed_kernel *x = &l.v[l.n++];
        const char *rel = ks.v[i].release;
        ks_grub_entry_path p = {0};

        x->release = strdup(rel);
        if (!x->release) {
            r = -ENOMEM;
            goto out;
        }
        x->has_modules = ks.v[i].has_modules;
        x->has_initrd = ks.v[i].has_initrd;
        if (have_boot && ks_boot_entry_path(&b, rel, &p) >= 0) {
            x->id_path = TAKE_PTR(p.id_path);
            x->title_path = TAKE_PTR(p.title_path);
        }
        ks_grub_entry_path_done(&p);
        x->is_default = streq_ptr(l.default_kernel, rel);
        x->is_running = streq_ptr(l.running, rel);
        x->on_trial = streq_ptr(trial, rel);
        x->relied_on = streq_ptr(pinned, rel) ? KS_RELIED_PINNED
                       : streq_ptr(old, rel)  ? KS_RELIED_OLD
                                              : KS_RELIED_NONE;
    }
    r = 0;
out:
    ks_journal_free(j);
    ks_boot_done(&b);
    ks_kernels_done(&ks);
    if (r < 0) {
        ks_kernel_list_done(&l);
        return r;
    }
    *ret = l;
    return 0;
}
