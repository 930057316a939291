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
/*
 * Whether an initramfs image decompresses: every segment read as the list above reads it, and
 * the compressed part read on to the end of its stream, so that a stream cut short or a
 * checksum that does not match is found too (gzip's CRC32, xz's and zstd's checks sit at the
 * end). 0, or the errors of the list above, and -EPIPE for a stream cut short; *ret_error says
 * what. Reads the whole file (apply reads the initrds a trial boot needs back from the disk
 * this way, lib/host/bootfiles.h).
 */
int ks_initrd_unpacks_fd(int fd, uint64_t data_max, char **ret_error);
/* The same for a file inside the root (e.g. "boot/initrd.img-6.1.0-57-amd64"). */
int ks_initrd_list_modules(const ks_root *root, const char *path, char ***ret_names,
                           char **ret_error);
