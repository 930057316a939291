/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"

/*
 * What the host looked like before kswap changed anything: the running kernel, the boot, GRUB's
 * environment block and kswap's drop-in as bytes, and the live value of the sysctls acceptance
 * will judge. The state journal keeps it (lib/engine/journal.h).
 */
typedef struct ks_snapshot_sysctl {
    char *name;  /* as the caller named it, e.g. "net.ipv4.tcp_congestion_control" */
    char *value; /* live value then; NULL: not readable */
} ks_snapshot_sysctl;

typedef struct ks_snapshot {
    char *taken_at;
    char *kernel;   /* running release (proc/sys/kernel/osrelease) */
    char *boot_id;  /* proc/sys/kernel/random/boot_id */
    uint64_t btime; /* proc/stat btime, seconds since the epoch */
    bool has_grubenv;
    unsigned char *grubenv; /* the exact bytes (base64 in JSON) */
    size_t grubenv_len;
    char *dropin; /* kswap's GRUB drop-in; NULL: there was none */
    ks_snapshot_sysctl *sysctls;
    size_t n_sysctls;
} ks_snapshot;

/* Frees what s holds and leaves it empty. */
void ks_snapshot_done(ks_snapshot *s);
DEFINE_TRIVIAL_DONE_FUNC(ks_snapshot, ks_snapshot_done);
#define _cleanup_snapshot_ _cleanup_(ks_snapshot_donep)

/*
 * Takes the snapshot through root at time now: running kernel, boot id and btime (required:
 * their errors are returned), grubenv_path and dropin_path (NULL or missing: recorded as absent)
 * and the live value of each sysctl named in sysctls (NULL-terminated, may be NULL; unreadable:
 * NULL value). *ret untouched on failure.
 */
int ks_snapshot_take(const ks_root *root, const char *grubenv_path, const char *dropin_path,
                     char *const *sysctls, time_t now, ks_snapshot *ret);
