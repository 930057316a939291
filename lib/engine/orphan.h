/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/findings.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/journal.h"

/*
 * A kswap trial the state journal does not know: the journal is lost (moved away, removed) or
 * damaged, and GRUB's setup still holds kswap's trial: next_entry names kswap's trial entry,
 * the trial's script is in /etc/grub.d, or its entries are in grub.cfg. The next boot may be a
 * trial nobody judges. status and plan say so (finding trial.orphaned), and kswap rollback
 * disarms it: the way-back entry names the old kernel, the trial entry the new one.
 */
typedef struct ks_orphan_trial {
    bool armed;   /* next_entry names kswap's trial entry */
    bool entries; /* the trial's script or its entries in grub.cfg */
    char *old;    /* the release of the way-back entry in grub.cfg; NULL when none */
    char *new;    /* the release of the trial entry; NULL when none */
} ks_orphan_trial;

void ks_orphan_trial_done(ks_orphan_trial *o);

/*
 * 1 when GRUB's setup (b; NULL: not readable) holds a kswap trial that the journal (j; NULL: it
 * cannot be read) does not know (no journal, or an idle one that names no kernel), with *ret
 * filled; 0 when none; -ENOMEM.
 */
int ks_orphan_trial_find(const ks_root *root, const ks_boot *b, const ks_journal *j,
                         ks_orphan_trial *ret);
/* The finding trial.orphaned (severity sev) for o; -ENOMEM only. */
int ks_orphan_trial_finding(const ks_orphan_trial *o, ks_severity sev, ks_findings *f);
