/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "lib/engine/journal.h"

/*
 * The audit log of commands: var/lib/kswap/commands.json inside the root, beside the swap
 * history (lib/engine/history.h) and the journal. One entry for every command that changed
 * something (apply, pin, rollback, accept's verdict, status --ack, ...), appended when the
 * command ends: when, the command line, the swap it acted on (the journal's swap_id), its
 * result, the state it left, and who asked (lib/host/requester.h). A command that changed
 * nothing (a refusal, a dry run, status) writes no entry. Entries are never changed once
 * written.
 *
 * The file is rewritten whole and atomically (lib/basic/fileio.h) with the new entry at the end,
 * keeping the newest KS_COMMAND_LOG_MAX entries (about 250 bytes each): a crash leaves the old
 * or the new file, never a torn entry, and the size stays bounded. A log that does not parse
 * is moved aside to KS_COMMAND_LOG_DAMAGED_PATH and a new one started (a warning, never a
 * reason to fail the command).
 */
#define KS_COMMAND_LOG_PATH "var/lib/kswap/commands.json"
#define KS_COMMAND_LOG_DAMAGED_NAME "commands.json.damaged"
#define KS_COMMAND_LOG_DAMAGED_PATH "var/lib/kswap/" KS_COMMAND_LOG_DAMAGED_NAME
#define KS_COMMAND_LOG_VERSION 1
#define KS_COMMAND_LOG_MAX 1000u
#define KS_COMMAND_LOG_MAX_SIZE (4u << 20)

typedef struct ks_command_entry {
    uint64_t id;   /* 1, 2, ...: never reused, also when old entries are dropped */
    char *time;    /* ISO 8601 UTC */
    char *command; /* "apply --deb /root/k.deb --yes" */
    char *swap_id; /* NULL: the journal had none */
    char *result;  /* the command's result: done, unchanged, blocked, failed, ... */
    char *state;   /* the journal's state when it ended */
    char *by;      /* who asked */
} ks_command_entry;

typedef struct ks_command_log {
    ks_command_entry *v; /* oldest first */
    size_t n;
} ks_command_log;

void ks_command_log_done(ks_command_log *l);
DEFINE_TRIVIAL_DONE_FUNC(ks_command_log, ks_command_log_done);
#define _cleanup_command_log_ _cleanup_(ks_command_log_donep)

/* -EBADMSG with *ret_error for anything that is not a log; -EPROTONOSUPPORT for another
 * version; *ret untouched on failure. */
int ks_command_log_parse(const char *text, size_t len, ks_command_log *ret, char **ret_error);
int ks_command_log_format(const ks_command_log *l, char **ret);
json_object *ks_command_entry_to_json(const ks_command_entry *e); /* NULL: -ENOMEM */
/* A missing file is an empty log. */
int ks_command_log_load(const ks_root *root, ks_command_log *ret, char **ret_error);

/*
 * Appends an entry for command with result, the journal's swap_id and state (j may be NULL),
 * now. 0, or negative errno with *ret_warning saying why (the caller warns; the command's own
 * result stands). A damaged log is moved aside first (0, with *ret_warning saying so). The
 * caller holds kswap's lock.
 */
int ks_command_log_append(const ks_root *root, const char *command, const char *result,
                          const ks_journal *j, char **ret_warning);
