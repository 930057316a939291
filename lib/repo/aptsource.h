/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/basic/root.h"

/* What kswap writes (paths inside the root; Signed-By names the keyring as apt sees it). */
#define KS_APT_XANMOD_URI "http://deb.xanmod.org"
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

typedef enum ks_apt_change_kind {
    KS_APT_CHANGE_WRITE,  /* path gets data (atomically) */
    KS_APT_CHANGE_RENAME, /* path is renamed to new_path, in the same folder */
    KS_APT_CHANGE_REMOVE, /* path is removed */
    _KS_APT_CHANGE_KIND_MAX,
    _KS_APT_CHANGE_KIND_INVALID = -EINVAL,
} ks_apt_change_kind;

/*
 * One change, with what undoing it needs: the caller journals the list before applying it
 * (old_data may be binary, for example a keyring).
 */
typedef struct ks_apt_change {
    ks_apt_change_kind kind;
    char *path;     /* inside the root */
    char *new_path; /* RENAME only */
    char *data;     /* WRITE: the new content */
    size_t len;
    mode_t mode;     /* WRITE: mode of the new file */
    bool old_exists; /* WRITE, REMOVE: the file existed before */
    char *old_data;  /* ... with this content */
    size_t old_len;
    mode_t old_mode;
    char *made_dir; /* WRITE: the topmost folder it creates, which undo removes if empty */
    char *what;     /* human words, e.g. "disable 1 entry in etc/apt/sources.list" */
} ks_apt_change;

typedef struct ks_apt_changes {
    ks_apt_change *v;
    size_t n;
} ks_apt_changes;

void ks_apt_changes_done(ks_apt_changes *c);
const char *ks_apt_change_kind_to_string(ks_apt_change_kind k);

typedef struct ks_apt_takeover {
    char *const *archive_uris; /* sources of these are taken over; NULL: KS_APT_XANMOD_URI */
    const char *uri;           /* written to URIs:; NULL: KS_APT_XANMOD_URI */
    const char *suite;         /* the codename (required) */
    const char *component;     /* NULL: "main" */
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
int ks_aptsource_plan(const ks_root *root, const ks_apt_takeover *t, ks_apt_changes *ret);
/*
 * Plans what `rollback --purge` does, from the root alone (no journal needed): remove the source
 * kswap wrote (found by KS_APT_SOURCE_MARKER), rename NAME.kswap.disabled files back, uncomment
 * lines kswap disabled, and remove the keyring unless a source left enabled still names it.
 */
int ks_aptsource_plan_remove(const ks_root *root, ks_apt_changes *ret);

/* Applies changes in order; safe to run again after an interruption. */
int ks_aptsource_apply(const ks_root *root, const ks_apt_changes *c);
/* Undoes changes in reverse order, restoring the previous files byte for byte; idempotent. */
int ks_aptsource_undo(const ks_root *root, const ks_apt_changes *c);
/* Plan and apply in one step. *ret_changes is what was done (for the journal and undo). */
int ks_aptsource_takeover(const ks_root *root, const ks_apt_takeover *t,
                          ks_apt_changes *ret_changes);
int ks_aptsource_remove(const ks_root *root, ks_apt_changes *ret_changes);
