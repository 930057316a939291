/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/engine/plan.h"

/*
 * kswap's own words on the node's command line: kswap.trial=, kswap.deadline=, kswap.softdog=
 * belong on the trial entry kswap writes, nowhere else. In GRUB_CMDLINE_LINUX or
 * GRUB_CMDLINE_LINUX_DEFAULT (/etc/default/grub and its grub.d drop-ins) they would be on every
 * boot, and on the running boot's /proc/cmdline they were (the trial entry's own words, the
 * last ones when the running boot is the armed trial, do not count): finding boot.kswap-words
 * (warn), naming them and where. The trial boot's generator ignores a marker kswap did not arm,
 * but a copied marker makes every boot look like a trial to people and tools, and an old
 * trial's deadline or softdog words would come back with it. Nothing is added when there are
 * none. Never fails for a file that is missing or cannot be read (other findings say so).
 */
int ks_plan_kswap_words(const ks_root *root, ks_plan *p);
/* Whether word (one word of a kernel command line) is one of kswap's trial words. */
bool ks_is_kswap_word(const char *word);
