/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/kernel/archive-dl.h"
#include "lib/basic/dl.h"
#include "lib/basic/util.h"

typeof(archive_read_new) *sym_archive_read_new;
typeof(archive_read_free) *sym_archive_read_free;
typeof(archive_read_support_format_tar) *sym_archive_read_support_format_tar;
typeof(archive_read_support_format_cpio) *sym_archive_read_support_format_cpio;
typeof(archive_read_support_format_raw) *sym_archive_read_support_format_raw;
typeof(archive_read_support_filter_gzip) *sym_archive_read_support_filter_gzip;
typeof(archive_read_support_filter_bzip2) *sym_archive_read_support_filter_bzip2;
typeof(archive_read_support_filter_xz) *sym_archive_read_support_filter_xz;
typeof(archive_read_support_filter_lzma) *sym_archive_read_support_filter_lzma;
typeof(archive_read_support_filter_lz4) *sym_archive_read_support_filter_lz4;
typeof(archive_read_support_filter_zstd) *sym_archive_read_support_filter_zstd;
typeof(archive_filter_code) *sym_archive_filter_code;
typeof(archive_version_details) *sym_archive_version_details;
typeof(archive_read_close) *sym_archive_read_close;
typeof(archive_read_support_filter_none) *sym_archive_read_support_filter_none;
typeof(archive_read_open) *sym_archive_read_open;
typeof(archive_read_open_fd) *sym_archive_read_open_fd;
typeof(archive_read_next_header) *sym_archive_read_next_header;
typeof(archive_read_data) *sym_archive_read_data;
typeof(archive_error_string) *sym_archive_error_string;
typeof(archive_set_error) *sym_archive_set_error;
typeof(archive_entry_pathname) *sym_archive_entry_pathname;
typeof(archive_entry_filetype) *sym_archive_entry_filetype;
typeof(archive_entry_size) *sym_archive_entry_size;

static const ks_dl_symbol symbols[] = {
    KS_DL_SYMBOL(archive_read_new),
    KS_DL_SYMBOL(archive_read_free),
    KS_DL_SYMBOL(archive_read_support_format_tar),
    KS_DL_SYMBOL(archive_read_support_format_cpio),
    KS_DL_SYMBOL(archive_read_support_format_raw),
    KS_DL_SYMBOL(archive_read_support_filter_gzip),
    KS_DL_SYMBOL(archive_read_support_filter_bzip2),
    KS_DL_SYMBOL(archive_read_support_filter_xz),
    KS_DL_SYMBOL(archive_read_support_filter_lzma),
    KS_DL_SYMBOL(archive_read_support_filter_lz4),
    KS_DL_SYMBOL(archive_read_support_filter_zstd),
    KS_DL_SYMBOL(archive_filter_code),
    KS_DL_SYMBOL(archive_version_details),
    KS_DL_SYMBOL(archive_read_close),
    KS_DL_SYMBOL(archive_read_support_filter_none),
    KS_DL_SYMBOL(archive_read_open),
    KS_DL_SYMBOL(archive_read_open_fd),
    KS_DL_SYMBOL(archive_read_next_header),
    KS_DL_SYMBOL(archive_read_data),
    KS_DL_SYMBOL(archive_error_string),
    KS_DL_SYMBOL(archive_set_error),
    KS_DL_SYMBOL(archive_entry_pathname),
    KS_DL_SYMBOL(archive_entry_filetype),
    KS_DL_SYMBOL(archive_entry_size),
};

int ks_dlopen_libarchive(const char **ret_error)
{
    static ks_dl_library lib = {
        .soname = "libarchive.so.13",
        .package = "libarchive13",
        .symbols = symbols,
        .n_symbols = ARRAY_SIZE(symbols),
    };
    return ks_dlopen_library(&lib, ret_error);
}
