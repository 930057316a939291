/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "lib/basic/root.h"

/*
 * The locks of dpkg's database as apt and dpkg take them: an fcntl write lock over the whole
 * file (F_SETLK, l_whence SEEK_SET, l_start 0, l_len 0), apt first on lock-frontend, then
 * both apt and dpkg on lock (apt-pkg/contrib/fileutl.cc GetLock, apt-pkg/deb/debsystem.cc;
 * dpkg lib/dpkg/file.c file_lock). kswap never takes them (apt-get does): it only asks the
 * kernel who holds them, with F_OFD_GETLK on a descriptor of its own (F_GETLK on kernels
 * before 3.15), so that a lock of any process, kswap's own included, is reported.
 *
 * The holder is a process of this machine (the kernel's lock table), also under --root: its
 * name and command line come from this machine's /proc. A classic (POSIX) lock names its pid;
 * an OFD lock (F_OFD_SETLK) does not, and the holder is looked up in /proc/PID/fdinfo, where
 * the descriptor that holds it shows a "lock:" line.
 */
#define KS_DPKG_FRONTEND_LOCK_PATH "var/lib/dpkg/lock-frontend"
#define KS_DPKG_LOCK_PATH "var/lib/dpkg/lock"

typedef struct ks_dpkg_lock_holder {
    const char *lock; /* which file, relative to the root: one of the paths above */
    pid_t pid;        /* 0: not found (an OFD lock of a process /proc does not show us) */
    char *name;       /* /proc/PID/comm ("unattended-upgr"); NULL when unknown */
    char *cmdline;    /* /proc/PID/cmdline, arguments joined by spaces; NULL when unknown */
} ks_dpkg_lock_holder;

void ks_dpkg_lock_holder_done(ks_dpkg_lock_holder *h);

/*
 * Who holds a write-conflicting lock on the open file fd: 0 nobody, 1 someone (*ret_pid its
 * pid, 0 when the kernel does not say: an OFD lock), -errno.
 */
int ks_lock_fd_holder(int fd, pid_t *ret_pid);

/*
 * Probes lock-frontend, then lock, inside the root. 0: both free (a lock file that does not
 * exist is free); 1: one is held, *ret filled (its lock, the holder as far as /proc tells);
 * -errno when a lock file cannot be opened.
 */
int ks_dpkg_lock_probe(const ks_root *root, ks_dpkg_lock_holder *ret);

/* The holder's process name and command line from this machine's /proc; missing ones stay
 * NULL (the process may have ended). */
int ks_process_describe(pid_t pid, char **ret_name, char **ret_cmdline);

/*
 * apt's own words when it could not take a lock, from its output: the last line holding
 * "Could not get lock" (with "It is held by process N (NAME)" when apt knew), without the
 * "E: " prefix; NULL when there is none.
 */
char *ks_apt_lock_error_line(const char *output);
