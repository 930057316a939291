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

/* Returns an fd (O_CLOEXEC added) or negative errno. */
int ks_root_open_at(const ks_root *r, const char *path, int flags, mode_t mode);
/* Reads a whole file, NUL-terminated; -EFBIG when larger than max bytes. */
int ks_root_read_file(const ks_root *r, const char *path, size_t max, char **ret_buf,
                      size_t *ret_len);
/* Reads a one-line file (sysfs/procfs style) without its trailing newline. */
int ks_root_read_line(const ks_root *r, const char *path, char **ret);
int ks_root_opendir(const ks_root *r, const char *path, DIR **ret);
/* Sorted names of a directory, without "." and "..". */
int ks_root_list_dir(const ks_root *r, const char *path, char ***ret_names);
int ks_root_readlink(const ks_root *r, const char *path, char **ret);
int ks_root_stat(const ks_root *r, const char *path, struct stat *ret);  /* follows links */
int ks_root_lstat(const ks_root *r, const char *path, struct stat *ret); /* does not */
int ks_root_statvfs(const ks_root *r, const char *path, struct statvfs *ret);
bool ks_root_exists(const ks_root *r, const char *path);
