/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/*
 * A byte range of a file decompressed in this process, by libarchive's filters chosen one by
 * one. libarchive's "all filters" would start lrzip, lzop, grzip (and gzip, lz4, zstd when it
 * was built without their libraries) found on PATH when the data starts with their magic;
 * here a filter is only enabled when libarchive names its library in
 * archive_version_details(), and the filter libarchive picked is checked against the allowed
 * set. Output beyond cap bytes is an error (-EFBIG): a decompression bomb costs at most cap.
 */
typedef enum ks_filter {
    KS_FILTER_NONE = 1u << 0,
    KS_FILTER_GZIP = 1u << 1,
    KS_FILTER_BZIP2 = 1u << 2,
    KS_FILTER_XZ = 1u << 3,
    KS_FILTER_LZMA = 1u << 4,
    KS_FILTER_LZ4 = 1u << 5,
    KS_FILTER_ZSTD = 1u << 6,
} ks_filter;

typedef struct ks_unpack ks_unpack;

/*
 * Opens [off, end) of fd (end UINT64_MAX: to the end of the file); filters: the ks_filter
 * values allowed. -EPROTONOSUPPORT when the data is in no allowed format, -EOPNOTSUPP when
 * libarchive or the library of the filter is missing; *ret_error (optional) says what.
 */
int ks_unpack_open(int fd, uint64_t off, uint64_t end, unsigned filters, uint64_t cap,
                   ks_unpack **ret, char **ret_error);
/* Up to len decompressed bytes; 0 at the end; negative errno (ks_unpack_error says what). */
ssize_t ks_unpack_read(ks_unpack *u, void *buf, size_t len);
uint64_t ks_unpack_produced(const ks_unpack *u);
const char *ks_unpack_filter_name(const ks_unpack *u); /* "gzip", "none", ... */
const char *ks_unpack_error(const ks_unpack *u);
ks_unpack *ks_unpack_free(ks_unpack *u);
static inline void ks_unpack_freep(ks_unpack **u)
{
    ks_unpack_free(*u);
}
#define _cleanup_unpack_ __attribute__((cleanup(ks_unpack_freep)))
