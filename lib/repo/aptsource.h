/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/basic/config.h"
#include "lib/basic/root.h"
#include "lib/basic/transaction.h"
#include "lib/basic/util.h"

/* What kswap writes (paths inside the root; Signed-By names the keyring as apt sees it). */
#define KS_APT_XANMOD_URI KS_REPOSITORY_DEFAULT_URI
#define KS_APT_SOURCE_PATH "etc/apt/sources.list.d/xanmod.sources"
#define KS_APT_KEYRING_PATH "etc/apt/keyrings/xanmod-archive-keyring.gpg"
/* The first line of the source file kswap writes; ks_aptsource_remove() looks for it. */
#define KS_APT_SOURCE_MARKER "# Written by kswap"
/* Prefix of a line kswap disabled, and the suffix of a file it disabled as a whole. */
#define KS_APT_DISABLED_PREFIX "# disabled by kswap: "
/* Ends in ".disabled": apt ignores it silently (Dir::Ignore-Files-Silently). */
#define KS_APT_DISABLED_SUFFIX ".kswap.disabled"

typedef enum ks_apt_format {
    KS_APT_FORMAT_LIST,   /* one-line style: sources.list, *.list */
    KS_APT_FORMAT_DEB822, /* *.sources stanzas */
    _KS_APT_FORMAT_MAX,
    _KS_APT_FORMAT_INVALID = -EINVAL,
} ks_apt_format;

/* One entry: a line of a .list file or a stanza of a .sources file. */
typedef struct ks_apt_source {
    char *file; /* path inside the root as given to the parser (may be NULL) */
    ks_apt_format format;
    unsigned line_first; /* 1-based; a stanza spans line_first..line_last */
    unsigned line_last;
    bool enabled; /* false: "Enabled: no", which apt skips */
    char **types; /* "deb", "deb-src" */
    char **uris;
    char **suites;
    char **components; /* empty for an exact path suite ("./") */
    char *signed_by;   /* the option's value as written, NULL when absent */
} ks_apt_source;

/* An entry apt would refuse ("Malformed entry ..."): reported, never changed by kswap. */
typedef struct ks_apt_problem {
    char *file;
    unsigned line;
    char *reason;
} ks_apt_problem;

typedef struct ks_apt_sources {
    ks_apt_source *v;
    size_t n;
    ks_apt_problem *bad;
    size_t n_bad;
} ks_apt_sources;

void ks_apt_sources_done(ks_apt_sources *s);
DEFINE_TRIVIAL_DONE_FUNC(ks_apt_sources, ks_apt_sources_done);
#define _cleanup_apt_sources_ _cleanup_(ks_apt_sources_donep)

/*
 * Parsers take text, so they can be tested and fuzzed; entries and problems are appended to
 * *sources (0 or -ENOMEM; malformed input is a problem, not an error). file is copied into
 * each entry and problem.
 */
int ks_aptsource_parse_list(const char *text, size_t len, const char *file,
                            ks_apt_sources *sources);
int ks_aptsource_parse_deb822(const char *text, size_t len, const char *file,
                              ks_apt_sources *sources);

/*
 * Reads etc/apt/sources.list and etc/apt/sources.list.d/{*.list,*.sources} inside the root, in
 * apt's order, with apt's file name rules. Missing files and folders are no error.
 */
int ks_aptsource_read(const ks_root *root, ks_apt_sources *ret);

/*
 * Whether uri names one of the archives (NULL-terminated list of URIs): scheme http or https
 * alike, host case-insensitive, trailing slashes ignored.
 */
bool ks_apt_uri_matches(const char *uri, char *const *archive_uris);
/* Whether any URI of the entry is one of the archives. */
bool ks_apt_source_is_archive(const ks_apt_source *s, char *const *archive_uris);

typedef struct ks_apt_takeover {
    char *const *archive_uris; /* sources of these are taken over; NULL: KS_APT_XANMOD_URI */
    const char *uri;           /* written to URIs:; NULL: KS_APT_XANMOD_URI */
    const char *suite;         /* the codename (required); ending in '/': a flat repository */
    char *const *components;   /* NULL: "main"; a flat repository has none */
    const void *keyring;       /* binary keyring (ks_keyring_export_binary()) */
    size_t keyring_len;
} ks_apt_takeover;

/*
 * Plans the takeover without changing anything: the keyring, then the neutralisation of every
 * other enabled source of the archive (a file holding only such sources is renamed to
 * NAME.kswap.disabled; otherwise their lines are commented out with KS_APT_DISABLED_PREFIX),
 * then the deb822 source. In that order apt never sees two sources of the archive. An empty
 * list means everything is in place already. -EEXIST when KS_APT_SOURCE_PATH exists and holds
 * other archives too (kswap would lose them); -EINVAL on a missing suite or keyring.
 */
int ks_aptsource_plan(const ks_root *root, const ks_apt_takeover *t, ks_transaction *ret);
/*
 * Plans what `rollback --purge` does, from the root alone (no journal needed): remove the source
 * kswap wrote (found by KS_APT_SOURCE_MARKER), rename NAME.kswap.disabled files back, uncomment
 * lines kswap disabled, and remove the keyring unless a source left enabled still names it.
 */
int ks_aptsource_plan_remove(const ks_root *root, ks_transaction *ret);

/*
 * Plans are applied and undone with ks_transaction_apply() and ks_transaction_undo(); the caller
 * journals every path first (ks_journal_note_transaction()). Plan and apply in one step (undone
 * again when applying fails): *ret_changes is what was done, for undo.
 */
int ks_aptsource_takeover(const ks_root *root, const ks_apt_takeover *t,
                          ks_transaction *ret_changes);
int ks_aptsource_remove(const ks_root *root, ks_transaction *ret_changes);
