/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "lib/engine/journal.h"

/*
 * The history of swaps: var/lib/kswap/history.json inside the root, one record per swap that
 * came to an end, oldest first in the file. The state journal holds only the current swap; when
 * it ends (pinned, rolled back, failed, or a trial judged health-failed, fell-back or
 * trial-hung) the swap is written here, and again if it ends once more (a health-failed swap
 * rolled back later): the newest record of the same swap (the same "swap_id", the journal's
 * random id; for records and journals from before that id, the same "started") is replaced,
 * never a second one added. Two swaps that start within one second are two records.
 *
 * The file is rewritten whole and atomically (lib/basic/fileio.h: temp, fsync, rename, fsync
 * dir), keeping the newest KS_HISTORY_MAX_RECORDS records: a crash leaves the old or the new
 * file, never a torn record, and the size stays bounded (about 600 bytes a record) without a
 * reader that has to skip a half-written last line, as an append-only log would need.
 *
 * A history that does not parse never stops a swap: ks_history_note() moves it aside to
 * KS_HISTORY_DAMAGED_PATH, starts a new one and says so in its warning.
 */
#define KS_HISTORY_PATH "var/lib/kswap/history.json"
#define KS_HISTORY_DAMAGED_PATH "var/lib/kswap/history.json.damaged"
#define KS_HISTORY_VERSION 1
#define KS_HISTORY_MAX_RECORDS 500u
/* Larger files are not histories (500 records are about 300 KiB). */
#define KS_HISTORY_MAX_SIZE (4u << 20)
/* ... and hold at most so many JSON values (a record has about 20, 3 of them containers). */
#define KS_HISTORY_MAX_CONTAINERS 16384u
#define KS_HISTORY_MAX_VALUES 262144u

typedef struct ks_history_kernel {
    char *release; /* NULL: not known (a swap that failed before its kernel was installed) */
    char *id_path; /* full GRUB id path of its entry; NULL when not known */
} ks_history_kernel;

typedef struct ks_history_record {
    uint64_t id;   /* 1, 2, ...: the position in the history, never reused */
    char *swap_id; /* the journal's "swap_id"; NULL in records written before swaps had one */
    char *started; /* ISO 8601 UTC: when the apply began */
    char *ended;   /* ISO 8601 UTC: when the swap came to its end */
    ks_history_kernel from, to;
    char *outcome; /* one of ks_history_outcomes */
    char *reason;  /* NULL when none */
    char *by;      /* who asked (lib/host/requester.h) */
    char *version; /* the kswap that wrote the record */
    /* The journal's TCP samples ("tcp", only when there are any; lib/host/tcpsample.h). */
    ks_tcp_effect tcp;
} ks_history_record;

typedef struct ks_history {
    ks_history_record *v; /* oldest first */
    size_t n;
} ks_history;

void ks_history_done(ks_history *h);
DEFINE_TRIVIAL_DONE_FUNC(ks_history, ks_history_done);
#define _cleanup_history_ _cleanup_(ks_history_donep)

/* The outcomes of a record, NULL-terminated: pinned, rolled-back, failed, health-failed,
 * fell-back, trial-hung. */
extern const char *const ks_history_outcomes[];
/* The outcome j ended with, or NULL when its swap has not ended (idle, in progress, armed,
 * trial-ok waiting for the pin). A failed trial keeps its verdict after a rollback. */
const char *ks_history_outcome_of(const ks_journal *j);

/*
 * Parses the file's text. -EBADMSG for anything that is not a history, with *ret_error (when
 * not NULL) saying what, e.g. "swaps[2]: 'outcome': unknown value 'x'"; -EPROTONOSUPPORT for a
 * version this kswap does not know. *ret untouched on failure.
 */
int ks_history_parse(const char *text, size_t len, ks_history *ret, char **ret_error);
/* The file's text (pretty printed, ends with a newline). */
int ks_history_format(const ks_history *h, char **ret);
/* One record as JSON (the same object as in the file); NULL on -ENOMEM. */
json_object *ks_history_record_to_json(const ks_history_record *r);
/* Reads KS_HISTORY_PATH: a missing file is an empty history; otherwise errors as parse. */
int ks_history_load(const ks_root *root, ks_history *ret, char **ret_error);

/*
 * Writes j's swap into the history when it has ended (ks_history_outcome_of), by who asked
 * now (lib/host/requester.h). 1: written; 0: nothing to write (not ended, or the newest record
 * says so already). A damaged history is moved aside first (1 or 0 then, with *ret_warning
 * set); a negative errno when the history could not be written, with *ret_warning saying why.
 * The caller holds kswap's lock.
 */
int ks_history_note(const ks_root *root, const ks_journal *j, char **ret_warning);
/*
 * ks_history_note() for a command's findings: its warning becomes "history.damaged" (the file
 * was moved aside) or "history.unwritable" (this swap is not in the history), severity warn;
 * never a reason to fail. -ENOMEM only.
 */
struct ks_findings;
int ks_history_note_finding(const ks_root *root, const ks_journal *j, struct ks_findings *f);
