/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A child process that holds a real fcntl lock on a file, for the dpkg lock tests. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_OFD_SETLK
#define F_OFD_SETLK 37
#endif

typedef enum lock_kind {
    LOCK_POSIX_WRITE, /* as apt and dpkg take it (F_SETLK) */
    LOCK_POSIX_READ,
    LOCK_OFD_WRITE, /* F_OFD_SETLK: the kernel names no pid */
} lock_kind;

typedef struct lock_holder {
    pid_t pid;
    int release_fd; /* write end: closing it ends the child */
} lock_holder;

/*
 * Forks a child named comm that locks path and holds the lock until release_fd is closed or,
 * with hold_ms > 0, until hold_ms have passed.
 */
static inline lock_holder lock_holder_start_for(const char *path, lock_kind kind, const char *comm,
                                                int hold_ms)
{
    int ready[2], release[2];
    lock_holder h = {0};
    char c;

    if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(release, O_CLOEXEC) < 0)
        abort();
    h.pid = fork();
    if (h.pid < 0)
        abort();
    if (h.pid == 0) {
        struct flock fl = {.l_type = kind == LOCK_POSIX_READ ? F_RDLCK : F_WRLCK,
                           .l_whence = SEEK_SET};
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
        close(ready[0]);
        close(release[1]);
        (void)prctl(PR_SET_NAME, comm, 0, 0, 0);
        if (fd < 0 || fcntl(fd, kind == LOCK_OFD_WRITE ? F_OFD_SETLK : F_SETLK, &fl) < 0)
            _exit(1);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        /* until the parent closes its end, or the time is up */
        (void)poll(&(struct pollfd){.fd = release[0], .events = POLLIN}, 1,
                   hold_ms > 0 ? hold_ms : -1);
        _exit(0);
    }
    close(ready[1]);
    close(release[0]);
    if (read(ready[0], &c, 1) != 1) {
        fprintf(stderr, "the lock holder could not lock '%s'\n", path);
        exit(1);
    }
    close(ready[0]);
    h.release_fd = release[1];
    return h;
}

static inline lock_holder lock_holder_start(const char *path, lock_kind kind, const char *comm)
{
    return lock_holder_start_for(path, kind, comm, 0);
}

static inline void lock_holder_stop(lock_holder *h)
{
    int status;

    if (h->pid <= 0)
        return;
    close(h->release_fd);
    (void)waitpid(h->pid, &status, 0);
    h->pid = 0;
}
