/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/* Whether a package is installed per var/lib/dpkg/status ("Status: install ok installed"). */
int ks_dpkg_is_installed(const ks_root *root, const char *package, bool *ret);
/* The same on status text; the parser takes text so it can be tested and fuzzed. */
int ks_dpkg_status_has(const char *text, size_t len, const char *package, bool *ret);
/* Appends the installed packages whose names start with prefix to *names (each once). 0 or
 * -ENOMEM. */
int ks_dpkg_status_installed_prefixed(const char *text, size_t len, const char *prefix,
                                      char ***names);

/*
 * A package dpkg left unfinished (var/lib/dpkg/status, "Status: WANT FLAG STATE"): its state is
 * half-installed, unpacked, half-configured, triggers-awaited or triggers-pending, or its flag
 * reinstreq (dpkg refuses to remove it before a reinstall). What finishes it: "dpkg --configure
 * -a" for the configure states; a reinstall (or dpkg --remove --force-remove-reinstreq) for
 * half-installed and reinstreq.
 */
typedef struct ks_dpkg_unfinished {
    char *package;
    char *state; /* "half-configured", ... */
    bool reinstreq;
} ks_dpkg_unfinished;

typedef struct ks_dpkg_unfinished_list {
    ks_dpkg_unfinished *v;
    size_t n, cap;
} ks_dpkg_unfinished_list;

void ks_dpkg_unfinished_list_done(ks_dpkg_unfinished_list *l);
/* Every unfinished package of the status text, in file order; -ENOMEM. */
int ks_dpkg_status_unfinished(const char *text, size_t len, ks_dpkg_unfinished_list *ret);
/* The same on var/lib/dpkg/status inside the root (missing: none). */
int ks_dpkg_read_unfinished(const ks_root *root, ks_dpkg_unfinished_list *ret);
/* Whether "dpkg --configure -a" finishes it (a configure state without reinstreq). */
bool ks_dpkg_unfinished_is_configurable(const ks_dpkg_unfinished *u);

/*
 * dpkg's own explanation in apt's output: the last "dpkg: error processing ..." line with the
 * line after it (the reason), joined by a space; NULL when there is none.
 */
char *ks_dpkg_error_from_output(const char *output);
