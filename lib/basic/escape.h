/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

/*
 * Text from data (PRETTY_NAME, GRUB titles, file names in a package) for text output: control
 * characters (C0, DEL, C1 in UTF-8) become \xNN, a backslash \\, so a terminal escape
 * sequence in a root's os-release cannot reach the terminal. Printable UTF-8 stays as is. JSON
 * output needs none of this (json-c escapes). NULL in, NULL out; NULL on ENOMEM.
 */
char *ks_escape_text(const char *s);

/* The same into a ring of buffers owned by the caller's thread, for printf() arguments: valid
 * until KS_ESCAPE_RING further calls; "" for NULL or on ENOMEM. */
#define KS_ESCAPE_RING 8
const char *ks_esc(const char *s);
