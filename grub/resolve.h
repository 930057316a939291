/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "grub/cfg.h"

/*
 * Entry selection exactly as grub-core/normal/menu.c: get_entry_number() reads the value
 * with grub_strtoul(val, 0, 0) (leading white space skipped, "0x" hex, leading-0 octal, digits
 * up to the first non-digit; no end check, so "1>2" is 1); a value without leading digits is
 * compared with each entry's title, then id (menuentry_eq: up to the first '>' that is not
 * '>>', where '>>' stands for '>'); no match, overflow or an index out of range gives entry 0.
 * When the chosen entry is a submenu, grub_menu_execute_entry() sets default to what follows
 * the first unescaped '>' (numeric values descend the same way), or unsets it.
 */
#define KS_GRUB_MAX_DEPTH 16

typedef enum ks_grub_level_how {
    KS_GRUB_LEVEL_INDEX,    /* a number in range */
    KS_GRUB_LEVEL_MATCH,    /* title or id matched */
    KS_GRUB_LEVEL_UNSET,    /* no value at this level: entry 0, as GRUB does silently */
    KS_GRUB_LEVEL_FALLBACK, /* a value that matched nothing: entry 0, GRUB's silent fall-back */
} ks_grub_level_how;

/*
 * A number as grub_strtoull(s, &end, 0) reads it: leading white space skipped; "0x" (lower-case
 * only) hex, a '0' followed by 0-7 octal (so "08" is 8), else decimal; digits up to the first
 * other character, with no end check ("1>2" is 1). -EINVAL without a digit ("0x", "x", ""),
 * -ERANGE on overflow.
 */
int ks_grub_strtoull(const char *s, unsigned long long *ret);

/* One level: the entry number GRUB takes for value (NULL = unset) and how it got there. */
int ks_grub_entry_number(const ks_grub_entry *menu, size_t n, const char *value,
                         ks_grub_level_how *ret_how);
/* What "default" becomes inside a submenu: the part after the first unescaped '>' (a new
 * string), or NULL when nothing follows. */
char *ks_grub_default_rest(const char *value);
/* The other way: appends one entry's title or id to a '>' path (*s NULL or "" starts it),
 * doubling every '>' in it as GRUB's menuentry_eq() expects. -ENOMEM leaves *s as it was. */
int ks_grub_path_append(char **s, const char *comp);

typedef struct ks_grub_resolution {
    const ks_grub_entry *entry;      /* the entry that boots (never a submenu) */
    size_t index[KS_GRUB_MAX_DEPTH]; /* entry number per level */
    ks_grub_level_how how[KS_GRUB_MAX_DEPTH];
    size_t depth;
    bool fell_back;    /* some level had a value that matched nothing */
    bool ignored_rest; /* the value went on past a normal entry ("0>1" on a plain entry) */
} ks_grub_resolution;

/* -ENOENT for an empty menu or a submenu without entries (GRUB shows nothing to boot). */
int ks_grub_resolve(const ks_grub_entry *menu, size_t n, const char *value,
                    ks_grub_resolution *ret);
/* Title path and id path of a resolution, '>' inside a component escaped as '>>'. */
int ks_grub_resolution_paths(const ks_grub_entry *menu, const ks_grub_resolution *r,
                             char **ret_title_path, char **ret_id_path);
