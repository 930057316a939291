/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"

/*
 * The lock every kswap that changes something takes: flock(LOCK_EX) on var/lib/kswap/lock
 * inside the root, held until ks_lock_release() or the process ends (the kernel drops it with
 * the last fd, so a killed holder never leaves a stale lock). The holder's pid is written into
 * the file, so that a waiter can say who holds it.
 */
#define KS_LOCK_PATH "var/lib/kswap/lock"
#define KS_LOCK_TIMEOUT_MS_DEFAULT 10000u

typedef struct ks_lock ks_lock;

/*
 * While a lock is busy, the waiter may say whom it waits for: the hook is called when the
 * first try fails, again whenever the seconds left change, and once with done set when the
 * wait ends (taken or given up). holder_command is the holder's command line when it can be
 * read (proc/PID/cmdline inside the root), else NULL. One hook per process (the command line
 * sets it); NULL: silent waits.
 */
typedef struct ks_lock_wait {
    pid_t holder;               /* 0 when the lock file names nobody */
    const char *holder_command; /* "kswap apply --yes", or NULL */
    unsigned remaining_ms;
    bool done;
} ks_lock_wait;
typedef void (*ks_lock_wait_fn)(void *userdata, const ks_lock_wait *w);
void ks_lock_set_wait_hook(ks_lock_wait_fn fn, void *userdata);

/*
 * Takes the lock, retrying for up to timeout_ms (0: one try). -EBUSY when another process
 * holds it past the wait; then *holder_pid (when not NULL) is the pid written in the file, or
 * 0 when it could not be read. Other errors: negative errno of creating or opening the file.
 */
int ks_lock_acquire(const ks_root *root, unsigned timeout_ms, ks_lock **ret, pid_t *holder_pid);
/*
 * A shared lock for readers that must not change anything (apply --dry-run): the file is
 * opened read-only, never created or written; 0 with *ret NULL when the file does not exist
 * (nobody holds the lock then). -EBUSY as ks_lock_acquire() while a writer holds it.
 */
int ks_lock_acquire_shared(const ks_root *root, unsigned timeout_ms, ks_lock **ret,
                           pid_t *holder_pid);
/* Releases and frees; accepts NULL and returns NULL. */
ks_lock *ks_lock_release(ks_lock *l);
static inline void ks_lock_releasep(ks_lock **l)
{
    ks_lock_release(*l);
}
#define _cleanup_lock_ _cleanup_(ks_lock_releasep)

/* The pid written in the lock file, 0 when none (a held lock or a stale pid: caller decides). */
int ks_lock_read_holder(const ks_root *root, pid_t *ret);
/* Parses the file's text: a decimal pid and an optional newline. */
int ks_lock_parse_pid(const char *text, size_t len, pid_t *ret);
