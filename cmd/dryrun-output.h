/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "cmd/cmd.h"
#include "lib/engine/swap.h"

/* apply --dry-run's "dry_run" object (NULL: out of memory) and its text (kswap(8), APPLY
 * --DRY-RUN). */
json_object *ks_json_dryrun(const ks_dryrun *d);
void ks_print_dryrun(const ks_ctx *ctx, const ks_dryrun *d);
/* rollback --purge's "removed" array (NULL: out of memory) and its text: one line per thing
 * removed. */
json_object *ks_json_removed(const ks_swap_result *r);
void ks_print_removed(const ks_swap_result *r);
