/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>
#include <time.h>

#include "lib/basic/fileio.h"
#include "lib/basic/time-util.h"
#include "lib/engine/lock.h"

struct ks_lock {
    int fd;
    bool shared; /* a reader's: the file is not ours to truncate */
};

/* Short enough that a 10 s wait ends close to 10 s, long enough not to spin. */
#define RETRY_MS 50u

int ks_lock_parse_pid(const char *text, size_t len, pid_t *ret)
{
    char buf[24];
    int pid;

    if (len > 0 && text[len - 1] == '\n')
        len--;
    if (len == 0 || len >= sizeof(buf))
        return -EBADMSG;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (ks_safe_atoi(buf, &pid) < 0 || pid <= 0)
        return -EBADMSG;
    *ret = (pid_t)pid;
    return 0;
}

int ks_lock_read_holder(const ks_root *root, pid_t *ret)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    pid_t pid = 0;
    int r;

    r = ks_root_read_file(root, KS_LOCK_PATH, 4096, &text, &len);
    if (r < 0)
        return r;
    /* Empty or half-written (the holder writes after locking): unknown, not an error. */
    if (ks_lock_parse_pid(text, len, &pid) < 0)
        pid = 0;
    *ret = pid;
    return 0;
}

static int write_pid(int fd)
{
    char buf[24];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

    if (ftruncate(fd, 0) < 0)
        return -errno;
    if (pwrite(fd, buf, (size_t)n, 0) != n)
        return errno ? -errno : -EIO;
    return 0;
}

static ks_lock_wait_fn wait_hook;
static void *wait_hook_userdata;

void ks_lock_set_wait_hook(ks_lock_wait_fn fn, void *userdata)
{
    wait_hook = fn;
    wait_hook_userdata = userdata;
}

/* The holder's command line, its arguments joined by spaces; NULL when unknown. */
static char *holder_command(const ks_root *root, pid_t pid)
{
    _cleanup_free_ char *path = NULL, *text = NULL;
    size_t len = 0;

    if (pid <= 0 || !(path = ks_asprintf("proc/%d/cmdline", (int)pid)) ||
        ks_root_read_file(root, path, 4096, &text, &len) < 0 || len == 0)
        return NULL;
    for (size_t i = 0; i + 1 < len; i++)
        if (text[i] == '\0' || text[i] == '\n')
            text[i] = ' ';
    return TAKE_PTR(text);
}

/* Tells the hook about the wait: once per second left, and once when it ends. */
static void tell_waiting(const ks_root *root, unsigned remaining_ms, bool done, unsigned *last_s)
{
    _cleanup_free_ char *cmd = NULL;
    pid_t pid = 0;
    unsigned s = (remaining_ms + 999) / 1000;

    if (!wait_hook || (!done && s == *last_s))
        return;
    *last_s = s;
    if (!done && ks_lock_read_holder(root, &pid) >= 0)
        cmd = holder_command(root, pid);
    wait_hook(wait_hook_userdata, &(ks_lock_wait){.holder = pid,
                                                  .holder_command = cmd,
                                                  .remaining_ms = remaining_ms,
                                                  .done = done});
}

static int take(const ks_root *root, int fd, int how, unsigned timeout_ms, pid_t *holder_pid)
{
    uint64_t deadline = (uint64_t)ks_monotonic_ms() + timeout_ms;
    unsigned last_s = UINT32_MAX;

    for (;;) {
        uint64_t t;

        if (flock(fd, how | LOCK_NB) == 0) {
            if (last_s != UINT32_MAX)
                tell_waiting(root, 0, true, &last_s);
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return -errno;
        t = (uint64_t)ks_monotonic_ms();
        if (t >= deadline) {
            if (last_s != UINT32_MAX)
                tell_waiting(root, 0, true, &last_s);
            if (holder_pid) {
                pid_t pid = 0;
                if (ks_lock_read_holder(root, &pid) < 0)
                    pid = 0;
                *holder_pid = pid;
            }
            return -EBUSY;
        }
        if (timeout_ms > 0)
            tell_waiting(root, (unsigned)(deadline - t), false, &last_s);
        t = deadline - t < RETRY_MS ? deadline - t : RETRY_MS;
        nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = (long)t * 1000000L}, NULL);
    }
}

int ks_lock_acquire(const ks_root *root, unsigned timeout_ms, ks_lock **ret, pid_t *holder_pid)
{
    _cleanup_close_ int fd = -EBADF;
    ks_lock *l;
    int r;

    r = ks_mkdir_p(root, "var/lib/kswap", 0755);
    if (r < 0)
        return r;
    fd =
        ks_root_open_file(root, KS_LOCK_PATH, O_RDWR | O_CREAT | O_NOFOLLOW, 0644, KS_FILE_REGULAR);
    if (fd < 0)
        return fd;
    r = take(root, fd, LOCK_EX, timeout_ms, holder_pid);
    if (r < 0)
        return r;
    r = write_pid(fd);
    if (r < 0)
        return r; /* closing fd drops the lock */
    l = malloc(sizeof(*l));
    if (!l)
        return -ENOMEM;
    *l = (ks_lock){.fd = TAKE_FD(fd)};
    *ret = l;
    return 0;
}

int ks_lock_acquire_shared(const ks_root *root, unsigned timeout_ms, ks_lock **ret,
                           pid_t *holder_pid)
{
    _cleanup_close_ int fd = -EBADF;
    ks_lock *l;
    int r;

    *ret = NULL;
    fd = ks_root_open_file(root, KS_LOCK_PATH, O_RDONLY | O_NOFOLLOW, 0, KS_FILE_REGULAR);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return fd;
    r = take(root, fd, LOCK_SH, timeout_ms, holder_pid);
    if (r < 0)
        return r;
    l = malloc(sizeof(*l));
    if (!l)
        return -ENOMEM;
    *l = (ks_lock){.fd = TAKE_FD(fd), .shared = true};
    *ret = l;
    return 0;
}

ks_lock *ks_lock_release(ks_lock *l)
{
    if (!l)
        return NULL;
    /* No stale pid for the next waiter to blame; the truncate happens while still locked. */
    if (!l->shared && ftruncate(l->fd, 0) < 0) {
        /* nothing to do: the lock goes with the fd anyway */
    }
    close(l->fd);
    free(l);
    return NULL;
}
