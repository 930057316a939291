/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/engine/dryrun.h"
#include "lib/engine/plan.h"
#include "lib/engine/swap-run.h"

/*
 * The steps of apply, as one table (lib/engine/apply.c) that apply and apply --dry-run both
 * walk, in the manner of git's sequencer table: each step has its name in the journal, the
 * state the journal holds once it is done, whether this apply needs it, what it does (run) and
 * what it would do (describe, for the dry run: it fills a ks_dryrun and changes nothing). Each
 * step lives in its own file (step-repository.c, step-prepare.c, ...).
 *
 * Before the first step, apply judges (plan, journal, accept's checklist: lib/engine/apply.c);
 * a step runs only once that judgement let it go ahead.
 */

/* What the steps of one apply share. */
typedef struct ks_apply_ctx {
    const ks_apply_opts *o;
    ks_plan plan;
    const char *old; /* the old (running) kernel's release: the journal's */
    char *new;       /* the new kernel's release, once the install step knows it */
    bool repository; /* installed from the repository (neither --deb nor an installed --kernel) */
    bool installed;  /* --kernel names a kernel that is installed already */
} ks_apply_ctx;

typedef struct ks_apply_step {
    const char *name; /* the journal's step ("repository", "prepare", ...) */
    ks_state reaches; /* the journal's state once it is done; _KS_STATE_INVALID: unchanged */
    /* NULL: every apply; else whether this one needs the step. */
    bool (*wanted)(const ks_apply_ctx *a);
    /* Does the step; a failure records itself (ks_run_fail_step) and returns negative errno. */
    int (*run)(ks_run *x, ks_apply_ctx *a);
    /* Adds what the step would do to d; writes nothing, runs nothing that changes anything. */
    int (*describe)(ks_run *x, ks_apply_ctx *a, ks_dryrun *d);
} ks_apply_step;

extern const ks_apply_step ks_step_repository;
extern const ks_apply_step ks_step_prepare;
extern const ks_apply_step ks_step_install;
extern const ks_apply_step ks_step_verify;
extern const ks_apply_step ks_step_arm;
extern const ks_apply_step ks_step_reboot;

/* The autoremove guard's error (step NULL: the check before anything is written). */
int ks_apply_autoremove_error(ks_run *x, const char *step, int r);
