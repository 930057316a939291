/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the files of lib/repo/aptsource*.c share; not for use outside lib/repo. */
#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "lib/repo/aptsource.h"

#define SOURCES_LIST "etc/apt/sources.list"
#define SOURCES_DIR "etc/apt/sources.list.d"
#define SOURCE_FILE_MAX (16 * 1024 * 1024)

/* Room for one more element of *v (n in use). */
int apt_grow(void **v, size_t n, size_t size);
void apt_source_done(ks_apt_source *e);
/* Records an entry apt would refuse. 0 or -ENOMEM. */
int apt_add_problem(ks_apt_sources *s, const char *file, unsigned line, const char *fmt, ...)
    _printf_(4, 5);
/* Takes over e (fields and all) on success. */
int apt_add_source(ks_apt_sources *s, ks_apt_source *e, const char *file);
bool apt_is_known_type(const char *t);
/* One word of a one-line entry: blank-separated, "..." quotes blanks (the quotes go). */
int apt_next_word(const char **p, char **ret);
int apt_strv_push_word(char ***l, char **w);

/* apt's rule for files in sources.list.d (run-parts style names, the right extension). */
bool apt_source_part_name(const char *name, ks_apt_format *ret);

/* The files apt reads, in its order, with their format. */
typedef struct source_file {
    char *path;
    ks_apt_format format;
} source_file;

void apt_source_files_free(source_file *v, size_t n);
int apt_list_source_files(const ks_root *root, source_file **ret, size_t *ret_n);
/* Parses text in format f (the parser of that format). */
int apt_parse_text(const char *text, size_t len, const char *file, ks_apt_format f,
                   ks_apt_sources *s);
