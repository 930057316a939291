/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "cmd/cmd.h"
#include "lib/basic/config.h"
#include "lib/engine/swap.h"

void ks_swap_progress(void *userdata, const char *step, const char *message);
int ks_swap_progress_fd(void);
int ks_swap_config(const ks_ctx *ctx, ks_config **ret);
/* Prints the result (human or JSON) with the forecast and returns the exit code. */
int ks_swap_render(const ks_ctx *ctx, const char *what, const ks_swap_result *r);
