/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Parsers of kernel module metadata that need no file system: the ELF .modinfo section of a
 * .ko (key=value strings separated by NULs), modules.builtin and modules.builtin.modinfo.
 * They take buffers so that the package reader and the fuzzer can feed them directly.
 */

/* Finds the .modinfo section of an ELF object (32/64 bit, either byte order). -EBADMSG when
 * buf is not a well-formed ELF file, -ENOENT when it has no .modinfo. */
int ks_elf_find_modinfo(const void *buf, size_t len, const char **ret_data, size_t *ret_len);

/* The first value of key in a .modinfo blob (NUL-separated key=value), copied; NULL if absent
 * (-ENOENT) or -ENOMEM. */
int ks_modinfo_get(const char *info, size_t len, const char *key, char **ret);

/* "kernel/net/sched/sch_cake.ko.zst" -> "sch_cake"; -EINVAL when not a module file name. */
int ks_module_name_from_path(const char *path, char **ret);
/* Whether a path names a module file (.ko, .ko.xz, .ko.zst). */
bool ks_is_module_path(const char *path);

/*
 * Calls fn for each entry of modules.builtin.modinfo ("module.key=value\0" ...) with the module
 * name normalized. Stops and returns fn's value when it is negative.
 */
typedef int (*ks_builtin_modinfo_fn)(void *userdata, const char *module, const char *key,
                                     const char *value);
int ks_builtin_modinfo_foreach(const char *data, size_t len, ks_builtin_modinfo_fn fn,
                               void *userdata);
/* Calls fn(userdata, name) for each line of modules.builtin (paths of built-in modules). */
typedef int (*ks_builtin_fn)(void *userdata, const char *module);
int ks_builtin_foreach(const char *data, size_t len, ks_builtin_fn fn, void *userdata);
