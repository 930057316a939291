/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/dl.h"
#include "lib/kernel/kmod-dl.h"
#include "lib/basic/util.h"

typeof(kmod_new) *sym_kmod_new;
typeof(kmod_unref) *sym_kmod_unref;
typeof(kmod_load_resources) *sym_kmod_load_resources;
typeof(kmod_list_next) *sym_kmod_list_next;
typeof(kmod_module_new_from_lookup) *sym_kmod_module_new_from_lookup;
typeof(kmod_module_new_from_path) *sym_kmod_module_new_from_path;
typeof(kmod_module_get_module) *sym_kmod_module_get_module;
typeof(kmod_module_get_name) *sym_kmod_module_get_name;
typeof(kmod_module_get_path) *sym_kmod_module_get_path;
typeof(kmod_module_get_info) *sym_kmod_module_get_info;
typeof(kmod_module_info_get_key) *sym_kmod_module_info_get_key;
typeof(kmod_module_info_get_value) *sym_kmod_module_info_get_value;
typeof(kmod_module_info_free_list) *sym_kmod_module_info_free_list;
typeof(kmod_module_unref) *sym_kmod_module_unref;
typeof(kmod_module_unref_list) *sym_kmod_module_unref_list;

static const ks_dl_symbol symbols[] = {
    KS_DL_SYMBOL(kmod_new),
    KS_DL_SYMBOL(kmod_unref),
    KS_DL_SYMBOL(kmod_load_resources),
    KS_DL_SYMBOL(kmod_list_next),
    KS_DL_SYMBOL(kmod_module_new_from_lookup),
    KS_DL_SYMBOL(kmod_module_new_from_path),
    KS_DL_SYMBOL(kmod_module_get_module),
    KS_DL_SYMBOL(kmod_module_get_name),
    KS_DL_SYMBOL(kmod_module_get_path),
    KS_DL_SYMBOL(kmod_module_get_info),
    KS_DL_SYMBOL(kmod_module_info_get_key),
    KS_DL_SYMBOL(kmod_module_info_get_value),
    KS_DL_SYMBOL(kmod_module_info_free_list),
    KS_DL_SYMBOL(kmod_module_unref),
    KS_DL_SYMBOL(kmod_module_unref_list),
};

int ks_dlopen_libkmod(const char **ret_error)
{
    static ks_dl_library lib = {
        .soname = "libkmod.so.2",
        .package = "libkmod2",
        .symbols = symbols,
        .n_symbols = ARRAY_SIZE(symbols),
    };
    return ks_dlopen_library(&lib, ret_error);
}
