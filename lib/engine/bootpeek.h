/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/findings.h"
#include "lib/basic/root.h"
#include "lib/host/bootfiles.h"

/*
 * The cheap look at what one kernel's boots load: its kernel and initrds as its GRUB entry
 * names them (lib/host/bootfiles.h, ks_bootfile_peek: a stat and the first KiB of each, no
 * sync, no decompression). plan looks at the running kernel's, the way back of any trial;
 * kswap looks at the next boot's right before a reboot it asks for (lib/engine/rebootcheck.h).
 */
typedef struct ks_boot_peek {
    const char *release;  /* whose files */
    bool old;             /* the way back (boot.old-* ids); false: the trial's (boot.* ids) */
    const char *whose;    /* for people, after the path: "of the running kernel, the way back" */
    const char *then;     /* the remedy's last words: "then 'kswap apply --reboot' again" */
    ks_severity severity; /* of a problem (plan: block; before a reboot: block) */
    bool say_ok;          /* a finding of severity ok for each file that passed (plan) */
} ks_boot_peek;

/*
 * Looks at l's files. A problem is a finding naming the file and why: boot.old-kernel-damaged or
 * boot.old-initrd-damaged for the way back (missing and unreadable included), else
 * boot.kernel-damaged, boot.initrd-damaged and boot.file-unreadable. Returns the number of
 * problems, or -ENOMEM.
 */
int ks_boot_peek_loads(const ks_root *root, const ks_boot_loads *l, const ks_boot_peek *who,
                       ks_findings *findings);
/*
 * The same for what who->release's own entry in cfg loads (its normal entry by id path, the one
 * saved_entry names: lib/grub/paths.h). No such entry: 0, nothing looked at.
 */
int ks_boot_peek_kernel(const ks_root *root, const ks_grub_cfg *cfg, const ks_boot_peek *who,
                        ks_findings *findings);
