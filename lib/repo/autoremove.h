/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

/*
 * The kernels a swap relies on (the old one it falls back to, the new one on trial or pinned)
 * kept from `apt autoremove` by an apt.conf drop-in, the way apt's own
 * /etc/kernel/postinst.d/apt-auto-removal keeps the running and the newest kernels: one
 * APT::NeverAutoRemove pattern "^linux-.*-RELEASE$" per kernel (image, modules, headers of that
 * release). apt's built-in protection covers the running kernel and the two newest only: a
 * distribution kernel update during a swap makes the old kernel removable without this.
 */
#define KS_AUTOREMOVE_PATH "etc/apt/apt.conf.d/01autoremove-kswap"
#define KS_AUTOREMOVE_MARKER "// Written by kswap"

/* The drop-in's text for releases (NULL-terminated; NULL entries and repeats skipped), with
 * every regex metacharacter of a release escaped; NULL on ENOMEM. */
char *ks_autoremove_text(char *const *releases);
/* Before a swap writes anything: 0 when the path is free or kswap's, -EEXIST when a file there
 * is not kswap's, another negative errno when it cannot be read (a FIFO, ...). */
int ks_autoremove_check(const ks_root *root);
/* Writes the drop-in (atomically, durably) unless it holds that text already. 1 written, 0 as it
 * was; -EEXIST when the path holds a file kswap did not write (left alone). */
int ks_autoremove_keep(const ks_root *root, char *const *releases);
/* Removes kswap's drop-in: 1 removed, 0 none there, -EEXIST when the file there is not kswap's
 * (left alone). */
int ks_autoremove_release(const ks_root *root);
