/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "lib/basic/root.h"

/* The most the compressed part of an initramfs may decompress to (-EFBIG beyond). */
#define KS_INITRD_DATA_MAX (2ull * 1024 * 1024 * 1024)

/*
 * The initramfs check: what the new kernel needs to find its root file system (the root
 * device's drivers and the file system's module) must be built in or inside the initrd.
 */

/*
 * Names of the kernel modules inside an initramfs image (normalized, sorted, unique): every
 * segment of the concatenated cpio archives, uncompressed ones (early microcode) first, then
 * one compressed with zstd, xz, gzip, lz4, bzip2 or lzma, decoded in this process
 * (lib/kernel/unpack.h). -EBADMSG when it is not an initramfs, -EPROTONOSUPPORT when compressed
 * otherwise, -EFBIG past KS_INITRD_DATA_MAX.
 */
int ks_initrd_list_modules_fd(int fd, char ***ret_names, char **ret_error);
/* The same with another cap than KS_INITRD_DATA_MAX. */
int ks_initrd_list_modules_fd_max(int fd, uint64_t data_max, char ***ret_names, char **ret_error);
/* The same for a file inside the root (e.g. "boot/initrd.img-6.1.0-57-amd64"). */
int ks_initrd_list_modules(const ks_root *root, const char *path, char ***ret_names,
                           char **ret_error);
