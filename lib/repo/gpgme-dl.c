/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/dl.h"
#include "lib/repo/gpgme-dl.h"
#include "lib/basic/util.h"

typeof(gpgme_check_version_internal) *sym_gpgme_check_version_internal;
typeof(gpgme_ctx_set_engine_info) *sym_gpgme_ctx_set_engine_info;
typeof(gpgme_data_new) *sym_gpgme_data_new;
typeof(gpgme_data_new_from_mem) *sym_gpgme_data_new_from_mem;
typeof(gpgme_data_release) *sym_gpgme_data_release;
typeof(gpgme_data_release_and_get_mem) *sym_gpgme_data_release_and_get_mem;
typeof(gpgme_engine_check_version) *sym_gpgme_engine_check_version;
typeof(gpgme_err_code_to_errno) *sym_gpgme_err_code_to_errno;
typeof(gpgme_free) *sym_gpgme_free;
typeof(gpgme_key_unref) *sym_gpgme_key_unref;
typeof(gpgme_new) *sym_gpgme_new;
typeof(gpgme_op_export) *sym_gpgme_op_export;
typeof(gpgme_op_import) *sym_gpgme_op_import;
typeof(gpgme_op_import_result) *sym_gpgme_op_import_result;
typeof(gpgme_op_keylist_end) *sym_gpgme_op_keylist_end;
typeof(gpgme_op_keylist_next) *sym_gpgme_op_keylist_next;
typeof(gpgme_op_keylist_start) *sym_gpgme_op_keylist_start;
typeof(gpgme_release) *sym_gpgme_release;
typeof(gpgme_set_armor) *sym_gpgme_set_armor;
typeof(gpgme_set_keylist_mode) *sym_gpgme_set_keylist_mode;
typeof(gpgme_set_offline) *sym_gpgme_set_offline;
typeof(gpgme_set_protocol) *sym_gpgme_set_protocol;
typeof(gpgme_strerror) *sym_gpgme_strerror;

static const ks_dl_symbol symbols[] = {
    KS_DL_SYMBOL(gpgme_check_version_internal),
    KS_DL_SYMBOL(gpgme_ctx_set_engine_info),
    KS_DL_SYMBOL(gpgme_data_new),
    KS_DL_SYMBOL(gpgme_data_new_from_mem),
    KS_DL_SYMBOL(gpgme_data_release),
    KS_DL_SYMBOL(gpgme_data_release_and_get_mem),
    KS_DL_SYMBOL(gpgme_engine_check_version),
    KS_DL_SYMBOL(gpgme_err_code_to_errno),
    KS_DL_SYMBOL(gpgme_free),
    KS_DL_SYMBOL(gpgme_key_unref),
    KS_DL_SYMBOL(gpgme_new),
    KS_DL_SYMBOL(gpgme_op_export),
    KS_DL_SYMBOL(gpgme_op_import),
    KS_DL_SYMBOL(gpgme_op_import_result),
    KS_DL_SYMBOL(gpgme_op_keylist_end),
    KS_DL_SYMBOL(gpgme_op_keylist_next),
    KS_DL_SYMBOL(gpgme_op_keylist_start),
    KS_DL_SYMBOL(gpgme_release),
    KS_DL_SYMBOL(gpgme_set_armor),
    KS_DL_SYMBOL(gpgme_set_keylist_mode),
    KS_DL_SYMBOL(gpgme_set_offline),
    KS_DL_SYMBOL(gpgme_set_protocol),
    KS_DL_SYMBOL(gpgme_strerror),
};

int ks_dlopen_gpgme(const char **ret_error)
{
    static ks_dl_library lib = {
        .soname = "libgpgme.so.11",
        .package = "libgpgme11",
        .symbols = symbols,
        .n_symbols = ARRAY_SIZE(symbols),
    };
    return ks_dlopen_library(&lib, ret_error);
}
