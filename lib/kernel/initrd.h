/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

/*
 * The initramfs check: what the new kernel needs to find its root file system (the root
 * device's drivers and the file system's module) must be built in or inside the initrd.
 */

/*
 * Names of the kernel modules inside an initramfs image (normalized, sorted, unique): every
 * segment of the concatenated cpio archives, uncompressed ones (early microcode) first, then
 * one compressed with zstd, xz, gzip, lz4, bzip2 or lzma. -EBADMSG when it is not an initramfs.
 */
int ks_initrd_list_modules_fd(int fd, char ***ret_names, char **ret_error);
/* The same for a file inside the root (e.g. "boot/initrd.img-6.1.0-57-amd64"). */
int ks_initrd_list_modules(const ks_root *root, const char *path, char ***ret_names,
                           char **ret_error);
