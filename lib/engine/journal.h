/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "lib/basic/root.h"
#include "lib/basic/transaction.h"
#include "lib/basic/util.h"
#include "lib/engine/states.h"
#include "lib/host/snapshot.h"
#include "lib/host/tcpsample.h"

/*
 * The state journal: var/lib/kswap/state.json inside the root. It says where a swap stands
 * (state), what the trial came to (outcome), which kernels and GRUB entries are involved, the
 * boot at arming, what the machine looked like before kswap changed anything (snapshot), every
 * step with its times, and every change made, so that a later run resumes or rolls back.
 *
 * Changes to the journal are made in memory; ks_journal_save() writes the whole file
 * atomically (lib/basic/fileio.h). ks_journal_step_begin()/_end(), ks_journal_note_file(),
 * ks_journal_note_package() and ks_journal_claim_reboot() save by themselves, because the
 * record must be on disk before (and after) the action it describes.
 */
#define KS_JOURNAL_PATH "var/lib/kswap/state.json"
/* Where kswap rollback moves a journal it cannot read (its bytes kept for the operator). */
#define KS_JOURNAL_DAMAGED_NAME "state.json.damaged"
#define KS_JOURNAL_DAMAGED_PATH "var/lib/kswap/" KS_JOURNAL_DAMAGED_NAME
#define KS_JOURNAL_VERSION 1
/* Larger files are not journals: refuse them instead of reading without bound. */
#define KS_JOURNAL_MAX_SIZE (16u << 20)
/*
 * ... or hold more JSON values than these (json-c builds a tree of about 1 KiB per object: a
 * 16 MiB journal of 525000 steps took 590 MB; kswap writes about 20 steps and as many changes).
 * Counted on the text before it is parsed (lib/basic/json-util.h).
 */
#define KS_JOURNAL_MAX_CONTAINERS 65536u
#define KS_JOURNAL_MAX_VALUES 262144u
/*
 * What ran on the old kernel keeps at most so many items (and notes of what was skipped): every
 * one is a check of the trial. A snapshot with more keeps the first ones and says so in its
 * "skipped" list; a journal that holds more is not one kswap wrote.
 */
#define KS_JOURNAL_MAX_RUNNING_ITEMS 16384u
/* A file change keeps at most this much of the previous content (keyrings, sources). */
#define KS_JOURNAL_MAX_PREVIOUS (1u << 20)

typedef enum ks_step_status {
    KS_STEP_STARTED,
    KS_STEP_DONE,
    KS_STEP_FAILED,
    KS_STEP_SKIPPED,
    _KS_STEP_STATUS_MAX,
    _KS_STEP_STATUS_INVALID = -EINVAL,
} ks_step_status;

typedef enum ks_change_kind {
    KS_CHANGE_FILE,    /* a file inside the root written (or created) by kswap */
    KS_CHANGE_PACKAGE, /* a package installed by kswap */
    _KS_CHANGE_KIND_MAX,
    _KS_CHANGE_KIND_INVALID = -EINVAL,
} ks_change_kind;

/* Text fields of the journal, set and read by name (the JSON key is the string form). */
typedef enum ks_journal_field {
    KS_JF_OLD_KERNEL,     /* "old_kernel": release of the proven kernel */
    KS_JF_NEW_KERNEL,     /* "new_kernel": release on trial */
    KS_JF_OLD_PATH,       /* "old_path": full GRUB id path of the old kernel's entry */
    KS_JF_NEW_PATH,       /* "new_path": full GRUB id path of the new kernel's entry */
    KS_JF_OLD_TITLE_PATH, /* "old_title_path": the same path by titles, for people */
    KS_JF_NEW_TITLE_PATH, /* "new_title_path" */
    KS_JF_REASON,         /* "reason": why the swap failed or was rolled back */
    /* "source": where apply takes the new kernel from, so that the next steps can name the
     * same apply and a resumed one goes on with it: "deb:/ABSOLUTE/PATH.deb",
     * "kernel:RELEASE" or "package:NAME" (the repository) (lib/engine/apply-source.h) */
    KS_JF_SOURCE,
    _KS_JF_MAX,
    _KS_JF_INVALID = -EINVAL,
} ks_journal_field;

typedef struct ks_journal_step {
    char *name;
    ks_step_status status;
    char *started;     /* ISO 8601 UTC, e.g. "2026-11-30T07:50:00Z" */
    char *finished;    /* NULL while started */
    char *detail;      /* NULL when none */
    unsigned attempts; /* times the step was begun (a resumed run begins it again) */
} ks_journal_step;

typedef struct ks_journal_change {
    ks_change_kind kind;
    char *name;              /* file: path inside the root; package: package name */
    char *version;           /* package: version when known; file: NULL */
    bool existed;            /* file: there was a file before kswap wrote it */
    unsigned char *previous; /* file: its content then (when existed) */
    size_t previous_len;
    mode_t mode; /* file: its permission bits then (when existed) */
    char *at;
} ks_journal_change;

typedef struct ks_journal ks_journal;

/* Step status and change kind names, as in the JSON (states and outcomes: states.h). */
const char *ks_step_status_to_string(ks_step_status s);
ks_step_status ks_step_status_from_string(const char *s);
const char *ks_change_kind_to_string(ks_change_kind k);
ks_change_kind ks_change_kind_from_string(const char *s);
const char *ks_journal_field_to_string(ks_journal_field f);

/* A fresh idle journal for root (not written until saved). */
int ks_journal_new(const ks_root *root, ks_journal **ret);
/*
 * Reads KS_JOURNAL_PATH. A missing file gives a fresh idle journal. A file that is not a
 * journal gives -EBADMSG, one of a version this kswap does not know -EPROTONOSUPPORT; then
 * *ret_error (when not NULL) receives a message such as "field 'state': unknown value 'x'".
 * Never resets a journal it cannot read. root must outlive the journal.
 */
int ks_journal_load(const ks_root *root, ks_journal **ret, char **ret_error);
/* Parses journal text; the result has no root (saving it gives -EBADF). Errors as load. */
int ks_journal_parse(const char *text, size_t len, ks_journal **ret, char **ret_error);
ks_journal *ks_journal_free(ks_journal *j);
static inline void ks_journal_freep(ks_journal **j)
{
    ks_journal_free(*j);
}
#define _cleanup_journal_ _cleanup_(ks_journal_freep)

/* Writes the journal atomically (temp file, fsync, rename, fsync dir); stamps "updated". */
int ks_journal_save(ks_journal *j);
/*
 * An observer of the journal on disk: fn(j, data) runs after every successful save (the one
 * place every change of state, step and verdict passes), and cannot fail it. The journal owns
 * data: free_fn(data) when the journal is freed or another observer replaces it. Kept across
 * ks_journal_reset(). on_save_data: data when fn is the observer, else NULL.
 */
typedef void (*ks_journal_saved_fn)(const ks_journal *j, void *data);
void ks_journal_on_save(ks_journal *j, ks_journal_saved_fn fn, void *data, void (*free_fn)(void *));
void *ks_journal_on_save_data(const ks_journal *j, ks_journal_saved_fn fn);
/* "updated": when the journal was last saved (ISO 8601 UTC); NULL before the first save. */
const char *ks_journal_updated(const ks_journal *j);
/* "created": the first save of this swap's journal (ISO 8601 UTC); NULL before it. */
const char *ks_journal_created(const ks_journal *j);
/*
 * "swap_id": the identity of this swap, 32 random hexadecimal digits made at the same first
 * save (two swaps may start within one second of "created"); kept by every later save, by a
 * resumed apply and by ks_journal_restart(). NULL before the first save, and in journals of a
 * kswap before the id, which keep none.
 */
const char *ks_journal_swap_id(const ks_journal *j);
/* The clock for timestamps (tests); NULL restores time(). */
void ks_journal_set_clock(ks_journal *j, time_t (*now)(void));
/* Back to a fresh idle journal in memory (for a new swap); not saved. -EINVAL (the journal
 * unchanged) unless the swap ended (lib/engine/states.h: a transition to idle). */
int ks_journal_reset(ks_journal *j);
/*
 * The same, but the recorded changes (files with their content before kswap, packages) stay:
 * a new apply of a swap that did not end pinned goes on with it, and rollback --purge removes
 * what every apply of it installed.
 */
int ks_journal_reset_keep_changes(ks_journal *j);
/*
 * The same swap once more from its first step: as reset_keep_changes, and the swap keeps its
 * identity ("swap_id", "created"). For an apply killed before its prepare step ended (the
 * journal is still idle then): the next apply is the same swap, not a new one.
 */
int ks_journal_restart(ks_journal *j);

/* The whole journal as JSON, the same document as the file; NULL on -ENOMEM. */
json_object *ks_journal_to_json(const ks_journal *j);
/* The file's text (pretty printed, ends with a newline). */
int ks_journal_format(const ks_journal *j, char **ret);

ks_state ks_journal_state(const ks_journal *j);
/*
 * The one setter of the state: -EINVAL (and an assertion where they are on) for a value that
 * is no state or a transition the table of lib/engine/states.h does not have; the journal
 * keeps its state then.
 */
int ks_journal_set_state(ks_journal *j, ks_state s);
ks_outcome ks_journal_outcome(const ks_journal *j);
/* Also stamps "outcome_at" (cleared with KS_OUTCOME_NONE). -EINVAL: not an outcome. */
int ks_journal_set_outcome(ks_journal *j, ks_outcome o);
const char *ks_journal_outcome_at(const ks_journal *j);
const char *ks_journal_get(const ks_journal *j, ks_journal_field f); /* NULL when unset */
/* Copies value; NULL clears. -EINVAL for an unknown field, -ENOMEM. */
int ks_journal_set(ks_journal *j, ks_journal_field f, const char *value);

/*
 * The trial is armed in the boot boot_id that started at btime. A new trial: the outcome and
 * the reboot guard of an earlier one are cleared. Not saved.
 */
int ks_journal_set_armed(ks_journal *j, const char *boot_id, uint64_t btime);
const char *ks_journal_armed_boot_id(const ks_journal *j); /* NULL: not armed */
uint64_t ks_journal_armed_btime(const ks_journal *j);      /* 0: not armed */
const char *ks_journal_armed_at(const ks_journal *j);

/*
 * The reboot guard: accept reboots at most once per trial. Claims the one reboot of the current
 * trial from boot boot_id and saves at once; -EALREADY when it was claimed already (nothing
 * changes), -ENOENT when no trial is armed.
 */
int ks_journal_claim_reboot(ks_journal *j, const char *boot_id);
bool ks_journal_reboot_claimed(const ks_journal *j);
/*
 * "reboots_requested": reboots kswap asked for (systemctl reboot by apply --reboot, rollback
 * --reboot and accept; the forced reboot of a trial boot's deadline, counted when accept
 * records trial-hung) over the journal's whole life, at most INT64_MAX. A new swap keeps it;
 * only removing the journal file resets it. count: + 1, not saved.
 */
void ks_journal_count_reboot(ks_journal *j);
uint64_t ks_journal_reboots_requested(const ks_journal *j);

/*
 * Steps, each saved before and after. begin: a new step "started", or one begun before (a
 * resumed run) started again with attempts + 1. end: status DONE, FAILED or SKIPPED (SKIPPED
 * also for a step never begun); detail may be NULL. -ENOENT: end of a step never begun;
 * -EINVAL: bad status or name. The step is changed in memory even when saving fails.
 */
int ks_journal_step_begin(ks_journal *j, const char *name);
int ks_journal_step_end(ks_journal *j, const char *name, ks_step_status status, const char *detail);
size_t ks_journal_n_steps(const ks_journal *j);
const ks_journal_step *ks_journal_step_get(const ks_journal *j, size_t i);
const ks_journal_step *ks_journal_step_find(const ks_journal *j, const char *name);

/*
 * Changes, recorded (and saved) BEFORE they are made. note_file keeps the current content and
 * mode of path inside the root (or that it does not exist), so that the bytes kswap replaced
 * are on record (rollback itself does not write them back: it sets GRUB's default again, and
 * --purge plans the apt side from the root); a path noted before keeps its first record (the
 * state before kswap). -EFBIG: larger than
 * KS_JOURNAL_MAX_PREVIOUS. note_package records a package kswap installs (version may be NULL);
 * noting it again updates the version.
 */
int ks_journal_note_file(ks_journal *j, const char *path);
/* note_file for every path of a file-change transaction (a rename: both names), in order. */
int ks_journal_note_transaction(ks_journal *j, const ks_transaction *t);
int ks_journal_note_package(ks_journal *j, const char *name, const char *version);
size_t ks_journal_n_changes(const ks_journal *j);
const ks_journal_change *ks_journal_change_get(const ks_journal *j, size_t i);
const ks_journal_change *ks_journal_change_find(const ks_journal *j, ks_change_kind kind,
                                                const char *name);
/* Forgets a change once it is undone; saved at once. -ENOENT when not recorded. */
int ks_journal_forget_change(ks_journal *j, ks_change_kind kind, const char *name);

/*
 * Takes the snapshot of the host (lib/host/snapshot.h) through the journal's root, stamped by
 * the journal's clock. Replaces an earlier snapshot only on success. Not saved.
 */
int ks_journal_take_snapshot(ks_journal *j, const char *grubenv_path, const char *dropin_path,
                             char *const *sysctls);
const ks_snapshot *ks_journal_snapshot(const ks_journal *j); /* NULL: none taken */
/* What ran when the trial was armed ("running" in the JSON); NULL: none. set takes s
 * (allocated, or NULL to drop it). */
struct ks_run_snapshot;
const struct ks_run_snapshot *ks_journal_running(const ks_journal *j);
void ks_journal_set_running(ks_journal *j, struct ks_run_snapshot *s);

/*
 * The node's TCP health for this swap ("tcp" in the JSON, only once there is a sample;
 * lib/host/tcpsample.h): the baseline at arming, the sample at the pin, the last one of
 * `kswap report --record`. set copies s (NULL drops it); not saved.
 */
const ks_tcp_effect *ks_journal_tcp(const ks_journal *j);
int ks_journal_set_tcp(ks_journal *j, ks_tcp_slot slot, const ks_tcp_sample *s);
