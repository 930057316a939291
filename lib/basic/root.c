/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"

struct ks_root {
    int fd;
    char *path;
    bool host;
    bool openat2; /* the kernel (and any seccomp filter) lets openat2() through */
};

/*
 * openat2() with RESOLVE_IN_ROOT or RESOLVE_BENEATH fails with EAGAIN when a rename or a mount
 * anywhere on the system raced with a ".." of the lookup (openat2(2): "the caller may choose to
 * retry"). On a busy machine that happens: plan once lost a partition's "/.." step of its sysfs
 * walk while other programs renamed files. Retried a bounded number of times.
 */
static int openat2_retry(int dirfd, const char *path, const struct open_how *how)
{
    for (unsigned attempt = 0;; attempt++) {
        int fd = (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
        if (fd >= 0)
            return fd;
        if (errno != EAGAIN || attempt >= 1000)
            return -errno;
    }
}

/*
 * Probed once per root with a lookup that cannot fail for other reasons, so that a later EPERM
 * or EACCES from a real file never switches RESOLVE_IN_ROOT off.
 */
static bool probe_openat2(int dirfd)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
    int fd = (int)syscall(SYS_openat2, dirfd, ".", &how, sizeof(how));
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

int ks_root_open(const char *path, ks_root **ret)
{
    _cleanup_close_ int fd = -EBADF;
    struct stat st, host;
    ks_root *r;

    if (!path || !*path)
        path = "/";
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0)
        return -errno;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->path = strdup(path);
    if (!r->path) {
        free(r);
        return -ENOMEM;
    }
    r->host = stat("/", &host) == 0 && host.st_dev == st.st_dev && host.st_ino == st.st_ino;
    r->fd = TAKE_FD(fd);
    r->openat2 = probe_openat2(r->fd);
    *ret = r;
    return 0;
}

ks_root *ks_root_free(ks_root *r)
{
    if (!r)
        return NULL;
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r);
    return NULL;
}

const char *ks_root_path(const ks_root *r)
{
    return r->path;
}

bool ks_root_is_host(const ks_root *r)
{
    return r->host;
}

int ks_root_fd(const ks_root *r)
{
    return r->fd;
}

static const char *relative(const char *path)
{
    while (*path == '/')
        path++;
    return *path ? path : ".";
}

static int open_in_root(const ks_root *r, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (unsigned long long)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    int fd;

    path = relative(path);
    if (r->openat2) {
        return openat2_retry(r->fd, path, &how);
    }
    /* Kernels before 5.6: plain openat; paths stay relative, but absolute links escape. */
    fd = openat(r->fd, path, flags | O_CLOEXEC, mode);
    return fd < 0 ? -errno : fd;
}

int ks_root_open_at(const ks_root *r, const char *path, int flags, mode_t mode)
{
    /* Lookups that open nothing but a directory or a file of its own making; every other open
     * goes through ks_root_open_file(), which judges the type first. */
    bool lookup =
        (flags & O_PATH) || (flags & O_DIRECTORY) || ((flags & O_CREAT) && (flags & O_EXCL));
    if (!lookup)
        return -EINVAL;
    return open_in_root(r, path, flags, mode);
}

int ks_root_open_file(const ks_root *r, const char *path, int flags, mode_t mode, unsigned types)
{
    int nofollow = flags & O_NOFOLLOW;

    for (unsigned attempt = 0; attempt < 8; attempt++) {
        _cleanup_close_ int pfd = open_in_root(r, path, O_PATH | nofollow, 0);
        struct stat st;
        int fd;

        if (pfd == -ENOENT && (flags & O_CREAT)) {
            /* A new file, made here: nothing else can be opened by an exclusive create. */
            fd = open_in_root(r, path, (flags & ~O_TRUNC) | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
            if (fd == -EEXIST)
                continue; /* made by another process meanwhile: judge it as found */
            return fd;
        }
        if (pfd < 0)
            return pfd;
        if ((flags & O_CREAT) && (flags & O_EXCL))
            return -EEXIST;
        fd = ks_fd_reopen(pfd, flags, types);
        if (fd != -EXDEV)
            return fd;
        /* Without /proc: the path once more, non-blocking, and it must be the file judged. */
        if (fstat(pfd, &st) < 0)
            return -errno;
        fd = open_in_root(r, path, (flags & ~(O_CREAT | O_EXCL)) | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
            return fd;
        if (!ks_fd_same_inode(fd, &st)) {
            close(fd);
            continue;
        }
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
            close(fd);
            return -errno;
        }
        return fd;
    }
    return -EAGAIN;
}

int ks_root_open_regular(const ks_root *root, const char *path, int extra_flags)
{
    return ks_root_open_file(root, path, O_RDONLY | extra_flags, 0, KS_FILE_REGULAR);
}

int ks_root_read_file(const ks_root *r, const char *path, size_t max, char **ret_buf,
                      size_t *ret_len)
{
    _cleanup_close_ int fd = ks_root_open_regular(r, path, 0);
    if (fd < 0)
        return fd;
    return ks_read_fd(fd, max, ret_buf, ret_len);
}

int ks_root_read_line(const ks_root *root, const char *path, char **ret)
{
    char *buf;
    size_t len;
    int r;

    r = ks_root_read_file(root, path, 64 * 1024, &buf, &len);
    if (r < 0)
        return r;
    buf[strcspn(buf, "\n")] = '\0';
    *ret = buf;
    return 0;
}

int ks_root_opendir(const ks_root *r, const char *path, DIR **ret)
{
    int fd = ks_root_open_at(r, path, O_RDONLY | O_DIRECTORY, 0);
    DIR *d;

    if (fd < 0)
        return fd;
    d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        return e;
    }
    *ret = d;
    return 0;
}

int ks_root_list_dir(const ks_root *root, const char *path, char ***ret_names)
{
    _cleanup_closedir_ DIR *d = NULL;
    _cleanup_strv_free_ char **names = NULL;
    struct dirent *de;
    int r;

    r = ks_root_opendir(root, path, &d);
    if (r < 0)
        return r;
    names = calloc(1, sizeof(char *));
    if (!names)
        return -ENOMEM;
    errno = 0;
    while ((de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        r = ks_strv_extend(&names, de->d_name);
        if (r < 0)
            return r;
    }
    if (errno)
        return -errno;
    ks_strv_sort(names);
    *ret_names = TAKE_PTR(names);
    return 0;
}

static int fd_path(int fd, char **ret)
{
    char p[64], buf[PATH_MAX];
    ssize_t n;

    snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
    n = readlink(p, buf, sizeof(buf) - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    if (buf[0] != '/')
        return -ENOENT; /* "(deleted)" and the like */
    *ret = strdup(buf);
    return *ret ? 0 : -ENOMEM;
}

static int open_beneath_fd(const ks_root *r, const char *path)
{
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    return openat2_retry(r->fd, relative(path), &how);
}

static int open_beneath(const ks_root *r, const char *path)
{
    int fd = open_beneath_fd(r, path);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int ks_root_check_beneath(const ks_root *r, int dirfd, const char *path, char **ret_link)
{
    int fd = ks_root_open_beneath(r, dirfd, path, ret_link);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int ks_root_open_beneath(const ks_root *root, int dirfd, const char *path, char **ret_link)
{
    _cleanup_free_ char *root_path = NULL, *dir = NULL, *full = NULL;
    const char *rel;
    size_t n;
    int r;

    if (root->host || !root->openat2) {
        r = openat(dirfd, path, O_PATH | O_CLOEXEC);
        return r < 0 ? -errno : r;
    }
    r = fd_path(root->fd, &root_path);
    if (r >= 0)
        r = fd_path(dirfd, &dir);
    if (r < 0)
        return r;
    n = streq(root_path, "/") ? 0 : strlen(root_path);
    if (strncmp(dir, root_path, n) != 0 || (dir[n] != '/' && dir[n] != '\0'))
        return -EXDEV; /* the directory itself is not inside the root */
    rel = dir + n + strspn(dir + n, "/");
    full = *rel ? ks_asprintf("%s/%s", rel, path) : strdup(path);
    if (!full)
        return -ENOMEM;
    r = open_beneath_fd(root, full);
    if (r != -EXDEV)
        return r;
    /* Name the first component that leads out. */
    for (char *s = full + strlen(rel);; s++) {
        char save = *s;
        if (save != '/' && save != '\0')
            continue;
        *s = '\0';
        r = open_beneath(root, full);
        if (r == -EXDEV) {
            if (ret_link)
                *ret_link = strdup(full);
            return -EXDEV;
        }
        *s = save;
        if (save == '\0')
            break;
    }
    if (ret_link)
        *ret_link = strdup(full);
    return -EXDEV;
}

int ks_root_readlink(const ks_root *r, const char *path, char **ret)
{
    _cleanup_close_ int fd = -EBADF;
    char buf[PATH_MAX];
    ssize_t n;

    fd = ks_root_open_at(r, path, O_PATH | O_NOFOLLOW, 0);
    if (fd < 0)
        return fd;
    n = readlinkat(fd, "", buf, sizeof(buf) - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    *ret = strdup(buf);
    return *ret ? 0 : -ENOMEM;
}

static int stat_flags(const ks_root *r, const char *path, int oflags, struct stat *ret)
{
    _cleanup_close_ int fd = ks_root_open_at(r, path, O_PATH | oflags, 0);
    if (fd < 0)
        return fd;
    return fstat(fd, ret) < 0 ? -errno : 0;
}

int ks_root_stat(const ks_root *r, const char *path, struct stat *ret)
{
    return stat_flags(r, path, 0, ret);
}

int ks_root_lstat(const ks_root *r, const char *path, struct stat *ret)
{
    return stat_flags(r, path, O_NOFOLLOW, ret);
}

int ks_root_statvfs(const ks_root *r, const char *path, struct statvfs *ret)
{
    _cleanup_close_ int fd = ks_root_open_at(r, path, O_PATH, 0);
    if (fd < 0)
        return fd;
    return fstatvfs(fd, ret) < 0 ? -errno : 0;
}

bool ks_root_exists(const ks_root *r, const char *path)
{
    struct stat st;
    return ks_root_stat(r, path, &st) == 0;
}
