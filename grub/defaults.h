/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

#include "lib/basic/root.h"

/*
 * Settings of /etc/default/grub and /etc/default/grub.d/ *.cfg, which update-grub sources as
 * shell in that order (last assignment wins). Only plain assignments are understood: quoting
 * ('...', "...", backslash), "$VAR"/"${VAR}" expansion of earlier assignments; anything else
 * on a line (commands, conditionals) is skipped and counted in n_skipped.
 */
typedef struct ks_grub_defaults {
    char **keys; /* parallel arrays, in first-assignment order */
    char **values;
    char **files; /* the file (inside the root) that set each key last */
    size_t n;
    size_t keys_cap, values_cap, files_cap;
    size_t n_skipped;
} ks_grub_defaults;

/* Parses one file's text on top of what *d already holds. file names it in errors/results. */
int ks_grub_defaults_parse(ks_grub_defaults *d, const char *text, size_t len, const char *file);
/* Reads etc/default/grub then etc/default/grub.d/ *.cfg (sorted) inside the root. */
int ks_grub_defaults_load(const ks_root *root, ks_grub_defaults *ret);
const char *ks_grub_defaults_get(const ks_grub_defaults *d, const char *key);
const char *ks_grub_defaults_file(const ks_grub_defaults *d, const char *key);
void ks_grub_defaults_done(ks_grub_defaults *d);
/*
 * Writes kswap's own drop-in etc/default/grub.d/90-kswap.cfg atomically: KEY='value' lines
 * (shell single quotes, ' written as '\''), sourced after the distribution's files. Keys must
 * be shell names (-EINVAL otherwise).
 */
int ks_grub_defaults_write_dropin(const ks_root *root, const char *const *keys,
                                  const char *const *values, size_t n);
