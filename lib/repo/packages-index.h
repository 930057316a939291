/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * What an apt Packages index (the file apt keeps in its lists folder after `apt-get update`)
 * says about one package: a scan of its stanzas' Package:, Version: and Depends: fields,
 * nothing else. The index comes from the repository: untrusted, any bytes; the scan is linear
 * and never fails on malformed text (a line that is no field is skipped).
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

/* Every stanza of one package (an index may list several versions), in file order. */
typedef struct ks_packages_stanza {
    char *version; /* never NULL: a stanza without Version: is left out */
    char *depends; /* the Depends: field as written, NULL when it has none */
} ks_packages_stanza;
typedef struct ks_packages_stanzas {
    ks_packages_stanza *v;
    size_t n, cap;
} ks_packages_stanzas;

/* Appends package's stanzas of the index text to list. 0, or -ENOMEM (list keeps what it had). */
int ks_packages_index_find(const char *text, size_t len, const char *package,
                           ks_packages_stanzas *list);
void ks_packages_stanzas_done(ks_packages_stanzas *l);

/*
 * The kernel release a metapackage brings: the first linux-image-RELEASE among the relations
 * and alternatives of a Depends: field ("linux-image-6.18.50-x64v3-xanmod1 (= 6.18.50-...)",
 * an architecture qualifier dropped). 1 with *ret_release (free() it), 0 when none, -ENOMEM.
 */
int ks_packages_depends_image(const char *depends, char **ret_release);

/*
 * The start of the names apt gives the Packages indexes of one source in var/lib/apt/lists
 * (apt-pkg/contrib/strutl.cc URItoFileName): the URI without its scheme and user, unsafe bytes
 * and "\|{}[]<>\"^~_=!@#$%^&*" as %xx, '/' as '_'; then "dists_SUITE_" (a flat suite "dir/":
 * its path). "http://deb.xanmod.org" and "bookworm" give "deb.xanmod.org_dists_bookworm_";
 * "file:/srv/repo" gives "_srv_repo_dists_bookworm_". NULL: out of memory.
 */
char *ks_apt_lists_prefix(const char *uri, const char *suite);
