/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/root.h"

/*
 * The one way kswap runs an external program: an argv array (never a shell), looked up on
 * PATH, with a timeout, its stdout and stderr captured together (bounded) for error messages,
 * and optional extra environment (KSWAP_ROOT=DIR).
 */
typedef struct ks_spawn_opts {
    unsigned timeout_ms; /* 0: no timeout */
    char *const *env;    /* extra "KEY=VALUE" entries, override the inherited ones */
    size_t max_output;   /* bytes of output kept (the last ones); 0: 64 KiB */
    const char *cwd;     /* working directory of the child, NULL: unchanged */
    int stdin_fd;        /* >= 0: the child's stdin (e.g. a memfd with data); else /dev/null */
    int exec_fd;         /* >= 0: run this open file (execveat AT_EMPTY_PATH) instead of looking
                          * argv[0] up: a program found inside a root runs as opened there,
                          * whatever its path means on the running machine */
    /* >= 0 (and > 2): the child gets the write end of a pipe as this fd (apt-get's -o
     * APT::Status-Fd=N, which the caller puts into argv); what arrives there goes to on_status as
     * it comes, and is not part of the output. */
    int status_fd;
    void (*on_status)(void *userdata, const char *data, size_t n);
    void *status_userdata;
} ks_spawn_opts;

/*
 * Options with every descriptor unset (-EBADF, since 0 is a descriptor) and the designated
 * initialisers given, which override those defaults: KS_SPAWN_OPTS(.timeout_ms = 5000). A
 * compound literal of the caller's block (meson.build allows the override for this).
 */
#define KS_SPAWN_OPTS(...)                                                                         \
    (&(const ks_spawn_opts){                                                                       \
        .stdin_fd = -EBADF, .exec_fd = -EBADF, .status_fd = -EBADF, __VA_ARGS__})

typedef struct ks_spawn_result {
    int exit_code;   /* exit status, or 128 + signal number */
    int term_signal; /* signal that ended it, 0 when it exited */
    bool timed_out;  /* killed (with its process group) after timeout_ms */
    char *output;    /* stdout and stderr interleaved, NUL-terminated, never NULL */
    size_t output_len;
    bool output_truncated; /* the start was dropped to stay within max_output */
} ks_spawn_result;

/*
 * Runs argv[0] (looked up on PATH unless it contains '/') and waits for it. Returns 0 when the
 * program ran, whatever its exit status (see ret->exit_code), or negative errno when it could
 * not be started (-ENOENT: not found on PATH).
 */
int ks_spawn(char *const argv[], const ks_spawn_opts *opts, ks_spawn_result *ret);
void ks_spawn_result_done(ks_spawn_result *r);
/* True when the program ran, was not killed and exited 0. */
bool ks_spawn_succeeded(const ks_spawn_result *r);
/*
 * Opens an executable inside the root to run it with exec_fd: a regular file (opened without
 * blocking) with an execute bit. -EACCES when no execute bit is set.
 */
int ks_spawn_open_in_root(const ks_root *root, const char *path);
/*
 * The same, and a script's "#!" interpreter must be a program of the running machine's /bin,
 * /sbin, /usr/bin, /usr/sbin, /usr/local/bin or /usr/local/sbin that is a regular executable
 * (the kernel resolves it there, not inside the root): -EPERM outside that set, -ENOENT
 * absent, -EACCES not a regular executable, -ENOEXEC no name; *ret_error (optional) says
 * which and what to do.
 */
int ks_spawn_open_in_root_full(const ks_root *root, const char *path, char **ret_error);
/* The check on the first bytes of a file (up to KS_INTERPRETER_HEAD_MAX are looked at); 0 and
 * *ret_interpreter NULL when it is no script. */
#define KS_INTERPRETER_HEAD_MAX 256
int ks_spawn_check_interpreter(const char *head, size_t len, char **ret_interpreter,
                               char **ret_error);
/* Finds an executable on PATH (or "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin").
 */
int ks_find_program(const char *name, char **ret_path);
/* The last non-empty line of the output, for one-line error messages; "" when none. */
char *ks_spawn_last_line(const ks_spawn_result *r);
