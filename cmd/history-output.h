/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "cmd/cmd.h"

/*
 * kswap status --history: the swap history (lib/engine/history.h), newest first, as a table
 * or, with --json, the array "history". Returns the exit code: 0, or 1 when the history
 * cannot be read (the message names the file).
 */
int ks_status_history(const ks_ctx *ctx);
