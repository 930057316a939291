/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/engine/orphan.h"
#include "lib/engine/trialboot.h"

void ks_orphan_trial_done(ks_orphan_trial *o)
{
    free(o->old);
    free(o->new);
    *o = (ks_orphan_trial){0};
}

static const char *entry_release(const ks_boot *b, const char *id)
{
    for (size_t i = 0; b && b->cfg && i < b->cfg->n_entries; i++)
        if (!b->cfg->entries[i].submenu && streq_ptr(b->cfg->entries[i].id, id))
            return b->cfg->entries[i].release;
    return NULL;
}

/* The journal knows the swap: it names a kernel, or it is past idle. */
static bool journal_knows(const ks_journal *j)
{
    return j && (ks_journal_state(j) != KS_STATE_IDLE || ks_journal_get(j, KS_JF_OLD_KERNEL) ||
                 ks_journal_get(j, KS_JF_NEW_KERNEL));
}

int ks_orphan_trial_find(const ks_root *root, const ks_boot *b, const ks_journal *j,
                         ks_orphan_trial *ret)
{
    ks_orphan_trial o = {0};
    const char *old, *new;

    if (journal_knows(j))
        return 0;
    o.armed = b && b->env && streq_ptr(ks_grubenv_get(b->env, "next_entry"), KS_TRIAL_ENTRY_ID);
    old = entry_release(b, KS_WAYBACK_ENTRY_ID);
    new = entry_release(b, KS_TRIAL_ENTRY_ID);
    o.entries = ks_trial_grubd_exists(root) || old || new;
    if (!o.armed && !o.entries)
        return 0;
    if ((old && !(o.old = strdup(old))) || (new && !(o.new = strdup(new)))) {
        ks_orphan_trial_done(&o);
        return -ENOMEM;
    }
    *ret = o;
    return 1;
}

int ks_orphan_trial_finding(const ks_orphan_trial *o, ks_severity sev, ks_findings *f)
{
    return ks_findings_add(
        f, "trial.orphaned", sev,
        "'kswap rollback' disarms it and makes the old kernel the default again",
        "a kswap trial%s%s is %s in GRUB's setup (%s) but the state journal does not know it: "
        "the next boot%s",
        o->new ? " of " : "", strempty(o->new), o->armed ? "armed" : "left",
        o->armed && o->entries ? "next_entry = " KS_TRIAL_ENTRY_ID " and the trial's entries"
        : o->armed             ? "next_entry = " KS_TRIAL_ENTRY_ID
                               : "the trial's entries in /" KS_TRIAL_GRUBD_PATH " or grub.cfg",
        o->armed ? " is a trial nobody judges" : "s carry entries nobody removes");
}
