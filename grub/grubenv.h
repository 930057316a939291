/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/*
 * GRUB's environment block (grub-core/lib/envblk.c, util/editenv.c): exactly 1024 bytes,
 * "# GRUB Environment Block\n", usually grub-editenv's "# WARNING: ..." comment line, then
 * "name=value\n" lines (backslash and newline in values escaped with a backslash), then '#'
 * padding. kswap keeps the raw block and edits it with the same algorithm as
 * grub_envblk_set()/grub_envblk_delete(), so unknown variables, their order and comment
 * lines stay byte for byte what grub-editenv would leave.
 *
 * Errors: -EMSGSIZE the input is not 1024 bytes; -EBADMSG no signature or a broken block
 * (a line without its newline, no newline before the padding); -ENOSPC a value does not fit;
 * -EINVAL a name that is empty or holds '=' or a newline.
 */
#define KS_GRUBENV_SIZE 1024
#define KS_GRUBENV_SIGNATURE "# GRUB Environment Block\n"

typedef struct ks_grubenv ks_grubenv;

/* A fresh block as `grub-editenv FILE create` writes it. */
int ks_grubenv_new(ks_grubenv **ret);
int ks_grubenv_parse(const char *data, size_t len, ks_grubenv **ret);
int ks_grubenv_dup(const ks_grubenv *e, ks_grubenv **ret);
ks_grubenv *ks_grubenv_free(ks_grubenv *e);
static inline void ks_grubenv_freep(ks_grubenv **e)
{
    ks_grubenv_free(*e);
}
#define _cleanup_grubenv_ __attribute__((cleanup(ks_grubenv_freep)))

/* Variables in block order, values unescaped (what `grub-editenv list` prints). */
size_t ks_grubenv_count(const ks_grubenv *e);
const char *ks_grubenv_name(const ks_grubenv *e, size_t i);
const char *ks_grubenv_value(const ks_grubenv *e, size_t i);
const char *ks_grubenv_get(const ks_grubenv *e, const char *name); /* NULL when unset */

/* grub_envblk_set(): replaces in place or appends; the block is unchanged on failure. */
int ks_grubenv_set(ks_grubenv *e, const char *name, const char *value);
/* grub_envblk_delete(): 0 also when the variable was not there. */
int ks_grubenv_unset(ks_grubenv *e, const char *name);

/* The raw 1024 bytes. */
const char *ks_grubenv_data(const ks_grubenv *e);
bool ks_grubenv_equal(const ks_grubenv *a, const ks_grubenv *b);

/* Reads path inside the root (e.g. "boot/grub/grubenv"); -ENOENT when missing, -EMSGSIZE when
 * not 1024 bytes, -EBADMSG without signature or with a broken line, -ELOOP when a symbolic link
 * (ks_grubenv_save replaces the file by rename, which would cut the link where GRUB and
 * grub-editenv write through it), the non-regular kinds of ks_root_open_regular. */
int ks_grubenv_load(const ks_root *r, const char *path, ks_grubenv **ret);
/* What is wrong with a block ks_grubenv_load refused with k, worded for "is not a usable GRUB
 * environment block: %s". */
const char *ks_grubenv_strerror(int k);
/* Writes the 1024 bytes atomically (temp file, fsync, rename, fsync directory), then writes the
 * file system's journal home, so that GRUB, which reads no journal, finds the new block after a
 * power cut (ks_fs_checkpoint_path). */
int ks_grubenv_save(const ks_grubenv *e, const ks_root *root, const char *path);
