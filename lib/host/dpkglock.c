/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/host/dpkglock.h"

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#endif

void ks_dpkg_lock_holder_done(ks_dpkg_lock_holder *h)
{
    if (!h)
        return;
    free(h->name);
    free(h->cmdline);
    *h = (ks_dpkg_lock_holder){0};
}

int ks_lock_fd_holder(int fd, pid_t *ret_pid)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};

    assert(fd >= 0);
    /* OFD: the owner is this open file description, so every other lock conflicts. */
    if (fcntl(fd, F_OFD_GETLK, &fl) < 0) {
        if (errno != EINVAL)
            return -errno;
        fl = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_GETLK, &fl) < 0)
            return -errno;
    }
    if (fl.l_type == F_UNLCK)
        return 0;
    if (ret_pid)
        *ret_pid = fl.l_pid > 0 ? fl.l_pid : 0;
    return 1;
}

/* Reads a small file of this machine's /proc; NULL when it cannot. */
static char *proc_read(pid_t pid, const char *what, size_t *ret_len)
{
    _cleanup_free_ char *path = ks_asprintf("/proc/%d/%s", (int)pid, what);
    _cleanup_close_ int fd = -EBADF;
    char *buf = NULL;
    size_t len = 0;

    if (!path)
        return NULL;
    fd = ks_open_regular(path);
    if (fd < 0 || ks_read_fd(fd, 64 * 1024, &buf, &len) < 0)
        return NULL;
    if (ret_len)
        *ret_len = len;
    return buf;
}

int ks_process_describe(pid_t pid, char **ret_name, char **ret_cmdline)
{
    _cleanup_free_ char *name = NULL, *cmd = NULL;
    size_t len = 0;

    if (pid <= 0)
        return -ESRCH;
    name = proc_read(pid, "comm", NULL);
    if (name)
        name[strcspn(name, "\n")] = '\0';
    cmd = proc_read(pid, "cmdline", &len);
    if (cmd) {
        /* NUL-separated arguments; control characters would garble a terminal. */
        while (len > 0 && cmd[len - 1] == '\0')
            len--;
        cmd[len] = '\0';
        for (size_t i = 0; i < len; i++)
            if (cmd[i] == '\0' || iscntrl((unsigned char)cmd[i]))
                cmd[i] = ' ';
        if (len == 0) {
            free(cmd);
            cmd = NULL;
        }
    }
    if (!name && !cmd)
        return -ESRCH;
    if (ret_name)
        *ret_name = TAKE_PTR(name);
    if (ret_cmdline)
        *ret_cmdline = TAKE_PTR(cmd);
    return 0;
}

/* Whether /proc/PID/fdinfo/FD shows a lock held through that descriptor. */
static bool fdinfo_has_lock(const char *pid, const char *fd)
{
    _cleanup_free_ char *path = ks_asprintf("/proc/%s/fdinfo/%s", pid, fd), *text = NULL;
    _cleanup_close_ int f = -EBADF;
    size_t len = 0;

    if (!path)
        return false;
    f = ks_open_regular(path);
    if (f < 0 || ks_read_fd(f, 64 * 1024, &text, &len) < 0)
        return false;
    return strstr(text, "\nlock:") || ks_startswith(text, "lock:");
}

/* The process whose descriptor of (dev, ino) holds a lock (OFD locks name no pid); 0: none. */
static pid_t find_ofd_holder(dev_t dev, ino_t ino)
{
    DIR *proc = opendir("/proc");
    struct dirent *p;
    pid_t found = 0;

    if (!proc)
        return 0;
    while (!found && (p = readdir(proc))) {
        _cleanup_free_ char *fds = NULL;
        struct dirent *d;
        DIR *dir;

        if (!isdigit((unsigned char)p->d_name[0]))
            continue;
        fds = ks_asprintf("/proc/%s/fd", p->d_name);
        dir = fds ? opendir(fds) : NULL;
        if (!dir)
            continue;
        while ((d = readdir(dir))) {
            struct stat st;
            if (!isdigit((unsigned char)d->d_name[0]) ||
                fstatat(dirfd(dir), d->d_name, &st, 0) < 0 || st.st_dev != dev ||
                st.st_ino != ino || !fdinfo_has_lock(p->d_name, d->d_name))
                continue;
            found = (pid_t)atoi(p->d_name);
            break;
        }
        closedir(dir);
    }
    closedir(proc);
    return found;
}

static int probe_one(const ks_root *root, const char *lock, ks_dpkg_lock_holder *ret)
{
    _cleanup_close_ int fd = ks_root_open_regular(root, lock, O_NOFOLLOW);
    struct stat st;
    pid_t pid = 0;
    int r;

    if (fd == -ENOENT)
        return 0; /* apt creates it when it locks: nobody holds a file that is not there */
    if (fd < 0)
        return fd;
    r = ks_lock_fd_holder(fd, &pid);
    if (r <= 0)
        return r;
    if (pid == 0 && fstat(fd, &st) == 0)
        pid = find_ofd_holder(st.st_dev, st.st_ino);
    *ret = (ks_dpkg_lock_holder){.lock = lock, .pid = pid};
    if (pid > 0)
        (void)ks_process_describe(pid, &ret->name, &ret->cmdline);
    return 1;
}

int ks_dpkg_lock_probe(const ks_root *root, ks_dpkg_lock_holder *ret)
{
    ks_dpkg_lock_holder h = {0};
    int r;

    assert(root);
    assert(ret);
    r = probe_one(root, KS_DPKG_FRONTEND_LOCK_PATH, &h);
    if (r == 0)
        r = probe_one(root, KS_DPKG_LOCK_PATH, &h);
    if (r > 0)
        *ret = h;
    return r;
}

char *ks_apt_lock_error_line(const char *output)
{
    const char *best = NULL, *p;
    size_t n = 0;

    if (!output)
        return NULL;
    for (p = output; *p;) {
        size_t len = strcspn(p, "\r\n");
        const char *hit = memmem(p, len, "Could not get lock", 18);
        if (hit) {
            /* From "E: Could not ..." keep the words, not apt's prefix. */
            best = hit;
            n = len - (size_t)(hit - p);
        }
        p += len;
        p += strspn(p, "\r\n");
    }
    return best ? strndup(best, n) : NULL;
}
