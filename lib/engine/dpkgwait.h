/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/engine/swap.h"
#include "lib/host/dpkglock.h"

/*
 * Waits until nobody holds dpkg's locks (lib/host/dpkglock.h), polling, with a progress line
 * naming the holder when the wait starts and every KS_DPKG_WAIT_PROGRESS_S seconds. kswap
 * never takes the locks itself: apt-get does, and a program that takes them between this
 * check and apt-get's start makes apt-get fail with its own words. 0: free; -ETIMEDOUT after
 * timeout_ms with *ret_holder naming the holder; other -errno when a lock file cannot be
 * opened (*ret_holder.lock names it).
 */
#define KS_DPKG_WAIT_PROGRESS_S 5
int ks_dpkg_lock_wait(const ks_root *root, unsigned timeout_ms, ks_progress_fn progress,
                      void *userdata, ks_dpkg_lock_holder *ret_holder);

/* For people: "unattended-upgr (pid 1234: /usr/bin/python3 /usr/bin/unattended-upgrade)". */
char *ks_dpkg_lock_holder_describe(const ks_dpkg_lock_holder *h);
/* What to do about a holder: stop unattended-upgrades, or wait for the named program. */
char *ks_dpkg_lock_remedy(const ks_dpkg_lock_holder *h);
