/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/findings.h"
#include "lib/basic/root.h"

/*
 * The last look before a reboot kswap asks for (apply --reboot, accept's one reboot back to the
 * old kernel, rollback --reboot), right before systemctl reboot: cheap (grub.cfg and grubenv
 * read and forecast again, then a stat and the first KiB of each file the next boots load; no
 * decompression, no sync) and writing nothing. What it looks for:
 *   - the next boots are still the ones kswap set up: with a trial, boot 1 starts the trial
 *     kernel as the one-shot of kswap-trial and boots 2 and 3 the old kernel; without one, every
 *     boot the old kernel; never a boot that waits or a default that falls back (someone ran
 *     grub-reboot, grub-set-default or update-grub without kswap's script, or edited grubenv);
 *   - every file those boots load is there and intact (each boot's kernel and initrds as GRUB
 *     runs its entry, and with a trial also the way-back entry GRUB's fallback starts).
 * Each problem is a blocking finding: grub.next-boots-changed; boot.file-unreadable,
 * boot.kernel-damaged, boot.initrd-damaged for the trial's files; boot.old-kernel-damaged,
 * boot.old-initrd-damaged for the old kernel's. then: the remedies' last words (what to run
 * once the files are repaired).
 */
typedef struct ks_reboot_expect {
    const char *trial; /* the trial kernel boot 1 must start as a one-shot; NULL: no trial */
    const char *old;   /* the kernel of every other boot */
    const char *then;  /* "then 'kswap apply --reboot' again" */
} ks_reboot_expect;

/* The number of problems (0: reboot), or -ENOMEM. */
int ks_reboot_check(const ks_root *root, const ks_reboot_expect *expect, ks_findings *findings);
