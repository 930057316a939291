/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "cmd/cmd.h"
#include "lib/basic/config.h"
#include "lib/engine/next-step.h"
#include "lib/engine/swap.h"

void ks_swap_progress(void *userdata, const char *step, const char *message);
/* On a terminal only: the live line within an apt phase (ks_swap_common.live). */
void ks_swap_progress_live(void *userdata, const char *step, const char *message);
/* -v: each program run and each file read or written (ks_swap_common.trace). */
void ks_swap_trace(void *userdata, const char *what, const char *message);

/* The next step for the journal (NULL: unreadable, journal_error says why) and what runs now
 * (lib/engine/next-step.h); -ENOMEM. */
int ks_next_for_journal(const ks_ctx *ctx, const ks_journal *j, const ks_orphan_trial *orphan,
                        const char *journal_error, ks_next *ret);
/* n's command as it runs when pasted after this run: with its --root and --config (kswap(8),
 * "next steps"); the engine spells commands for the host and its default configuration. */
void ks_next_spell(const ks_ctx *ctx, ks_next *n);
void ks_print_next(const ks_next *n);
/* "next" and "next_reason" of n, added to o with b. */
void ks_json_add_next(ks_json_builder *b, json_object *o, const ks_next *n);
int ks_swap_config(const ks_ctx *ctx, ks_config **ret);
/* The command's words as the command log keeps them ("apply --deb k.deb --yes"); NULL: -ENOMEM. */
char *ks_command_words(int argc, char **argv);
/* Prints the result (human or JSON) with the forecast and returns the exit code. */
int ks_swap_render(const ks_ctx *ctx, const char *what, const ks_swap_result *r);
