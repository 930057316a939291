/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"

/*
 * A file-change transaction: a list of changes to files inside the root, each with what undoing
 * it needs (the old content and mode, kept before anything is written). Applied in order, each
 * write atomic (lib/basic/fileio.h); undone in reverse order, byte for byte. The apt sources
 * (lib/repo/aptsource.h) plan one; the state journal records every path of one before it is
 * applied (ks_journal_note_transaction()), with the same reader of old contents.
 */
typedef enum ks_file_change_kind {
    KS_FILE_CHANGE_WRITE,  /* path gets data (atomically) */
    KS_FILE_CHANGE_RENAME, /* path is renamed to new_path, in the same folder */
    KS_FILE_CHANGE_REMOVE, /* path is removed */
    _KS_FILE_CHANGE_KIND_MAX,
    _KS_FILE_CHANGE_KIND_INVALID = -EINVAL,
} ks_file_change_kind;

typedef struct ks_file_change {
    ks_file_change_kind kind;
    char *path;     /* inside the root */
    char *new_path; /* RENAME only */
    char *data;     /* WRITE: the new content */
    size_t len;
    mode_t mode;     /* WRITE: mode of the new file */
    bool old_exists; /* WRITE, REMOVE: the file existed before */
    char *old_data;  /* ... with this content (may be binary, for example a keyring) */
    size_t old_len;
    mode_t old_mode;
    char *made_dir; /* WRITE: the topmost folder it creates, which undo removes if empty */
    char *what;     /* human words, e.g. "disable 1 entry in etc/apt/sources.list" */
} ks_file_change;

typedef struct ks_transaction {
    ks_file_change *v;
    size_t n;
} ks_transaction;

void ks_file_change_done(ks_file_change *c);
DEFINE_TRIVIAL_DONE_FUNC(ks_file_change, ks_file_change_done);
#define _cleanup_file_change_ _cleanup_(ks_file_change_donep)
void ks_transaction_done(ks_transaction *t);
DEFINE_TRIVIAL_DONE_FUNC(ks_transaction, ks_transaction_done);
#define _cleanup_transaction_ _cleanup_(ks_transaction_donep)

const char *ks_file_change_kind_to_string(ks_file_change_kind k);

/* Appends *c and takes what it holds (*c is left empty). 0 or -ENOMEM (*c untouched). */
int ks_transaction_add(ks_transaction *t, ks_file_change *c);

/*
 * The content and mode of path inside the root as it is now, for undo: *ret_exists false (and
 * *ret_data NULL) when there is no such file. A symbolic link is followed unless nofollow
 * (then -ELOOP). -EISDIR: not a regular file; -EFBIG: larger than max bytes; -EAGAIN: it grew
 * while it was read. The data is NUL-terminated; outputs untouched on failure.
 */
int ks_file_read_old(const ks_root *root, const char *path, size_t max, bool nofollow,
                     bool *ret_exists, char **ret_data, size_t *ret_len, mode_t *ret_mode);
/* Fills c's old_exists, old_data, old_len and old_mode from c->path (symlinks followed). */
int ks_file_change_keep_old(const ks_root *root, ks_file_change *c, size_t max);

/* Applies the changes in order; safe to run again after an interruption. */
int ks_transaction_apply(const ks_root *root, const ks_transaction *t);
/*
 * Undoes the changes in reverse order, restoring the previous files byte for byte (and removing
 * the folders a write made, when empty); idempotent. Every change is tried; the first error is
 * returned.
 */
int ks_transaction_undo(const ks_root *root, const ks_transaction *t);
