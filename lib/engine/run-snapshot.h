/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "checks/snapshot.h"
#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/engine/journal.h"

/*
 * A check context for the root: KSWAP_ROOT for programs under --root, the [accept] program
 * timeout. *ret_root_abs keeps the root's absolute path the context points to (free it).
 */
int ks_check_ctx_for_root(const ks_root *root, const ks_config *cfg, const char *kernel,
                          ks_check_ctx *ret, char **ret_root_abs);

/*
 * Takes the snapshot of what runs now and keeps it in the journal (not saved here). Returns the
 * number of items, or negative errno; *ret_summary (may be NULL) says how many and what was
 * not snapshotted, for the progress line.
 */
/*
 * items_before (may be NULL: a resumed apply): the items of a snapshot taken when apply began
 * (its check step), a second sample of what runs. An item taken now that was not there then
 * did not run all along on the old kernel: a module the apply itself loaded (update-grub's
 * grub-probe loads dm_mod on Debian 13) goes to the skipped list, anything else to wanted
 * (reported after the trial, never required: the old kernel's own boot showed it come and go).
 */
int ks_record_running(const ks_root *root, const ks_config *cfg, const char *kernel, ks_journal *j,
                      char *const *items_before, char **ret_summary);
