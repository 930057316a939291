/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/spawn.h"
#include "lib/engine/swap.h"

/*
 * apt-get for the engine, as apply's install runs it: through the spawn helper with an argv
 * (never a shell), DEBIAN_FRONTEND=noninteractive and apt's English words, a timeout, and
 * apt's machine-readable progress on -o APT::Status-Fd=3 (lib/repo/apt-status.h) turned into
 * a progress line per phase ("apt unpack: ...", live percent between on a terminal) and one
 * line at the end on where the time went. Under a root that is not this machine the program
 * must not be the system's own (the tests' fakes), and gets KSWAP_ROOT=DIR.
 */
typedef struct ks_apt_run {
    const ks_swap_common *c; /* progress, live and trace callbacks (all optional) */
    const char *step;        /* the step named in progress lines ("tidy") */
    const char *root_abs;    /* the root's absolute path; NULL for this machine */
    unsigned timeout_ms;
} ks_apt_run;

/* Whether a program found at path may run for the root (see above). */
bool ks_apt_program_allowed(const char *root_abs, const char *path);

/*
 * Runs argv (argv[0] "apt-get", looked up on PATH). 0 when it ran and exited 0; -EPERM (the
 * system's own for another root), -ENOENT (not found), -EIO when it failed: *ret_error says
 * why for people (its last output line, or apt's lock message), *ret_output (optional) keeps
 * what it printed.
 */
int ks_apt_run_argv(const ks_apt_run *a, char *const *argv, char **ret_error, char **ret_output);
