/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/host/kernels.h"

/*
 * Day two: a newer release of the node's XanMod branch than the one kswap swapped it to.
 *
 * The node's kernel is the state journal's new kernel once the swap is pinned, else (no swap
 * journaled, or an idle one) the running kernel when it is a XanMod kernel; a swap in flight
 * (armed, trial-booted, failed, ...) has no day two yet. The branch is its metapackage: the
 * one installed (linux-xanmod-lts-x64v3, ...), else the one of the kernel's build level on the
 * LTS branch, else the caller's. The newest release of the branch is the linux-image-RELEASE
 * that the metapackage's highest version in apt's lists depends on (the Packages indexes of
 * the repository kswap installs from, var/lib/apt/lists/URI_dists_SUITE_*_Packages), or the
 * newest installed kernel of the node kernel's XanMod flavour ("x64v3-xanmod"), whichever is
 * newer. It is an update when it is newer than the node's kernel and GRUB's default does not
 * start it already: installed (kernel.newer-not-default) or only in the lists
 * (kernel.update-available).
 */
typedef struct ks_update {
    char *current;         /* the node's kernel; NULL: no day two here (nothing else is set) */
    char *package;         /* the branch's metapackage */
    char *newest;          /* the update's release; NULL: the node is up to date */
    bool installed;        /* newest is installed (it only is not the default) */
    char *package_version; /* the metapackage version that brings newest (lists), or NULL */
    char *seen_in;         /* where newest was found: an index file or /boot/vmlinuz-R */
    char *listed;          /* the release the lists' highest metapackage brings, newer or not
                            * (NULL: the lists do not have the metapackage) */
} ks_update;

typedef struct ks_update_opts {
    const char *package;       /* NULL: the node's (above) */
    const char *repo_uri;      /* NULL: XanMod's archive */
    const char *suite;         /* NULL: the lists are not read */
    const ks_kernels *kernels; /* NULL: listed here */
} ks_update_opts;

/* 0 with *ret (ret->current NULL: no day two here), or -ENOMEM. */
int ks_update_check(const ks_root *root, const ks_update_opts *o, ks_update *ret);
void ks_update_done(ks_update *u);
/* The same for the node as kswap installs on it: [repository] uri and suite of cfg (NULL:
 * defaults), else XanMod's archive and the suite of the OS (etc/os-release). */
int ks_update_check_node(const ks_root *root, const ks_config *cfg, ks_update *ret);
