/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/engine/plan.h"

/*
 * plan's part: the update as kernel.newer-not-default or kernel.update-available (warn, the
 * remedy is opts->apply_command or "kswap apply"), p->update filled; without --kernel and --deb
 * the newest release is plan's target. Nothing when there is no update.
 */
int ks_plan_newer_xanmod(const ks_root *root, const ks_plan_opts *opts, ks_plan *p);
/* "6.12.9-x64v3-xanmod1" -> "x64v3-xanmod"; NULL when release has no '-'. */
char *ks_kernel_flavour(const char *release);
