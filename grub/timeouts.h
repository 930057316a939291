/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "grub/cfg.h"

/*
 * The menu countdowns a grub.cfg sets for boots kswap cannot watch, found by running the
 * script (grub/eval.h) as GRUB would on such a boot and comparing with a plain BIOS boot:
 * - after_failure: the boot after one that never reached userspace, so grubenv still holds
 *   recordfail=1 (Debian's and Ubuntu's 00_header set GRUB_RECORDFAIL_TIMEOUT there);
 * - efi: an EFI boot (Ubuntu's 00_header makes every EFI boot count down
 *   GRUB_RECORDFAIL_TIMEOUT when it cannot save recordfail; older ones test `lsefi`).
 * Each is INT_MIN when that boot counts down as the plain one does; -1 means it waits at the
 * menu for a key. normal is the plain boot's countdown (-1: it waits).
 */
typedef struct ks_grub_timeouts {
    int normal;
    int after_failure;
    int efi;
} ks_grub_timeouts;

/* -ENOMEM, or the evaluator's error (its step limit: -E2BIG). */
int ks_grub_timeouts_run(const ks_grub_cfg *cfg, ks_grub_timeouts *ret);
