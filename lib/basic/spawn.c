/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/escape.h"
#include "lib/basic/fileio.h"
#include "lib/basic/spawn.h"
#include "lib/basic/util.h"
#include "lib/basic/time-util.h"

extern char **environ;

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_MAX_OUTPUT (64 * 1024)

int ks_find_program(const char *name, char **ret_path)
{
    _cleanup_strv_free_ char **dirs = NULL;
    const char *path;
    int r;

    if (!name || !*name)
        return -EINVAL;
    if (strchr(name, '/')) {
        if (access(name, X_OK) < 0)
            return -errno;
        *ret_path = strdup(name);
        return *ret_path ? 0 : -ENOMEM;
    }
    path = getenv("PATH");
    r = ks_strv_split(path && *path ? path : DEFAULT_PATH, ":", &dirs);
    if (r < 0)
        return r;
    for (char **d = dirs; d && *d; d++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", *d, name);
        struct stat st;
        if (!p)
            return -ENOMEM;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
            *ret_path = TAKE_PTR(p);
            return 0;
        }
    }
    return -ENOENT;
}

/* environ with the extra entries replacing those of the same name. */
static char **build_env(char *const *extra)
{
    size_t n = 0, m = ks_strv_length(extra), k = 0;
    char **env;

    while (environ && environ[n])
        n++;
    env = calloc(n + m + 1, sizeof(char *));
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < m; j++) {
            size_t klen = strcspn(extra[j], "=");
            if (strncmp(environ[i], extra[j], klen) == 0 && environ[i][klen] == '=')
                replaced = true;
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++)
        env[k++] = extra[j];
    env[k] = NULL;
    return env;
}

/* Appends to the capture buffer, keeping only the last max bytes. */
static int keep_output(ks_spawn_result *r, size_t *cap, size_t max, const char *buf, size_t n)
{
    if (n >= max) {
        buf += n - max;
        n = max;
        r->output_len = 0;
        r->output_truncated = true;
    } else if (r->output_len + n > max) {
        size_t drop = r->output_len + n - max;
        memmove(r->output, r->output + drop, r->output_len - drop);
        r->output_len -= drop;
        r->output_truncated = true;
    }
    if (!GREEDY_REALLOC(r->output, *cap, r->output_len + n + 1))
        return -ENOMEM;
    memcpy(r->output + r->output_len, buf, n);
    r->output_len += n;
    if (r->output_truncated) {
        /* What is kept starts with a whole character, not the tail of one cut in two. */
        size_t skip = ks_utf8_skip_partial(r->output, r->output_len);
        memmove(r->output, r->output + skip, r->output_len - skip);
        r->output_len -= skip;
    }
    r->output[r->output_len] = '\0';
    return 0;
}

static void child_exec(const char *exe, char *const argv[], char **env, const ks_spawn_opts *o,
                       int out_fd, int status_wfd)
{
    int nul = o->stdin_fd >= 0 ? o->stdin_fd : open("/dev/null", O_RDONLY);

    /* Own process group: a timeout kills the program and everything it started. */
    setpgid(0, 0);
    if (nul < 0 || dup2(nul, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(out_fd, STDERR_FILENO) < 0)
        _exit(127);
    if (status_wfd >= 0) {
        /* dup2() leaves the new fd open across exec; the same number needs its flag cleared. */
        if (status_wfd == o->status_fd) {
            int fl = fcntl(status_wfd, F_GETFD);
            if (fl < 0 || fcntl(status_wfd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
                _exit(127);
        } else if (dup2(status_wfd, o->status_fd) < 0)
            _exit(127);
    }
    signal(SIGPIPE, SIG_DFL);
    if (o->cwd && chdir(o->cwd) < 0)
        _exit(127);
    if (o->exec_fd >= 0) {
        /* A script's interpreter opens /dev/fd/N: that fd must survive the exec. */
        int fl = fcntl(o->exec_fd, F_GETFD);
        if (fl < 0 || fcntl(o->exec_fd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
            _exit(127);
        syscall(SYS_execveat, o->exec_fd, "", argv, env, AT_EMPTY_PATH);
        _exit(127);
    }
    execve(exe, argv, env);
    _exit(127);
}

/* Where a "#!" interpreter may live: the running machine's own program directories. */
static const char *const interpreter_dirs[] = {
    "/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/",
};

int ks_spawn_check_interpreter(const char *head, size_t len, char **ret_interpreter,
                               char **ret_error)
{
    _cleanup_free_ char *interp = NULL;
    const char *dir = NULL;
    size_t i = 2, start, n;
    struct stat st;

    if (len < 2 || head[0] != '#' || head[1] != '!') {
        if (ret_interpreter)
            *ret_interpreter = NULL;
        return 0; /* no script: the kernel runs it (or refuses it) as it is */
    }
    /* As the kernel reads it (fs/binfmt_script.c): blanks, the name up to a blank or the end
     * of the line, within the first 256 bytes. */
    if (len > KS_INTERPRETER_HEAD_MAX)
        len = KS_INTERPRETER_HEAD_MAX;
    while (i < len && (head[i] == ' ' || head[i] == '\t'))
        i++;
    start = i;
    while (i < len && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && head[i] != '\0')
        i++;
    n = i - start;
    if (i == len && len == KS_INTERPRETER_HEAD_MAX) {
        ks_set_first_errorf(ret_error,
                            "its #! line has no end within %d bytes (the kernel reads no more): "
                            "shorten the interpreter's path",
                            KS_INTERPRETER_HEAD_MAX);
        return -ENOEXEC;
    }
    if (n == 0) {
        ks_set_first_errorf(ret_error, "its #! line names no interpreter: write for example "
                                       "'#!/bin/sh' as its first line");
        return -ENOEXEC;
    }
    interp = strndup(head + start, n);
    if (!interp)
        return -ENOMEM;
    for (size_t r = 0; r < ARRAY_SIZE(interpreter_dirs) && !dir; r++) {
        const char *rest = ks_startswith(interp, interpreter_dirs[r]);
        if (rest && *rest && !strchr(rest, '/') && !streq(rest, "..") && !streq(rest, "."))
            dir = interpreter_dirs[r];
    }
    if (!dir) {
        ks_set_first_errorf(ret_error,
                            "its #! interpreter '%s' is not a program of /bin, /sbin, /usr/bin, "
                            "/usr/sbin, /usr/local/bin or /usr/local/sbin (the running "
                            "machine's; kswap runs no other): install the interpreter there "
                            "and name it so",
                            interp);
        return -EPERM;
    }
    /* The kernel looks the interpreter up on the running machine, following links. */
    if (stat(interp, &st) < 0) {
        int r = -errno;
        ks_set_first_errorf(ret_error,
                            "its #! interpreter '%s' %s on this machine: install it or change "
                            "the script's first line",
                            interp, r == -ENOENT ? "does not exist" : strerror(-r));
        return r;
    }
    if (!S_ISREG(st.st_mode) || !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
        ks_set_first_errorf(ret_error,
                            "its #! interpreter '%s' is not a regular executable file (%s): "
                            "name the program itself",
                            interp,
                            S_ISDIR(st.st_mode)    ? "a directory"
                            : S_ISREG(st.st_mode)  ? "no execute bit"
                            : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                   : "a device or socket");
        return -EACCES;
    }
    if (ret_interpreter)
        *ret_interpreter = TAKE_PTR(interp);
    return 0;
}

int ks_spawn_open_in_root_full(const ks_root *root, const char *path, char **ret_error)
{
    char head[KS_INTERPRETER_HEAD_MAX];
    _cleanup_close_ int fd = ks_root_open_regular(root, path, 0);
    size_t n = 0;
    struct stat st;
    int r;

    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
        return -EACCES;
    /* The kernel resolves a script's interpreter on the running machine, not in the root:
     * only the running machine's program directories are allowed (kswap.conf(5)). */
    r = ks_pread_all(fd, head, sizeof(head), 0, &n);
    if (r < 0)
        return r;
    r = ks_spawn_check_interpreter(head, n, NULL, ret_error);
    if (r < 0)
        return r;
    return TAKE_FD(fd);
}

int ks_spawn_open_in_root(const ks_root *root, const char *path)
{
    return ks_spawn_open_in_root_full(root, path, NULL);
}

int ks_spawn(char *const argv[], const ks_spawn_opts *opts, ks_spawn_result *ret)
{
    const ks_spawn_opts *o = opts ? opts : KS_SPAWN_OPTS();
    size_t max = o->max_output ? o->max_output : DEFAULT_MAX_OUTPUT, cap = 0;
    _cleanup_free_ char *exe = NULL;
    _cleanup_free_ char **env = NULL;
    _cleanup_close_ int rfd = -EBADF, wfd = -EBADF, pidfd = -EBADF, srfd = -EBADF, swfd = -EBADF;
    ks_spawn_result res = {0};
    long long deadline = o->timeout_ms ? ks_monotonic_ms() + o->timeout_ms : 0;
    bool exited = false, open_pipe, open_status;
    int pipefd[2], status = 0, r;
    pid_t pid;

    if (!argv || !argv[0])
        return -EINVAL;
    /* The status fd must not take the place of stdio or of the file to run. */
    if (o->status_fd >= 0 && (o->status_fd <= STDERR_FILENO || o->status_fd == o->exec_fd))
        return -EINVAL;
    if (o->exec_fd < 0) {
        r = ks_find_program(argv[0], &exe);
        if (r < 0)
            return r;
    }
    env = build_env(o->env);
    if (!env)
        return -ENOMEM;
    res.output = calloc(1, 1);
    if (!res.output)
        return -ENOMEM;
    cap = 1;
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        free(res.output);
        return -errno;
    }
    rfd = pipefd[0];
    wfd = pipefd[1];

    if (o->status_fd >= 0) {
        int sp[2];
        if (pipe2(sp, O_CLOEXEC) < 0) {
            free(res.output);
            return -errno;
        }
        srfd = sp[0];
        swfd = sp[1];
    }

    pid = fork();
    if (pid < 0) {
        free(res.output);
        return -errno;
    }
    if (pid == 0)
        child_exec(exe, argv, env, o, wfd, swfd);
    setpgid(pid, pid); /* also in the parent: no race with an early kill */
    if (wfd >= 0) {
        close(wfd);
        wfd = -EBADF;
    }
    if (swfd >= 0) {
        close(swfd);
        swfd = -EBADF;
    }
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    open_pipe = rfd >= 0;
    open_status = srfd >= 0;

    while (!exited || open_pipe || open_status) {
        struct pollfd p[3];
        int n = 0, wait_ms = -1, ps = -1;

        if (open_pipe)
            p[n++] = (struct pollfd){.fd = rfd, .events = POLLIN};
        if (open_status) {
            ps = n;
            p[n++] = (struct pollfd){.fd = srfd, .events = POLLIN};
        }
        if (!exited && pidfd >= 0)
            p[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
        if (deadline) {
            long long left = deadline - ks_monotonic_ms();
            wait_ms = left > 0 ? (int)left : 0;
        }
        if (!exited && pidfd < 0 && (wait_ms < 0 || wait_ms > 20))
            wait_ms = 20; /* no pidfd (old kernel): poll waitpid */
        if (exited && (open_pipe || open_status) && (wait_ms < 0 || wait_ms > 200))
            wait_ms = 200; /* a grandchild may hold the pipe: drain briefly, then stop */

        r = poll(p, (nfds_t)n, wait_ms);
        if (r < 0 && errno != EINTR) {
            r = -errno;
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            free(res.output);
            return r;
        }
        if (open_pipe && r > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[16384];
            ssize_t k = read(rfd, buf, sizeof(buf));
            if (k > 0) {
                if (keep_output(&res, &cap, max, buf, (size_t)k) < 0) {
                    kill(-pid, SIGKILL);
                    waitpid(pid, NULL, 0);
                    free(res.output);
                    return -ENOMEM;
                }
            } else if (k == 0 || errno != EINTR) {
                open_pipe = false;
            }
        }
        if (open_status && r > 0 && (p[ps].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[4096];
            ssize_t k = read(srfd, buf, sizeof(buf));
            if (k > 0 && o->on_status)
                o->on_status(o->status_userdata, buf, (size_t)k);
            else if (k == 0 || (k < 0 && errno != EINTR))
                open_status = false;
        }
        if (!exited && waitpid(pid, &status, WNOHANG) == pid)
            exited = true;
        if (exited && (open_pipe || open_status) && r == 0)
            break;
        if (deadline && ks_monotonic_ms() >= deadline && !exited) {
            res.timed_out = true;
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            exited = true;
            break;
        }
    }
    if (!res.timed_out)
        kill(-pid, SIGKILL); /* leftovers of the group that outlived it */

    if (WIFEXITED(status)) {
        res.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res.term_signal = WTERMSIG(status);
        res.exit_code = 128 + res.term_signal;
    }
    *ret = res;
    return 0;
}

void ks_spawn_result_done(ks_spawn_result *r)
{
    if (!r)
        return;
    free(r->output);
    *r = (ks_spawn_result){0};
}

bool ks_spawn_succeeded(const ks_spawn_result *r)
{
    return !r->timed_out && r->term_signal == 0 && r->exit_code == 0;
}

char *ks_spawn_last_line(const ks_spawn_result *r)
{
    const char *s = r->output ? r->output : "";
    size_t end = r->output_len, start;

    while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == ' ' || s[end - 1] == '\r'))
        end--;
    start = end;
    while (start > 0 && s[start - 1] != '\n')
        start--;
    return strndup(s + start, end - start);
}
