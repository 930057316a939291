/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <gpgme.h>

/* gpgme (and libassuan, libgpg-error), loaded when a repository key is checked (lib/dl.h). */
extern typeof(gpgme_check_version_internal) *sym_gpgme_check_version_internal;
extern typeof(gpgme_ctx_set_engine_info) *sym_gpgme_ctx_set_engine_info;
extern typeof(gpgme_data_new) *sym_gpgme_data_new;
extern typeof(gpgme_data_new_from_mem) *sym_gpgme_data_new_from_mem;
extern typeof(gpgme_data_release) *sym_gpgme_data_release;
extern typeof(gpgme_data_release_and_get_mem) *sym_gpgme_data_release_and_get_mem;
extern typeof(gpgme_engine_check_version) *sym_gpgme_engine_check_version;
extern typeof(gpgme_err_code_to_errno) *sym_gpgme_err_code_to_errno;
extern typeof(gpgme_free) *sym_gpgme_free;
extern typeof(gpgme_key_unref) *sym_gpgme_key_unref;
extern typeof(gpgme_new) *sym_gpgme_new;
extern typeof(gpgme_op_export) *sym_gpgme_op_export;
extern typeof(gpgme_op_import) *sym_gpgme_op_import;
extern typeof(gpgme_op_import_result) *sym_gpgme_op_import_result;
extern typeof(gpgme_op_keylist_end) *sym_gpgme_op_keylist_end;
extern typeof(gpgme_op_keylist_next) *sym_gpgme_op_keylist_next;
extern typeof(gpgme_op_keylist_start) *sym_gpgme_op_keylist_start;
extern typeof(gpgme_release) *sym_gpgme_release;
extern typeof(gpgme_set_armor) *sym_gpgme_set_armor;
extern typeof(gpgme_set_keylist_mode) *sym_gpgme_set_keylist_mode;
extern typeof(gpgme_set_offline) *sym_gpgme_set_offline;
extern typeof(gpgme_set_protocol) *sym_gpgme_set_protocol;
extern typeof(gpgme_strerror) *sym_gpgme_strerror;

int ks_dlopen_gpgme(const char **ret_error);
