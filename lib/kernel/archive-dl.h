/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <archive.h>
#include <archive_entry.h>

/*
 * libarchive brings libxml2, ICU, libcrypto and libstdc++ into every process that links it
 * (about 3 ms and 6 MiB at each start on a small VPS); most kswap commands never read an
 * archive. So it is loaded with dlopen() when a package or initrd is read, and called
 * through these pointers (systemd does the same for its optional libraries).
 */
extern typeof(archive_read_new) *sym_archive_read_new;
extern typeof(archive_read_free) *sym_archive_read_free;
extern typeof(archive_read_support_format_tar) *sym_archive_read_support_format_tar;
extern typeof(archive_read_support_format_cpio) *sym_archive_read_support_format_cpio;
extern typeof(archive_read_support_format_raw) *sym_archive_read_support_format_raw;
extern typeof(archive_read_support_filter_gzip) *sym_archive_read_support_filter_gzip;
extern typeof(archive_read_support_filter_bzip2) *sym_archive_read_support_filter_bzip2;
extern typeof(archive_read_support_filter_xz) *sym_archive_read_support_filter_xz;
extern typeof(archive_read_support_filter_lzma) *sym_archive_read_support_filter_lzma;
extern typeof(archive_read_support_filter_lz4) *sym_archive_read_support_filter_lz4;
extern typeof(archive_read_support_filter_zstd) *sym_archive_read_support_filter_zstd;
extern typeof(archive_filter_code) *sym_archive_filter_code;
extern typeof(archive_version_details) *sym_archive_version_details;
extern typeof(archive_read_close) *sym_archive_read_close;
extern typeof(archive_read_support_filter_none) *sym_archive_read_support_filter_none;
extern typeof(archive_read_open) *sym_archive_read_open;
extern typeof(archive_read_open_fd) *sym_archive_read_open_fd;
extern typeof(archive_read_next_header) *sym_archive_read_next_header;
extern typeof(archive_read_data) *sym_archive_read_data;
extern typeof(archive_error_string) *sym_archive_error_string;
extern typeof(archive_set_error) *sym_archive_set_error;
extern typeof(archive_entry_pathname) *sym_archive_entry_pathname;
extern typeof(archive_entry_filetype) *sym_archive_entry_filetype;
extern typeof(archive_entry_size) *sym_archive_entry_size;

/* Loads libarchive once; 0, or -EOPNOTSUPP when it is not installed (message in *ret_error). */
int ks_dlopen_libarchive(const char **ret_error);
