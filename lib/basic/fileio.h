/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "lib/basic/root.h"

/*
 * Replaces path inside the root atomically: a temporary file in the same directory, write,
 * fsync, rename over the target, fsync the directory. Interrupted at any instant, the target
 * holds either the old or the new content. Parent directories are created (mode 0755) when
 * missing. Returns 0 or negative errno; nothing is left behind on failure.
 */
int ks_write_atomic(const ks_root *r, const char *path, const void *data, size_t len, mode_t mode);
/*
 * The same into the open directory dfd, as the file name (no slash); never creates a directory.
 * The temporary file is ".#NAME.kswapXXXXXXXX", so a reader that looks only at names ending in
 * a suffix (node_exporter: ".prom") never sees it.
 */
int ks_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode);

/*
 * Every file kswap opens is looked up first as an O_PATH descriptor, which opens nothing (no
 * driver's open() runs, a FIFO cannot block), its type proven with fstat(), and only then
 * opened for real through /proc/self/fd/N: the very inode that was judged, not the path again
 * (which another process could have swapped for a device in between). What is not of an
 * allowed type is an error of its own, and is never opened:
 *   -EISDIR a directory, -ESPIPE a FIFO, -ENOTSOCK a socket, -ENODEV a device node,
 *   -ELOOP a symbolic link looked up with O_NOFOLLOW;
 * ks_strerror() words them ("is a FIFO, not a regular file"). proc and sysfs files are
 * regular files. Root paths go through ks_root_open_file() (lib/basic/root.h); these are the
 * pieces it is built of, and the way to open files of the running machine.
 */
typedef enum ks_file_types {
    KS_FILE_REGULAR = 1u << 0,
    KS_FILE_DIRECTORY = 1u << 1,
    KS_FILE_BLOCK = 1u << 2, /* a block device (the boot file system's, for blkid) */
} ks_file_types;

/* The error above for a file of mode st_mode; 0 when its type is one of types. */
int ks_file_type_check(mode_t st_mode, unsigned types);
/*
 * Opens what the O_PATH descriptor path_fd refers to with flags (O_RDONLY, O_RDWR, O_TRUNC,
 * ...; O_CREAT, O_EXCL and O_NOFOLLOW are dropped, the lookup is done), after its type was
 * proven one of types. An fd (O_CLOEXEC, O_NOCTTY) or -errno; -EXDEV when /proc is not mounted
 * (nothing was opened: the caller may look the path up again and compare, see
 * ks_fd_same_inode()).
 */
int ks_fd_reopen(int path_fd, int flags, unsigned types);
/* Whether fd is the file st describes (device and inode). */
bool ks_fd_same_inode(int fd, const struct stat *st);
/* Kept for callers that opened with O_NONBLOCK already: the type check of an open fd, and
 * O_NONBLOCK cleared for a regular file. */
int ks_fd_ensure_regular(int fd);
/*
 * A regular file relative to dirfd (AT_FDCWD: a path of the running machine, e.g. --config
 * FILE, --deb FILE, /proc/PID/...), opened read-only that way; extra_flags e.g. O_NOFOLLOW.
 * An fd or -errno.
 */
int ks_openat_regular(int dirfd, const char *path, int extra_flags);
static inline int ks_open_regular(const char *path)
{
    return ks_openat_regular(AT_FDCWD, path, 0);
}
/* strerror() for the codes above and -EFBIG ("larger than kswap reads"); strerror() otherwise. */
const char *ks_strerror(int err);

/*
 * Reads an open file to its end (also proc and sysfs files, whose size says 0), NUL-terminated.
 * -EFBIG when it holds more than max bytes.
 */
int ks_read_fd(int fd, size_t max, char **ret_buf, size_t *ret_len);

/* Creates a directory and its parents inside the root (like mkdir -p). */
int ks_mkdir_p(const ks_root *r, const char *path, mode_t mode);

/*
 * Makes what the kernel made durable readable by a boot loader too. GRUB reads /boot with its
 * own file system drivers, which never replay a journal: fsync puts a change into ext4's
 * journal, and its metadata (a renamed file's directory entry and inode) reaches its home
 * blocks only when the kernel checkpoints the journal, up to about 30 s later (the writeback
 * of its dirty buffers) or at unmount. A power cut in between: Linux replays the journal at
 * the next mount and sees the new file, GRUB before it still finds the previous inode, whose
 * blocks hold the previous content (grubby and ostree met this: rhboot/grubby#25,
 * ostreedev/ostree#876). On ext4 this writes the journal home with EXT4_IOC_CHECKPOINT
 * (Linux 5.13, CAP_SYS_ADMIN), which commits what is pending first.
 * fd: any open file or directory of the file system. 1: written home; 0: nothing to do (not
 * ext4, or ext4 without a journal); -ENOTTY: the kernel has no such ioctl; -errno.
 */
int ks_fs_checkpoint(int fd);
/*
 * The same for the file system holding path (a file or a directory) inside the root; -ENOTTY
 * (a kernel without the ioctl) and -EPERM (not root: a test's fixture root) are 0 here, since
 * nothing short of freezing the file system does the job then.
 */
int ks_fs_checkpoint_path(const ks_root *r, const char *path);

/* Removes a file atomically from the point of view of readers and fsyncs its directory. */
int ks_unlink_durable(const ks_root *r, const char *path);
/* ks_unlink_durable() of a file that may be absent: 0 when it was not there. */
int ks_unlink_if_exists(const ks_root *r, const char *path);
/*
 * Reads up to len bytes at offset off (retrying short reads and EINTR); *ret_n is what was
 * read, less than len only at the end of the file.
 */
int ks_pread_all(int fd, void *buf, size_t len, uint64_t off, size_t *ret_n);
