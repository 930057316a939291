/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"

static int split_path(const char *path, char **ret_dir, char **ret_base)
{
    _cleanup_free_ char *a = strdup(path), *b = strdup(path);
    if (!a || !b)
        return -ENOMEM;
    *ret_dir = strdup(dirname(a));
    *ret_base = strdup(basename(b));
    if (!*ret_dir || !*ret_base) {
        free(*ret_dir);
        free(*ret_base);
        return -ENOMEM;
    }
    return 0;
}

int ks_file_type_check(mode_t st_mode, unsigned types)
{
    if (S_ISREG(st_mode))
        return types & KS_FILE_REGULAR ? 0 : -EINVAL;
    if (S_ISDIR(st_mode))
        return types & KS_FILE_DIRECTORY ? 0 : -EISDIR;
    if (S_ISBLK(st_mode) && (types & KS_FILE_BLOCK))
        return 0;
    if (S_ISFIFO(st_mode))
        return -ESPIPE;
    if (S_ISSOCK(st_mode))
        return -ENOTSOCK;
    if (S_ISLNK(st_mode))
        return -ELOOP; /* looked up with O_NOFOLLOW, as open() says it */
    return -ENODEV;
}

int ks_fd_ensure_regular(int fd)
{
    struct stat st;
    int flags, r;

    if (fstat(fd, &st) < 0)
        return -errno;
    r = ks_file_type_check(st.st_mode, KS_FILE_REGULAR);
    if (r < 0)
        return r;
    flags = fcntl(fd, F_GETFL);
    if (flags < 0)
        return -errno;
    if ((flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

bool ks_fd_same_inode(int fd, const struct stat *st)
{
    struct stat now;
    return fstat(fd, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino &&
           ((now.st_mode ^ st->st_mode) & S_IFMT) == 0;
}

int ks_fd_reopen(int path_fd, int flags, unsigned types)
{
    char proc[64];
    struct stat st;
    int fd, r;

    assert(path_fd >= 0);
    if (fstat(path_fd, &st) < 0)
        return -errno;
    r = ks_file_type_check(st.st_mode, types);
    if (r < 0)
        return r;
    flags &= ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_PATH);
    if (S_ISDIR(st.st_mode))
        flags = (flags & ~O_ACCMODE) | O_RDONLY | O_DIRECTORY;
    /* The magic link opens the inode the descriptor holds; it walks no path. */
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
    fd = open(proc, flags | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0)
        return fd;
    r = -errno;
    if (r == -ENOENT && access("/proc/self/fd", F_OK) < 0)
        return -EXDEV; /* no /proc: the caller looks the path up once more */
    return r;
}

int ks_openat_regular(int dirfd, const char *path, int extra_flags)
{
    _cleanup_close_ int pfd = -EBADF;
    struct stat st;
    int fd;

    assert(path);
    pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | (extra_flags & O_NOFOLLOW));
    if (pfd < 0)
        return -errno;
    fd = ks_fd_reopen(pfd, O_RDONLY | extra_flags, KS_FILE_REGULAR);
    if (fd != -EXDEV)
        return fd;
    /* Without /proc: the path once more, non-blocking, and it must be the file judged. */
    if (fstat(pfd, &st) < 0)
        return -errno;
    fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | extra_flags);
    if (fd < 0)
        return -errno;
    if (!ks_fd_same_inode(fd, &st) || ks_fd_ensure_regular(fd) < 0) {
        close(fd);
        return -ESTALE;
    }
    return fd;
}

const char *ks_strerror(int err)
{
    switch (err < 0 ? -err : err) {
    case EISDIR:
        return "is a directory, not a regular file";
    case ESPIPE:
        return "is a FIFO, not a regular file";
    case ENOTSOCK:
        return "is a socket, not a regular file";
    case ENODEV:
        return "is a device node, not a regular file";
    case EFBIG:
        return "is larger than kswap reads of such a file";
    default:
        return strerror(err < 0 ? -err : err);
    }
}

int ks_read_fd(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, cap = 0;

    for (;;) {
        ssize_t n;
        if (len + 1 >= cap) {
            if (cap > max + 1)
                return -EFBIG;
            if (!GREEDY_REALLOC(buf, cap, len + 4096))
                return -ENOMEM;
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max)
            return -EFBIG;
    }
    buf[len] = '\0';
    if (ret_len)
        *ret_len = len;
    *ret_buf = TAKE_PTR(buf);
    return 0;
}

int ks_mkdir_p(const ks_root *root, const char *path, mode_t mode)
{
    _cleanup_free_ char *p = strdup(path);
    _cleanup_close_ int fd = -EBADF;

    if (!p)
        return -ENOMEM;
    fd = ks_root_open_at(root, p, O_RDONLY | O_DIRECTORY, 0);
    if (fd >= 0)
        return 0;
    /* Each level is made in its parent as opened inside the root: a symlink on the way cannot
     * lead the new directory out of the root. */
    for (char *s = p;; s++) {
        char save = *s, *slash;
        const char *name;
        int parent, r = 0;

        if (save != '\0' && save != '/')
            continue;
        *s = '\0';
        slash = strrchr(p, '/');
        name = slash ? slash + 1 : p;
        if (*name) {
            if (slash)
                *slash = '\0';
            parent = ks_root_open_at(root, !slash ? "." : *p ? p : "/", O_RDONLY | O_DIRECTORY, 0);
            if (slash)
                *slash = '/';
            if (parent < 0)
                return parent;
            if (mkdirat(parent, name, mode) < 0 && errno != EEXIST)
                r = -errno;
            close(parent);
            if (r < 0)
                return r;
        }
        *s = save;
        if (save == '\0')
            break;
    }
    return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * A run killed between creating its temporary file and the rename leaves ".#NAME.kswapXXXX"
 * behind; the next successful write of NAME removes such leftovers (changes run under the
 * lock, so no other writer is using them).
 */
static void remove_stale_temps(int dfd, const char *base)
{
    _cleanup_free_ char *prefix = ks_asprintf(".#%s.kswap", base);
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *de;
    DIR *d;

    if (!prefix || fd < 0 || !(d = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((de = readdir(d)))
        if (ks_startswith(de->d_name, prefix))
            (void)unlinkat(dfd, de->d_name, 0);
    closedir(d);
}

int ks_write_atomic_at(int dfd, const char *name, const void *data, size_t len, mode_t mode)
{
    _cleanup_free_ char *tmp = NULL;
    _cleanup_close_ int fd = -EBADF;
    unsigned int rnd = 0;
    int r;

    assert(dfd >= 0);
    assert(name);
    if (!*name || strchr(name, '/'))
        return -EINVAL;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
        rnd = (unsigned int)getpid();
    tmp = ks_asprintf(".#%s.kswap%08x", name, rnd);
    if (!tmp)
        return -ENOMEM;
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -errno;
    r = write_all(fd, data, len);
    if (r >= 0 && fchmod(fd, mode) < 0)
        r = -errno;
    if (r >= 0 && fsync(fd) < 0)
        r = -errno;
    if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
        r = -errno;
    if (r < 0) {
        unlinkat(dfd, tmp, 0);
        return r;
    }
    remove_stale_temps(dfd, name);
    if (fsync(dfd) < 0)
        return -errno;
    return 0;
}

int ks_write_atomic(const ks_root *root, const char *path, const void *data, size_t len,
                    mode_t mode)
{
    _cleanup_free_ char *dir = NULL, *base = NULL;
    _cleanup_close_ int dfd = -EBADF;
    int r;

    r = split_path(path, &dir, &base);
    if (r < 0)
        return r;
    r = ks_mkdir_p(root, dir, 0755);
    if (r < 0)
        return r;
    dfd = ks_root_open_at(root, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return dfd;
    return ks_write_atomic_at(dfd, base, data, len, mode);
}

/* fs/ext4/ext4.h (include/uapi/linux/ext4.h from 5.16, which Debian 12's headers lack) */
#ifndef EXT4_IOC_CHECKPOINT
#define EXT4_IOC_CHECKPOINT _IOW('f', 43, uint32_t)
#endif

int ks_fs_checkpoint(int fd)
{
    struct statfs sf;
    uint32_t flags = 0;

    assert(fd >= 0);
    if (fstatfs(fd, &sf) < 0)
        return -errno;
    /* ext2, ext3 and ext4 share the magic; the ext4 driver serves all three. */
    if (sf.f_type != EXT4_SUPER_MAGIC)
        return 0;
    /* ENODEV: no journal, nothing GRUB could miss; ENOTTY: a kernel before 5.13 */
    if (ioctl(fd, EXT4_IOC_CHECKPOINT, &flags) < 0)
        return errno == ENODEV ? 0 : -errno;
    return 1;
}

int ks_fs_checkpoint_path(const ks_root *root, const char *path)
{
    _cleanup_close_ int fd =
        ks_root_open_file(root, path, O_RDONLY, 0, KS_FILE_REGULAR | KS_FILE_DIRECTORY);
    int r;

    if (fd < 0)
        return fd;
    r = ks_fs_checkpoint(fd);
    return r == -ENOTTY || r == -EPERM ? 0 : r;
}

int ks_unlink_durable(const ks_root *root, const char *path)
{
    _cleanup_free_ char *dir = NULL, *base = NULL;
    _cleanup_close_ int dfd = -EBADF;
    int r;

    r = split_path(path, &dir, &base);
    if (r < 0)
        return r;
    dfd = ks_root_open_at(root, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return dfd;
    if (unlinkat(dfd, base, 0) < 0)
        return -errno;
    return fsync(dfd) < 0 ? -errno : 0;
}

int ks_unlink_if_exists(const ks_root *root, const char *path)
{
    int r;

    assert(root);
    assert(path);
    if (!ks_root_exists(root, path))
        return 0;
    r = ks_unlink_durable(root, path);
    return r == -ENOENT ? 0 : r;
}

int ks_pread_all(int fd, void *buf, size_t len, uint64_t off, size_t *ret_n)
{
    size_t got = 0;

    assert(fd >= 0);
    assert(buf || len == 0);
    assert(ret_n);
    while (got < len) {
        ssize_t k = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    *ret_n = got;
    return 0;
}
