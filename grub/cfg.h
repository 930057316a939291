/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * A parser of the GRUB script that grub-mkconfig writes, with the lexing rules of
 * grub-core/script/yylex.l and the grammar of parser.y: words made of unquoted text
 * (backslash escapes), '...' (literal), "..." (\$ \\ \" and \<newline> escapes, $var),
 * $name / ${name} / $1 / $? ; comments at the start of a token; backslash-newline
 * continuation; keywords only where the whole token is the keyword; if/elif/else/fi,
 * for/while/until, function NAME { ... }, and commands that end with a { block }
 * (menuentry, submenu). `&&`, `||`, `|`, `<`, `>`, `&` are not part of GRUB's grammar and
 * are syntax errors here as at boot.
 *
 * It takes text and never reads files; errors carry line and column (1-based).
 */
typedef enum ks_grub_part_type {
    KS_GRUB_PART_TEXT,  /* unquoted text, escapes already removed */
    KS_GRUB_PART_SQ,    /* '...' */
    KS_GRUB_PART_DQ,    /* literal text inside "..." */
    KS_GRUB_PART_VAR,   /* unquoted $name: split into fields on expansion */
    KS_GRUB_PART_DQVAR, /* $name inside "..." */
} ks_grub_part_type;

typedef struct ks_grub_part {
    ks_grub_part_type type;
    char *s;
} ks_grub_part;

typedef struct ks_grub_word {
    ks_grub_part *parts;
    size_t n, cap;
} ks_grub_word;

typedef enum ks_grub_node_type {
    KS_GRUB_NODE_CMD,   /* words [+ block] (menuentry and submenu are commands with a block) */
    KS_GRUB_NODE_IF,    /* conds[i] then bodies[i]; else_body */
    KS_GRUB_NODE_FOR,   /* name in words do body */
    KS_GRUB_NODE_WHILE, /* conds[0] do body */
    KS_GRUB_NODE_UNTIL,
    KS_GRUB_NODE_FUNCTION, /* name { body } */
} ks_grub_node_type;

typedef struct ks_grub_node ks_grub_node;

typedef struct ks_grub_block {
    ks_grub_node **v;
    size_t n, cap;
} ks_grub_block;

struct ks_grub_node {
    ks_grub_node_type type;
    unsigned line, column;
    ks_grub_word *words; /* CMD: the command line; FOR: the list */
    size_t n_words, words_cap;
    char *name;            /* FOR: variable; FUNCTION: function name */
    ks_grub_block *conds;  /* IF: one per if/elif; WHILE/UNTIL: one */
    ks_grub_block *bodies; /* IF: one per cond */
    size_t n_conds, conds_cap, bodies_cap;
    ks_grub_block *else_body;    /* IF */
    ks_grub_block *body;         /* CMD with a block, FOR, WHILE, UNTIL, FUNCTION */
    size_t body_start, body_end; /* CMD with a block: byte offsets of the text between { and } */
};

typedef struct ks_grub_entry ks_grub_entry;

/* One menu entry or submenu as GRUB's menuentry command registers it. */
struct ks_grub_entry {
    char *title;
    char *id; /* --id; NULL when absent (GRUB then uses the title as id) */
    char **classes;
    char *users; /* --users; NULL */
    bool unrestricted;
    bool submenu;
    const ks_grub_node *node; /* the menuentry command in the parsed script */
    /* From the first linux/linux16/linuxefi command of the body (static view). */
    char *linux_path;
    char *release;    /* "6.8.0-48-generic" from ".../vmlinuz-6.8.0-48-generic"; NULL otherwise */
    char *linux_args; /* the rest of the linux line as written */
    char *initrd;     /* the initrd line's arguments as written */
    bool recovery;    /* "-recovery-" id, or "recovery"/"single" on the linux line */
    ks_grub_entry *children; /* submenu entries */
    size_t n_children;
};

typedef struct ks_grub_cfg {
    char *text; /* a copy of the input, NUL-terminated */
    size_t len;
    ks_grub_block script;
    ks_grub_entry *entries; /* static menu tree: every menuentry/submenu in source order */
    size_t n_entries;
    /* X of Ubuntu's comment "# GRUB lacks write support for X, so recordfail support is
     * disabled." (grub-mkconfig found /boot/grub where GRUB cannot save_env); NULL without it. */
    char *lacks_write_support;
} ks_grub_cfg;

typedef struct ks_grub_error {
    unsigned line, column;
    char message[160];
} ks_grub_error;

/* -EBADMSG on a syntax error (ret_error filled when given), -EFBIG above 64 MiB, -ENOMEM. */
int ks_grub_cfg_parse(const char *text, size_t len, ks_grub_cfg **ret, ks_grub_error *ret_error);
ks_grub_cfg *ks_grub_cfg_free(ks_grub_cfg *c);
static inline void ks_grub_cfg_freep(ks_grub_cfg **c)
{
    ks_grub_cfg_free(*c);
}
#define _cleanup_grub_cfg_ __attribute__((cleanup(ks_grub_cfg_freep)))

/*
 * Expands words into an argument vector as grub-core/script/execute.c does: quoted parts
 * always make an argument (also when empty), unquoted $var is split on white space, a word
 * that expands to nothing unquoted disappears. lookup returns NULL for unset variables.
 */
typedef const char *(*ks_grub_lookup_fn)(const char *name, void *userdata);
int ks_grub_words_expand(const ks_grub_word *words, size_t n, ks_grub_lookup_fn lookup,
                         void *userdata, char ***ret_argv);
/* For people: a word as written, variables shown as $name. */
char *ks_grub_word_display(const ks_grub_word *w);

/* Word helpers. The literal text of a word when it holds no variable, else NULL. */
const char *ks_grub_word_literal(const ks_grub_word *w, char **ret_buf);

/*
 * Turns an expanded menuentry/submenu command line (argv[0] is "menuentry" or "submenu") into
 * an entry, with the option rules of grub-core/commands/menuentry.c. -EINVAL when GRUB would
 * refuse it (unknown option, no title).
 */
int ks_grub_entry_from_argv(char **argv, ks_grub_entry *ret);
/* Fills linux_path/release/linux_args/initrd/recovery from the entry's body. */
void ks_grub_entry_scan_body(ks_grub_entry *e);
void ks_grub_entry_done(ks_grub_entry *e);
/* "vmlinuz-6.8.0-48-generic" -> "6.8.0-48-generic"; NULL for other file names. */
char *ks_grub_release_from_path(const char *path);
/* The id GRUB matches ("--id" or the title). */
static inline const char *ks_grub_entry_id(const ks_grub_entry *e)
{
    return e->id ? e->id : e->title;
}
