/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "grub/cfg.h"
#include "grub/grubenv.h"

/*
 * A small evaluator of the parsed script with GRUB's run-time rules, enough to run the real
 * 00_header/10_linux output: variables in contexts (a submenu opens a new context that sees
 * only exported variables, grub_env_context_open), set/unset/export and NAME=VALUE,
 * [ ]/test (=, ==, !=, <, >, -eq.., -n, -z, -e, -f, -s, -d, !, -a, -o, as test.c parses them),
 * if/elif/else, for/while/until, functions with $1.. and return, load_env/save_env against an
 * in-memory environment block, menuentry/submenu registration, linux/initrd.
 *
 * The machine is modelled as GRUB sees it after a BIOS or EFI boot from the disk holding
 * $prefix: $prefix/grubenv exists exactly when an environment block is given; no other file
 * exists (so `source $prefix/custom.cfg` and friends are not run, and are listed in notes).
 * Commands kswap does not model (insmod, search, loadfont, terminal_output, ...) succeed and
 * do nothing.
 */
typedef struct ks_grub_eval_opts {
    const ks_grubenv *env; /* the block at boot; NULL: no grubenv file */
    bool env_writable;     /* save_env can write the block (plain disk, ext2/3/4, ...) */
    bool efi;              /* grub_platform=efi instead of pc */
} ks_grub_eval_opts;

typedef struct ks_grub_eval ks_grub_eval;

int ks_grub_eval_new(const ks_grub_cfg *cfg, const ks_grub_eval_opts *opts, ks_grub_eval **ret);
ks_grub_eval *ks_grub_eval_free(ks_grub_eval *ev);
static inline void ks_grub_eval_freep(ks_grub_eval **ev)
{
    ks_grub_eval_free(*ev);
}
#define _cleanup_grub_eval_ __attribute__((cleanup(ks_grub_eval_freep)))

/* Runs the whole script at top level, as normal.mod does with grub.cfg before the menu. */
int ks_grub_eval_run(ks_grub_eval *ev);
/* Runs a block in the current context (tests: a header on its own). */
int ks_grub_eval_block(ks_grub_eval *ev, const ks_grub_block *b);

const char *ks_grub_eval_get(const ks_grub_eval *ev, const char *name); /* NULL when unset */
int ks_grub_eval_set(ks_grub_eval *ev, const char *name, const char *value);
int ks_grub_eval_status(const ks_grub_eval *ev); /* $? of the last command */
/* The menu's countdown as the script left $timeout (grub_menu_get_timeout: unset or not a
 * number is -1, a wait). */
int ks_grub_eval_timeout(const ks_grub_eval *ev);

/* The menu registered so far (submenus hold the entries their body registers). */
const ks_grub_entry *ks_grub_eval_menu(const ks_grub_eval *ev, size_t *ret_n);
/* The environment block as GRUB left it (NULL when there is none). */
const ks_grubenv *ks_grub_eval_env(const ks_grub_eval *ev);
unsigned ks_grub_eval_save_env_failures(const ks_grub_eval *ev);
/* Things not followed, for people: "source ...", "configfile ...". */
char **ks_grub_eval_notes(const ks_grub_eval *ev);

/* What one boot does after the script: menu, default, timeout, the entry run. */
typedef struct ks_grub_boot_result {
    bool waits;          /* the menu stops and waits for a key: timeout unset/-1, or the entry
                            loaded nothing (GRUB goes back to the menu without a timeout) */
    int timeout;         /* seconds GRUB counts down before booting (-1 when it waits) */
    bool one_shot;       /* boot_once was set by the header (next_entry or prev_saved_entry) */
    char *default_value; /* "default" as the header left it (NULL when unset) */
    bool fell_back;      /* some level of default matched nothing: entry 0 of that level */
    char *title_path;    /* path of the entry run, '>' separated, '>>' escaped */
    char *id_path;
    bool recovery;
    bool loaded; /* a linux command succeeded */
    char *linux_path;
    char *kernel; /* release from the linux path, NULL when not a vmlinuz-*/
    char *linux_args;
    char **initrds;          /* the files of the initrd command after it, as written; NULL: none */
    bool halted;             /* halt/poweroff/reboot ran in the entry */
    const char *wait_reason; /* static text when it waits: "timeout", "password",
                                "nothing-loaded", "no-entries",
                                "firmware-setup" */
} ks_grub_boot_result;

/* Picks the default entry and runs it (after ks_grub_eval_run). */
int ks_grub_eval_boot(ks_grub_eval *ev, ks_grub_boot_result *ret);
void ks_grub_boot_result_done(ks_grub_boot_result *r);
