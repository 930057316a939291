/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/engine/journal.h"

/*
 * Where an apply takes its new kernel from, as the journal records it ("source",
 * KS_JF_SOURCE): "deb:/ABSOLUTE/PATH.deb", "kernel:RELEASE", or "package:NAME" (the repository,
 * the package plan chose or --package named). The next steps name the same apply with it
 * (ks_apply_source_args: "--deb /x/k.deb"), and a resumed or repeated apply is compared with it.
 */

/* The source of these options: deb (resolved to an absolute path, or as given when it cannot
 * be), kernel or package; package NULL: the repository's package (NULL when there is none). */
char *ks_apply_source_make(const char *deb, const char *kernel, const char *package);
/* The options of apply that take the same source, as words a shell reads back ("--deb
 * '/a b/k.deb'"); NULL for NULL or a source that is not one. */
char *ks_apply_source_args(const char *source);
/* "apply SOURCE-ARGS EXTRA" as a command line: "kswap apply --deb /x/k.deb --yes". */
char *ks_apply_command(const char *source, const char *extra);
/* A word as a POSIX shell reads it back: unchanged when it holds nothing special, else in
 * single quotes. */
char *ks_shell_quote(const char *word);
