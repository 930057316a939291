/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/* Whether a package is installed per var/lib/dpkg/status ("Status: install ok installed"). */
int ks_dpkg_is_installed(const ks_root *root, const char *package, bool *ret);
/* The same on status text; the parser takes text so it can be tested and fuzzed. */
int ks_dpkg_status_has(const char *text, size_t len, const char *package, bool *ret);
