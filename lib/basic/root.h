/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

/*
 * The root directory every path kswap finds by itself is resolved in ("/" by default,
 * --root DIR otherwise). One directory fd; every lookup goes through openat2() with
 * RESOLVE_IN_ROOT, so absolute symlinks and ".." stay inside the root as they would after
 * chroot. Paths may be given with or without a leading '/'.
 */
typedef struct ks_root ks_root;

int ks_root_open(const char *path, ks_root **ret);
ks_root *ks_root_free(ks_root *r);
static inline void ks_root_freep(ks_root **r)
{
    ks_root_free(*r);
}
#define _cleanup_root_ __attribute__((cleanup(ks_root_freep)))

const char *ks_root_path(const ks_root *r); /* as given, e.g. "/" or "test/roots/x" */
bool ks_root_is_host(const ks_root *r);     /* the real "/": live sources (CPUID) allowed */
int ks_root_fd(const ks_root *r);

/*
 * A lookup inside the root that opens no file: flags must hold O_PATH, O_DIRECTORY, or O_CREAT
 * with O_EXCL (a file of kswap's own making); anything else is -EINVAL, so that no open of a
 * root's file can pass by ks_root_open_file(). Returns an fd (O_CLOEXEC added) or -errno.
 */
int ks_root_open_at(const ks_root *r, const char *path, int flags, mode_t mode);
/*
 * The one way kswap opens a file of the root (lib/basic/fileio.h): an O_PATH lookup, its type
 * proven one of types (KS_FILE_REGULAR, ...) with fstat(), then the same inode opened with
 * flags through /proc/self/fd. A FIFO, socket or device node (unless types allows block
 * devices) is never opened: -ESPIPE, -ENOTSOCK, -ENODEV, -EISDIR. With O_CREAT a missing file is
 * created with O_EXCL|O_NOFOLLOW (mode), an existing one judged like any other.
 */
int ks_root_open_file(const ks_root *r, const char *path, int flags, mode_t mode, unsigned types);
/* ks_root_open_file() of a regular file to read; extra_flags e.g. O_NOFOLLOW. */
int ks_root_open_regular(const ks_root *r, const char *path, int extra_flags);
/* Reads a whole regular file (opened so), NUL-terminated; -EFBIG when larger than max bytes. */
int ks_root_read_file(const ks_root *r, const char *path, size_t max, char **ret_buf,
                      size_t *ret_len);
/* Reads a one-line file (sysfs/procfs style) without its trailing newline. */
int ks_root_read_line(const ks_root *r, const char *path, char **ret);
int ks_root_opendir(const ks_root *r, const char *path, DIR **ret);
/* Sorted names of a directory, without "." and "..". */
int ks_root_list_dir(const ks_root *r, const char *path, char ***ret_names);
/*
 * For paths handed to a library that opens them itself (libkmod gets /proc/self/fd/N/PATH):
 * whether path, relative to dirfd (a directory inside the root), resolves inside the root by
 * the host's rules, i.e. no absolute symbolic link and no ".." above the root on the way.
 * 0; -EXDEV when a symlink leaves the root, and *ret_link (optional) names it, relative to
 * the root; other -errno (e.g. -ENOENT) as the lookup gives them. Always 0 for the host's "/"
 * and on kernels without openat2().
 */
int ks_root_check_beneath(const ks_root *r, int dirfd, const char *path, char **ret_link);
/* The same, returning an O_PATH fd of the very file the check resolved (so nothing can swap it
 * between the check and a later open through /proc/self/fd/N); the host's "/": plain openat. */
int ks_root_open_beneath(const ks_root *r, int dirfd, const char *path, char **ret_link);
int ks_root_readlink(const ks_root *r, const char *path, char **ret);
int ks_root_stat(const ks_root *r, const char *path, struct stat *ret);  /* follows links */
int ks_root_lstat(const ks_root *r, const char *path, struct stat *ret); /* does not */
int ks_root_statvfs(const ks_root *r, const char *path, struct statvfs *ret);
bool ks_root_exists(const ks_root *r, const char *path);
