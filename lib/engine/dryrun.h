/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/transaction.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/plan.h"

/*
 * apply --dry-run: everything apply would do, computed in memory and written nowhere. The
 * engine (ks_apply_dry_run in lib/engine/swap.h) judges as apply judges (plan, journal, accept's
 * checklist, the repository check); this file holds what it found would change: the package and
 * its source, the programs apply would run, the files with the content they would get, the
 * journal's steps, and the grubenv and forecast after arming.
 */

typedef struct ks_dry_file {
    char *path;     /* inside the root */
    char *action;   /* "write", "remove", "rename" */
    char *what;     /* for people */
    char *content;  /* the text it would hold; NULL when binary (a keyring) or removed */
    size_t size;    /* bytes it would hold */
    char *new_path; /* rename only */
} ks_dry_file;

typedef struct ks_dry_program {
    char *step;
    char **argv;
    bool ran; /* the dry run itself ran it (the repository check: apt-get update, private) */
} ks_dry_program;

typedef struct ks_dry_step {
    char *name;
    char *detail;
} ks_dry_step;

typedef struct ks_dryrun {
    char *old_kernel;
    char *new_kernel;  /* NULL: known only once apt installed the package */
    char *package;     /* what apt-get install gets; NULL: nothing to install */
    char *source_kind; /* "deb", "repository", "installed" */
    char *source;      /* the file, "URI SUITE COMPONENTS", or the installed release */
    char *version;     /* the package's version the repository index names, when known */
    bool locked;       /* kswap's lock was held shared (false: no lock file, nobody held it) */
    bool resume;       /* an interrupted apply would resume (state in resume_state) */
    char *resume_state;
    char *apply_command; /* the same apply without --dry-run, as a command line that runs as is */
    ks_dry_file *files;
    size_t n_files;
    ks_dry_program *programs;
    size_t n_programs;
    ks_dry_step *steps;
    size_t n_steps;
    /* After arming: the grubenv and the next boots, when they can be evaluated now. */
    bool forecast_known;
    bool forecast_promised; /* boot 1 new (one-shot), boots 2 and 3 old */
    char *forecast_note;    /* how it was computed, or why it cannot be */
    ks_boot boot_after;     /* cfg: grub.cfg as update-grub would write it; env: as armed */
    ks_grub_forecast forecast;
} ks_dryrun;

void ks_dryrun_free(ks_dryrun *d);

int ks_dryrun_add_file(ks_dryrun *d, const char *path, const char *action, const char *what,
                       const char *content, size_t size, bool binary);
int ks_dryrun_add_transaction(ks_dryrun *d, const ks_transaction *t);
int ks_dryrun_add_program(ks_dryrun *d, const char *step, char *const *argv, bool ran);
int ks_dryrun_add_step(ks_dryrun *d, const char *name, const char *detail);

/*
 * The trial's GRUB script, grub.cfg as update-grub would write it with that script and
 * GRUB_DEFAULT=saved, the grubenv as arming leaves it and the forecast of the next boots, from
 * the grub.cfg (its text read from root) and grubenv on disk now (b). new must have an entry in
 * that grub.cfg (an installed kernel); otherwise forecast_known stays false and forecast_note says
 * why. Adds the script and grubenv to d's files. Negative errno only for out of memory.
 */
int ks_dryrun_forecast(ks_dryrun *d, const ks_root *root, const ks_boot *b, const char *old,
                       const char *new, const char *trial_args);
