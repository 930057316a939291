/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/*
 * depmod.d: which of two module files of one name depmod puts into modules.dep, and which
 * directories it leaves out, read from the root's configuration exactly as kmod's depmod reads
 * it (tools/depmod.c of kmod 30-34: cfg_load, cfg_file_parse, depmod_module_is_higher_priority,
 * should_exclude_dir). Directives: search (paths below lib/modules/RELEASE, "built-in" for
 * every other path of the tree, "external" for the external directories), override MODULE
 * KERNEL SUBDIR, external KERNEL DIR, exclude NAME...; include and make_map_files are ignored
 * as depmod ignores them, and so is a bad line. KERNEL is "*" or an extended regular
 * expression matched against the release. Without any search line the order is "updates".
 */
typedef struct ks_depmod_conf ks_depmod_conf;

/* Bounds for a hostile root: more is an error that names the file. */
#define KS_DEPMOD_FILE_MAX (256 * 1024)  /* bytes in one .conf file */
#define KS_DEPMOD_FILES_MAX 1024         /* .conf files in all directories together */
#define KS_DEPMOD_DIRECTIVES_MAX 4096    /* search words, overrides, externals, excludes */
#define KS_DEPMOD_WORD_MAX 4096          /* one word of a line (a path, a pattern) */
#define KS_DEPMOD_PATTERN_COST_MAX 65536 /* regcomp's tree copies times the pattern's length */

ks_depmod_conf *ks_depmod_conf_new(void);
ks_depmod_conf *ks_depmod_conf_free(ks_depmod_conf *c);
static inline void ks_depmod_conf_freep(ks_depmod_conf **c)
{
    ks_depmod_conf_free(*c);
}
#define _cleanup_depmod_conf_ __attribute__((cleanup(ks_depmod_conf_freep)))

/*
 * Adds the directives of one file's text (not NUL-terminated; name is for messages) in the
 * order depmod reads them. A NUL byte or a control character other than tab, a word longer
 * than KS_DEPMOD_WORD_MAX, a kernel pattern whose repetitions would make regcomp copy its
 * tree more than KS_DEPMOD_PATTERN_COST_MAX / its length times, or more than
 * KS_DEPMOD_DIRECTIVES_MAX directives is -EBADMSG / -E2BIG with *ret_error (optional) naming
 * name:line; on error c is unchanged.
 */
int ks_depmod_conf_parse(ks_depmod_conf *c, const char *name, const char *text, size_t len,
                         char **ret_error);

/*
 * Reads the root's depmod.d as depmod on that system would: the *.conf files (not starting
 * with '.', not directories) of etc/depmod.d, run/depmod.d, usr/local/lib/depmod.d,
 * usr/lib/depmod.d and lib/depmod.d, in the byte order of their names, a name taken from the
 * first directory that has it; a link to /dev/null masks the name. Every path resolves inside
 * the root. A FIFO, device or socket, a file over KS_DEPMOD_FILE_MAX, more than
 * KS_DEPMOD_FILES_MAX files: an error naming the file in *ret_error.
 */
int ks_depmod_conf_load(const ks_root *root, ks_depmod_conf **ret, char **ret_error);

/* For the table tests: the search list as depmod ranks it, best first, space separated
 * ("updates ubuntu built-in"), and the excludes; for release, the active overrides
 * ("SUBDIR/MODULE") and external directories. Freed by the caller. */
char *ks_depmod_conf_describe(ks_depmod_conf *c, const char *release);

/* Whether depmod skips a directory entry of this name at any depth (".", "..", "build",
 * "source" and every exclude); and whether any component of path is one. */
bool ks_depmod_conf_excludes(const ks_depmod_conf *c, const char *name);
bool ks_depmod_conf_excludes_path(const ks_depmod_conf *c, const char *path);

/* The external directories (absolute, inside the root) that apply to release, in the order
 * depmod walks them; NULL-terminated, owned by c, valid until the next call. */
char *const *ks_depmod_conf_externals(ks_depmod_conf *c, const char *release);

/*
 * depmod's own choice (depmod_module_is_higher_priority) when it meets file new after file
 * old of the same module name while listing the tree: true when old stays. Paths are relative
 * to lib/modules/RELEASE, or absolute for a module of an external directory. Where depmod
 * depends on the order it met the files (two in one class), so does this. c NULL: no
 * configuration at all (search updates).
 */
bool ks_depmod_conf_keeps_old(ks_depmod_conf *c, const char *release, const char *old,
                              const char *new);

/*
 * The rank of one file in that order, higher first: an override of its name gives INT_MAX,
 * otherwise the search class it falls in (a file in no class gets the rank of "built-in", -1
 * without one). For packages, whose order on disk is not known before dpkg unpacks them.
 */
int ks_depmod_conf_rank(ks_depmod_conf *c, const char *release, const char *file);
