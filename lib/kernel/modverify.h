/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/*
 * The module set of one kernel (not necessarily the running one): which modules are built in,
 * which exist as files, what each depends on (its .modinfo depends=) and its version. Filled
 * from an installed tree (libkmod) or from a package (lib/deb.h), then judged against a list of
 * required modules.
 */
typedef enum ks_module_state {
    KS_MODULE_MISSING,
    KS_MODULE_BUILTIN,
    KS_MODULE_LOADABLE,
    _KS_MODULE_STATE_MAX,
    _KS_MODULE_STATE_INVALID = -EINVAL,
} ks_module_state;

const char *ks_module_state_to_string(ks_module_state s); /* "missing", "builtin", "module" */

typedef struct ks_module_report {
    char *name;
    ks_module_state state;
    char *version;       /* MODULE_VERSION, NULL when none */
    char *file;          /* relative to lib/modules/RELEASE, NULL unless a module */
    char **missing_deps; /* dependencies (at any depth) that the kernel lacks; NULL when none */
} ks_module_report;

void ks_module_report_done(ks_module_report *m);
/* Present: built in, or a module whose dependencies are all present. */
bool ks_module_report_ok(const ks_module_report *m);

typedef struct ks_modset ks_modset;

ks_modset *ks_modset_new(const char *release);
ks_modset *ks_modset_free(ks_modset *s);
static inline void ks_modset_freep(ks_modset **s)
{
    ks_modset_free(*s);
}
#define _cleanup_modset_ __attribute__((cleanup(ks_modset_freep)))

const char *ks_modset_release(const ks_modset *s);
int ks_modset_set_release(ks_modset *s, const char *release);
/* Builders. Names are normalized ('-' -> '_'). depends: comma separated, may be NULL or "". */
int ks_modset_add_builtin(ks_modset *s, const char *name);
int ks_modset_set_builtin_version(ks_modset *s, const char *name, const char *version);
/* Records a module file. Of two files of one name, the one depmod would put into modules.dep
 * counts: by the depmod.d of ks_modset_use_depmod_conf() (none: "search updates", updates/
 * first), in the order files come for a tree (depmod's own rules, readdir order included),
 * and for a package a tie of two files in one search class goes to the first path in byte
 * order. The same path again replaces the earlier copy (dpkg unpacks the last one) and
 * forgets its .modinfo. ks_modset_get_file() tells which file counts. */
int ks_modset_add_module(ks_modset *s, const char *name, const char *file);
/* The depmod.d that ranks files (lib/kernel/depmodconf.h); take: the set frees it. */
typedef struct ks_depmod_conf ks_depmod_conf;
void ks_modset_use_depmod_conf(ks_modset *s, ks_depmod_conf *conf, bool take);
/* The file that counts for a module (normalized name), NULL when none. */
const char *ks_modset_get_file(const ks_modset *s, const char *name);
int ks_modset_set_info(ks_modset *s, const char *name, const char *depends, const char *version);
/* Whether the module file is known but its .modinfo was not read yet. */
bool ks_modset_needs_info(const ks_modset *s, const char *name);
/* Whether the kernel has name (built in or a file) and its .modinfo is known. */
bool ks_modset_is_resolved(const ks_modset *s, const char *name);
/* depends= of a module whose .modinfo was read (normalized names); NULL otherwise. */
char *const *ks_modset_get_depends(const ks_modset *s, const char *name);
size_t ks_modset_count(const ks_modset *s); /* built-in plus loadable */

/* Whether the kernel has the module at all (built in or a file), dependencies aside. */
int ks_modset_has(ks_modset *s, const char *name);
/* Judges one module: state, version, file and every missing dependency, recursively. */
int ks_modset_judge(ks_modset *s, const char *name, ks_module_report *ret);
/* Names of the module and all its dependencies (recursively) that are loadable modules, i.e.
 * what an initramfs must contain for it; built-in ones are left out. */
int ks_modset_closure(ks_modset *s, const char *name, char ***ret_modules, char ***ret_missing);

/*
 * Opens lib/modules/RELEASE inside the root, with the root's depmod.d (never the host's).
 * With depmod's .bin indexes, names are looked up with libkmod; without them (fresh package
 * contents) the tree and depmod.d's external directories are walked as depmod walks them
 * (excludes, search order, overrides) and modules.builtin,
 * modules.builtin.modinfo and each needed module's .modinfo (libkmod, which decompresses .xz
 * and .zst) are read directly. -ENOENT when the tree does not exist.
 */
int ks_modset_open_tree(const ks_root *root, const char *release, ks_modset **ret);
/*
 * The same, with *ret_error (optional) saying which file was wrong. Every path libkmod or kswap
 * reads in the tree must stay inside the root (an absolute or "../" symbolic link that leads
 * out is -EXDEV, naming it) and be a regular file (-ESPIPE, -ENOTSOCK, -ENODEV, -EISDIR).
 * root must outlive the set.
 */
int ks_modset_open_tree_full(const ks_root *root, const char *release, ks_modset **ret,
                             char **ret_error);
/* What went wrong in the last failed lookup ("cannot read the .modinfo of 'FILE'"), or NULL. */
const char *ks_modset_error(const ks_modset *s);
/* Test hook (NULL in kswap): called with a module file (relative to the tree) after its
 * check and before libkmod opens it, where a test swaps the file for a symbolic link. */
extern void (*ks_modset_test_before_kmod_open)(const char *file);
/* Whether ks_modset_open_tree used depmod's indexes. */
bool ks_modset_used_index(const ks_modset *s);
