/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "lib/kernel/modverify.h"

/*
 * The module set of a kernel package, read straight from the .deb: the ar container, then
 * data.tar (.xz decoded with liblzma's multi-threaded decoder, .zst with libzstd, .gz or none
 * by libarchive) streamed once through libarchive. Nothing is written to disk; memory stays
 * bounded (one module at a time, at most KS_DEB_MODULE_MAX bytes). Modules under lib/modules/
 * and usr/lib/modules/; .ko, .ko.xz and .ko.zst members.
 */
#define KS_DEB_MODULE_MAX (64u * 1024 * 1024)
/* The most data.tar may decompress to (-EFBIG beyond): a bomb costs at most this much work.
 * Debian's and XanMod's kernel packages unpack to 300-600 MiB. */
#define KS_DEB_DATA_MAX (2ull * 1024 * 1024 * 1024)

typedef struct ks_deb_stats {
    uint64_t data_bytes; /* bytes of data.tar decoded */
    unsigned members;    /* tar members seen */
    unsigned modules;    /* module files seen */
    unsigned passes;     /* 1; more when compressed dependencies went by before needed */
    int threads;         /* decoder threads used */
} ks_deb_stats;

/*
 * Reads the package at path (on the running machine). wanted: the modules whose .modinfo must
 * be read, with their dependencies (every module's name and file is recorded anyway). Errors:
 * -EBADMSG not a Debian package or corrupt (also "../" paths), -EPIPE truncated, -ENOENT no
 * lib/modules/RELEASE in it, -ENOTUNIQ more than one release; ret_error (optional) says what.
 */
int ks_deb_read_modset(const char *path, char *const *wanted, ks_modset **ret,
                       ks_deb_stats *ret_stats, char **ret_error);
int ks_deb_read_modset_fd(int fd, char *const *wanted, ks_modset **ret, ks_deb_stats *ret_stats,
                          char **ret_error);
/* The same with another cap than KS_DEB_DATA_MAX on what data.tar decompresses to (-EFBIG). */
int ks_deb_read_modset_fd_max(int fd, char *const *wanted, uint64_t data_max, ks_modset **ret,
                              ks_deb_stats *ret_stats, char **ret_error);

/* The same, ranking files of one name by a depmod.d (lib/kernel/depmodconf.h: the root's, which
 * the depmod of the package's postinst will read); NULL: none. conf outlives the set. */
int ks_deb_read_modset_conf(const char *path, char *const *wanted, ks_depmod_conf *conf,
                            ks_modset **ret, ks_deb_stats *ret_stats, char **ret_error);
int ks_deb_read_modset_fd_conf(int fd, char *const *wanted, uint64_t data_max, ks_depmod_conf *conf,
                               ks_modset **ret, ks_deb_stats *ret_stats, char **ret_error);

/* One 60-byte ar member header: name (without GNU's trailing '/') and size. */
int ks_ar_parse_header(const char hdr[60], char ret_name[17], uint64_t *ret_size);
