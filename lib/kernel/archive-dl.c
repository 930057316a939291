/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/kernel/archive-dl.h"
#include "lib/basic/dl.h"
#include "lib/basic/util.h"

typeof(archive_read_new) *sym_archive_read_new;
typeof(archive_read_free) *sym_archive_read_free;
typeof(archive_read_support_format_tar) *sym_archive_read_support_format_tar;
typeof(archive_read_support_format_cpio) *sym_archive_read_support_format_cpio;
typeof(archive_read_support_filter_all) *sym_archive_read_support_filter_all;
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
    KS_DL_SYMBOL(archive_read_support_filter_all),
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
