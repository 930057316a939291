/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * What an apt Packages index (the file apt keeps in its lists folder after `apt-get update`)
 * says about one package: a scan of its stanzas' Package: and Version: fields, nothing else.
 * The index comes from the repository: untrusted, any bytes; the scan is linear and never
 * fails on malformed text (a line that is no field is skipped).
 */
typedef struct ks_packages_index_info {
    size_t n_packages; /* stanzas with a Package: field */
    bool found;        /* a stanza names the package */
    char *version;     /* the Version: of its last stanza that names it (NULL when none) */
} ks_packages_index_info;

/* 0, or -ENOMEM. */
int ks_packages_index_scan(const char *text, size_t len, const char *package,
                           ks_packages_index_info *ret);
void ks_packages_index_info_done(ks_packages_index_info *i);
