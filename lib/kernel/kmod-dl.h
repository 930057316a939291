/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <libkmod.h>

/* libkmod, loaded when a kernel's module tree is read (see lib/dl.h for why). */
extern typeof(kmod_new) *sym_kmod_new;
extern typeof(kmod_unref) *sym_kmod_unref;
extern typeof(kmod_load_resources) *sym_kmod_load_resources;
extern typeof(kmod_list_next) *sym_kmod_list_next;
extern typeof(kmod_module_new_from_lookup) *sym_kmod_module_new_from_lookup;
extern typeof(kmod_module_new_from_path) *sym_kmod_module_new_from_path;
extern typeof(kmod_module_get_module) *sym_kmod_module_get_module;
extern typeof(kmod_module_get_name) *sym_kmod_module_get_name;
extern typeof(kmod_module_get_path) *sym_kmod_module_get_path;
extern typeof(kmod_module_get_info) *sym_kmod_module_get_info;
extern typeof(kmod_module_info_get_key) *sym_kmod_module_info_get_key;
extern typeof(kmod_module_info_get_value) *sym_kmod_module_info_get_value;
extern typeof(kmod_module_info_free_list) *sym_kmod_module_info_free_list;
extern typeof(kmod_module_unref) *sym_kmod_module_unref;
extern typeof(kmod_module_unref_list) *sym_kmod_module_unref_list;

int ks_dlopen_libkmod(const char **ret_error);
