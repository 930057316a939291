/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/engine/swap.h"

/*
 * kswap tidy: what a finished swap left behind. Once a swap is pinned the node needs two
 * kernels: the one it runs (the pinned one) and one fallback, the kernel it ran before (the
 * state journal's old kernel). Everything else goes:
 * - every other installed kernel release: its packages linux-*-RELEASE (image, modules,
 *   modules-extra, headers), the distribution's older kernels and earlier XanMod releases;
 * - the distribution's kernel metapackages (linux-generic, linux-image-generic, linux-virtual,
 *   linux-image-amd64, linux-image-cloud-amd64, the -hwe- ones, ...), which would bring new
 *   distribution kernels nobody boots, but only while a XanMod metapackage is installed, so
 *   that the node keeps a package that brings kernel updates.
 * The running kernel, the default, the pinned kernel and the fallback are never on the list,
 * whatever apt says. Tidy refuses while a swap is not pinned: during a swap (prepared ...
 * trial-booted: the old kernel is the way back), after a failed or rolled-back one (rollback
 * --purge cleans that up), with no swap at all, or when the node does not run the pinned
 * kernel. The apt autoremove guard keeps exactly the running kernel and the fallback.
 */
typedef struct ks_tidy_item {
    char *release; /* a kernel release, NULL for a metapackage */
    char **packages;
    char *why;
} ks_tidy_item;

typedef struct ks_tidy {
    char *running, *fallback;
    char *refused; /* why tidy does nothing here, for people; NULL: it may act */
    char *remedy;  /* what to do instead, with refused */
    ks_tidy_item *v;
    size_t n, cap;
    char **kept_metapackages; /* distribution metapackages kept, and why in kept_why */
    char *kept_why;
    /* after ks_tidy_run */
    char **removed; /* packages dpkg no longer has */
    char *error;    /* what failed, for people */
    char *output;   /* the failing apt-get's output */
    bool guard_written;
} ks_tidy;

void ks_tidy_done(ks_tidy *t);
/* Every package the list removes, in order (NULL-terminated, borrowed strings; free() the array).
 */
char **ks_tidy_packages(const ks_tidy *t);

/* Read-only: what tidy would do (ret->refused says why not). 0, or -ENOMEM. */
int ks_tidy_plan(const ks_root *root, ks_tidy *ret);

/*
 * Takes the lock, plans again under it, writes the autoremove guard for the running kernel
 * and the fallback, waits for dpkg's lock and runs apt-get -y purge for the list, then checks
 * that the running kernel, the fallback and GRUB's default are still there. 0 done (also with
 * nothing to remove), -EPERM refused (t->refused), -EBUSY another kswap holds the lock, other
 * -errno failed (t->error).
 */
int ks_tidy_run(const ks_root *root, const ks_swap_common *c, ks_tidy *t);
