/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * apt's machine-readable progress, written to the fd named by `-o APT::Status-Fd=N`, one line
 * each (apt-pkg/install-progress.cc GetProgressFdString, apt-pkg/acquire.cc
 * pkgAcquireStatus::Pulse):
 *   dlstatus:ITEM:PERCENT:MESSAGE      downloading (ITEM: the file being fetched, 1-based)
 *   pmstatus:PACKAGE:PERCENT:MESSAGE   dpkg at work ("Preparing %s", "Unpacking %s",
 *                                      "Preparing to configure %s", "Configuring %s",
 *                                      "Installed %s", "Running post-installation trigger %s")
 *   pmerror:PACKAGE:PERCENT:MESSAGE    dpkg failed on a package
 *   pmconffile:PACKAGE:PERCENT:MESSAGE a conffile question
 *   media-change:MEDIUM:LABEL:DRIVE    insert a disc
 * PERCENT is a decimal in the C locale ("45.4545"); MESSAGE may hold further colons. The
 * bytes come from another program: every line is checked and a bad one is refused, never
 * guessed at.
 */

typedef enum ks_apt_status_kind {
    KS_APT_STATUS_DL,
    KS_APT_STATUS_PM,
    KS_APT_STATUS_PMERROR,
    KS_APT_STATUS_PMCONFFILE,
    KS_APT_STATUS_MEDIA_CHANGE,
    _KS_APT_STATUS_KIND_MAX,
    _KS_APT_STATUS_KIND_INVALID = -EINVAL,
} ks_apt_status_kind;

/* The phases kswap reports, in the order apt goes through them for an install. */
typedef enum ks_apt_phase {
    KS_APT_PHASE_DOWNLOAD, /* dlstatus */
    KS_APT_PHASE_UNPACK,   /* "Preparing %s", "Unpacking %s", "Installing %s" */
    KS_APT_PHASE_SETUP,    /* "Preparing to configure %s", "Configuring %s", "Installed %s" */
    KS_APT_PHASE_TRIGGERS, /* "Running post-installation trigger %s" (initramfs-tools, ...) */
    KS_APT_PHASE_REMOVE,   /* removal and purge ("Removing %s", "Completely removed %s", ...) */
    _KS_APT_PHASE_MAX,
    KS_APT_PHASE_NONE = -1, /* no phase of its own ("Running dpkg", errors, questions) */
} ks_apt_phase;

typedef struct ks_apt_status {
    ks_apt_status_kind kind;
    char *subject;  /* ITEM, PACKAGE or MEDIUM */
    double percent; /* 0..100; -1 for media-change */
    char *message;
    ks_apt_phase phase;
} ks_apt_status;

void ks_apt_status_done(ks_apt_status *s);
const char *ks_apt_phase_to_string(ks_apt_phase p);
const char *ks_apt_status_kind_to_string(ks_apt_status_kind k);

/*
 * Parses one line (without or with its '\n'). -EBADMSG: not a status line apt writes (an
 * unknown prefix, a field missing, a percent that is not a number from 0 to 100, a NUL or
 * control byte); -ENOMEM.
 */
int ks_apt_status_parse(const char *line, size_t len, ks_apt_status *ret);

/*
 * Follows a stream of status bytes as they come (lines may arrive cut anywhere) and calls fn
 * once for every line that parsed; lines longer than 4 KiB are dropped whole. The phase
 * changes are the caller's to see (ret->phase against the last one).
 */
typedef void (*ks_apt_status_fn)(void *userdata, const ks_apt_status *s);
typedef struct ks_apt_status_stream {
    char buf[4096];
    size_t len;
    bool overlong; /* dropping the rest of a line that did not fit */
    size_t n_lines, n_bad;
} ks_apt_status_stream;
int ks_apt_status_feed(ks_apt_status_stream *st, const char *data, size_t n, ks_apt_status_fn fn,
                       void *userdata);
