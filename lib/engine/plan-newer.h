/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/engine/plan.h"

/*
 * Day two: the pinned XanMod kernel (the state journal's, when the swap is pinned) and a newer
 * installed kernel of its flavour (the release without its version and trailing build number,
 * "x64v3-xanmod" of "6.12.9-x64v3-xanmod1") that GRUB's default does not start: finding
 * kernel.newer-not-default (warn). Without --kernel and --deb, that newer kernel becomes plan's
 * target, so that apply moves from the pinned kernel (old: it runs) to it. Nothing when no
 * swap is pinned or GRUB cannot be read (other findings say why).
 */
int ks_plan_newer_xanmod(const ks_root *root, const ks_plan_opts *opts, ks_plan *p);
/* "6.12.9-x64v3-xanmod1" -> "x64v3-xanmod"; NULL when release has no '-'. */
char *ks_kernel_flavour(const char *release);
