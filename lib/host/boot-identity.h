/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lib/basic/root.h"

/*
 * Which boot this is: the kernel's random boot id and the boot time. Parsers take text; the
 * readers go through the root.
 */

/*
 * A boot_id file: one UUID (36 characters, hex, any case) and an optional newline. *ret gets it
 * in lower case. -EBADMSG otherwise; *ret untouched on failure.
 */
int ks_boot_id_parse(const char *text, size_t len, char **ret);
/* proc/stat text: the "btime N" line. -EBADMSG when absent or not a number. */
int ks_btime_parse(const char *text, size_t len, uint64_t *ret);
int ks_read_boot_id(const ks_root *root, char **ret);  /* proc/sys/kernel/random/boot_id */
int ks_read_btime(const ks_root *root, uint64_t *ret); /* proc/stat */
