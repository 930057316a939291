/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "cmd/cmd.h"
#include "lib/engine/bootctl.h"

/* "grub": {"forecast": [...], "env": {...}, "env_writable", ...} */
json_object *ks_json_grub(const ks_boot *b, const ks_grub_forecast *f); /* NULL: out of memory */
void ks_print_forecast(const ks_ctx *ctx, const ks_boot *b, const ks_grub_forecast *f);
/* Loads grub.cfg, grubenv and the boot filesystem, forecasts, adds findings; prints errors. */
int ks_collect_forecast(const ks_ctx *ctx, ks_boot *b, ks_grub_forecast *f, ks_findings *findings);
