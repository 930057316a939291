/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>

#include "lib/basic/util.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/bootpeek.h"
#include "lib/engine/rebootcheck.h"
#include "lib/engine/trialboot.h"

static const char *changed_remedy(const ks_reboot_expect *e)
{
    return e->trial ? "see what the next boots are ('kswap status'); 'kswap rollback' and then "
                      "'kswap apply' arm the trial again"
                    : "'kswap rollback' makes the old kernel the default again; reboot after it";
}

/* Whether boot i (0-based) of the forecast is the one kswap set up; *ret_want says which. */
static bool boot_as_set_up(const ks_reboot_expect *e, size_t i, const ks_grub_forecast_boot *b,
                           const char **ret_want)
{
    bool shot = e->trial && i == 0;

    *ret_want = shot ? e->trial : e->old;
    if (b->waits || !streq_ptr(b->kernel, *ret_want) || b->one_shot != shot)
        return false;
    if (shot)
        return streq_ptr(b->id_path, KS_TRIAL_ENTRY_ID);
    return !b->fell_back;
}

static int check_forecast(const ks_reboot_expect *e, const ks_grub_forecast *f,
                          ks_findings *findings)
{
    for (size_t i = 0; i < f->n; i++) {
        const ks_grub_forecast_boot *b = &f->v[i];
        _cleanup_free_ char *would = NULL;
        const char *want = NULL;
        int r;

        if (boot_as_set_up(e, i, b, &want))
            continue;
        would = b->waits
                    ? ks_asprintf("wait at the menu (%s)", strempty(b->wait_reason))
                    : ks_asprintf("start %s%s (entry '%s'%s)", b->kernel ? b->kernel : "no kernel",
                                  b->one_shot ? " as a one-shot" : "", strempty(b->id_path),
                                  b->fell_back ? ": the default matches no entry" : "");
        if (!would)
            return -ENOMEM;
        r = ks_findings_add(
            findings, "grub.next-boots-changed", KS_SEV_BLOCK, changed_remedy(e),
            "the next boots are no longer the ones kswap set up: boot %zu would %s, "
            "where kswap set up %s%s",
            i + 1, would, e->trial && i == 0 ? "the one-shot trial of " : "", want);
        return r < 0 ? r : 1;
    }
    return 0;
}

/* The files of l not looked at yet, looked at; their paths join *seen. */
static int peek_new(const ks_root *root, ks_boot_loads *l, const ks_boot_peek *who, char ***seen,
                    ks_findings *findings)
{
    _cleanup_(ks_boot_loads_done) ks_boot_loads fresh = {0};

    if (l->kernel && !ks_strv_contains(*seen, l->kernel)) {
        if (ks_strv_extend(seen, l->kernel) < 0)
            return -ENOMEM;
        fresh.kernel = TAKE_PTR(l->kernel);
    }
    for (char **i = l->initrds; i && *i; i++)
        if (!ks_strv_contains(*seen, *i) &&
            (ks_strv_extend(seen, *i) < 0 || ks_strv_extend(&fresh.initrds, *i) < 0))
            return -ENOMEM;
    return ks_boot_peek_loads(root, &fresh, who, findings);
}

static int check_files(const ks_root *root, const ks_reboot_expect *e, const ks_boot *b,
                       const ks_grub_forecast *f, ks_findings *findings)
{
    _cleanup_strv_free_ char **seen = NULL;
    ks_boot_peek trial = {.release = e->trial,
                          .whose = "of the trial kernel",
                          .then = e->then,
                          .severity = KS_SEV_BLOCK},
                 old = {.release = e->old,
                        .old = true,
                        .whose = "of the old kernel, the way back,",
                        .then = e->then,
                        .severity = KS_SEV_BLOCK};
    int r, problems = 0;

    for (size_t i = 0; i < f->n; i++) {
        _cleanup_(ks_boot_loads_done) ks_boot_loads l = {0};
        bool is_trial = e->trial && streq_ptr(f->v[i].kernel, e->trial);

        if (f->v[i].waits || !f->v[i].linux_path)
            continue;
        r = ks_boot_loads_from(f->v[i].linux_path, f->v[i].initrds, &l);
        if (r >= 0)
            r = peek_new(root, &l, is_trial ? &trial : &old, &seen, findings);
        if (r < 0)
            return r;
        problems += r;
    }
    /* A trial GRUB cannot load goes on to entry 0, the way back: its files too. */
    for (size_t i = 0; e->trial && i < b->cfg->n_entries; i++) {
        const ks_grub_entry *entry = &b->cfg->entries[i];
        _cleanup_(ks_boot_loads_done) ks_boot_loads l = {0};

        if (entry->submenu || !streq(ks_grub_entry_id(entry), KS_WAYBACK_ENTRY_ID))
            continue;
        r = ks_boot_loads_of_entry(entry, &l);
        if (r >= 0)
            r = peek_new(root, &l, &old, &seen, findings);
        if (r < 0)
            return r;
        problems += r;
        break;
    }
    return problems;
}

int ks_reboot_check(const ks_root *root, const ks_reboot_expect *e, ks_findings *findings)
{
    _cleanup_free_ char *err = NULL;
    ks_grub_forecast f = {0};
    ks_boot b = {0};
    int r, problems;

    assert(root);
    assert(e && e->old && e->then);
    assert(findings);
    r = ks_boot_load(root, &b, &err);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        r = ks_findings_add(findings, "grub.next-boots-changed", KS_SEV_BLOCK, changed_remedy(e),
                            "GRUB's state cannot be read any more: %s", err ? err : strerror(-r));
        return r < 0 ? r : 1;
    }
    r = ks_boot_forecast(&b, &f);
    if (r >= 0) {
        problems = check_forecast(e, &f, findings);
        r = problems < 0 ? problems : check_files(root, e, &b, &f, findings);
        if (r >= 0)
            r += problems;
    } else if (r != -ENOMEM) {
        r = ks_findings_add(findings, "grub.next-boots-changed", KS_SEV_BLOCK, changed_remedy(e),
                            "the next boots cannot be forecast from '/%s': %s", KS_GRUB_CFG_PATH,
                            strerror(-r));
        r = r < 0 ? r : 1;
    }
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    return r;
}
