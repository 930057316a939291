/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * What an apt Packages index (the file apt keeps in its lists folder after `apt-get update`)
 * says about one package: a scan of its stanzas' Package:, Version: and Depends: fields.
 * The index comes from the repository: untrusted, any bytes; the scan is linear and never
 * fails on malformed text (a line that is no field is skipped).
 */
typedef struct ks_packages_index_info {
    size_t n_packages; /* stanzas with a Package: field */
    bool found;        /* a stanza names the package */
    char *version;     /* the highest Version: of the stanzas that name it, as apt's candidate
                          (dpkg's order; NULL when none) */
    /* The kernel release that candidate brings: its own name's when it is linux-image-RELEASE,
     * else the first linux-image-RELEASE its Depends names (XanMod's metapackages); NULL when
     * neither (a package that ships the kernel itself under another name). */
    char *release;
} ks_packages_index_info;

/* 0, or -ENOMEM. Of two indexes, merge with ks_packages_index_merge(). */
int ks_packages_index_scan(const char *text, size_t len, const char *package,
                           ks_packages_index_info *ret);
void ks_packages_index_info_done(ks_packages_index_info *i);
/* Adds what another index says to into: the counts, and the higher candidate (from is taken). */
void ks_packages_index_merge(ks_packages_index_info *into, ks_packages_index_info *from);
/* The release of a linux-image-RELEASE name in a Depends: value (alternatives, version
 * constraints and :arch allowed), or NULL. Exposed for tests. */
char *ks_packages_depends_release(const char *depends, size_t n);
