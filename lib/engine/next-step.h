/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "grub/forecast.h"
#include "lib/engine/journal.h"
#include "lib/engine/orphan.h"
#include "lib/engine/states.h"

/*
 * What the operator does next, for every state and outcome of the journal (lib/engine/states.h),
 * from one table of rules (next-step.c): a command line that works when pasted as it is in the
 * same situation (the apply of the journal's source, --yes where apply would ask, no terminal
 * assumed), why, and the exit code plain `kswap status` answers with. status, apply, pin and
 * rollback print it; kswap(8), STATES, lists the table.
 */
typedef struct ks_next {
    char *command; /* NULL: nothing to do */
    char *why;
    ks_code exit_code;
} ks_next;

typedef struct ks_next_input {
    const ks_journal *j;           /* NULL: the journal cannot be read */
    const char *journal_error;     /* why not, when j is NULL */
    const char *running;           /* the running release (NULL: unknown) */
    const char *boot_id;           /* this boot's id (NULL: unknown) */
    const ks_orphan_trial *orphan; /* a trial the journal does not know (NULL: none) */
    const char *grub_error;        /* GRUB's state cannot be read (grubenv, grub.cfg): why */
    bool drifted; /* the forecast breaks the state's promise (ks_state_forecast_holds) */
    /* The next boot's default names no entry (a recreated or edited grubenv): GRUB falls back
     * to its first entry, whatever kernel that is (ks_forecast_default_unresolved) */
    bool default_unresolved;
    /* Day two (lib/engine/update.h): a newer release of the node's branch than update_current
     * (NULL: none), installed or only in apt's lists, and "kswap apply" as the caller spells
     * it for this root and configuration (NULL: none); an idle or pinned node's next step. */
    const char *update_newest, *update_current, *update_command;
    bool update_installed;
} ks_next_input;

/*
 * Whether the forecast of the next boots keeps what the journal's state promises
 * (docs/design.md, invariant 1): armed, the new kernel once as a one-shot, then the old one
 * (after the boot that armed it, the one-shot spent by the trial boot: the old one on every
 * boot); pinned, the new one
 * on every boot; trial-booted, rolled-back, an apply stopped half-way and a failed swap, the
 * old one on every boot (an apply or a swap that failed while arming: the armed forecast
 * too); idle promises nothing. Someone else's grub-set-default, grub-reboot or a recreated
 * grubenv breaks it.
 */
struct ks_grub_forecast;
bool ks_state_forecast_holds(const ks_journal *j, const struct ks_grub_forecast *f,
                             const char *boot_id);

/* Whether GRUB's next boot falls back to its first entry because its default names none. */
bool ks_forecast_default_unresolved(const struct ks_grub_forecast *f);

/* 0 with *ret filled (free with ks_next_done), or -ENOMEM. */
int ks_next_step(const ks_next_input *in, ks_next *ret);
void ks_next_done(ks_next *n);

/*
 * The swap is closed: an operator's rollback is done, or status --ack acknowledged it (the
 * journal's step "acknowledge"); a failed swap that is closed no longer fails status (exit 0).
 */
bool ks_swap_closed(const ks_journal *j);
/* What rollback --purge would remove is still recorded: packages kswap installed (other than
 * the old and the running kernel's) or apt sources and keys it wrote. */
bool ks_swap_has_leftovers(const ks_journal *j, const char *running);
