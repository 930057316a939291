/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every way kswap opens a file of a root, against every kind of file a root can hold in that
 * place: a FIFO, a socket, character devices (1:3 opens fine, 5:0 answers ENXIO, 10:130 would
 * be the watchdog), a block device, a directory, links to them, and a regular file. What must
 * hold for each opener and each kind (issue 34, items 3 and 4):
 *   - a kind the opener does not take gives its own error, and the file is never opened: not
 *     even once, not non-blocking (inotify's IN_OPEN on the directory counts every open() of
 *     a name in it; an O_PATH lookup opens nothing and is not counted);
 *   - a FIFO never blocks (each call runs in a child under alarm(5));
 *   - what the opener takes is opened once and read.
 * Device rows need CAP_MKNOD; without it they are skipped (and said so).
 */
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/basic/transaction.h"
#include "lib/basic/util.h"
#include "test.h"

static char base[] = "/tmp/kswap-test-open-types.XXXXXX";

typedef enum kind {
    K_REGULAR,
    K_DIR,
    K_FIFO,
    K_SOCKET,
    K_CHR_NULL,     /* 1:3: the driver opens, as most do */
    K_CHR_TTY,      /* 5:0: the driver answers ENXIO without a controlling terminal */
    K_CHR_WATCHDOG, /* 10:130: on a host with a watchdog, opening it arms it */
    K_BLK,          /* 7:0, a loop device */
    K_LINK_FIFO,    /* a symbolic link to the FIFO */
    K_LINK_CHR,     /* a symbolic link to 1:3 */
    _K_MAX,
} kind;

static const char *const kind_name[_K_MAX] = {
    [K_REGULAR] = "regular",         [K_DIR] = "directory",    [K_FIFO] = "fifo",
    [K_SOCKET] = "socket",           [K_CHR_NULL] = "chr-1:3", [K_CHR_TTY] = "chr-5:0",
    [K_CHR_WATCHDOG] = "chr-10:130", [K_BLK] = "blk-7:0",      [K_LINK_FIFO] = "link-fifo",
    [K_LINK_CHR] = "link-chr",
};

/* The openers: each a call kswap makes on a root's file. */
typedef enum opener {
    O_READ_FILE,  /* ks_root_read_file: journal, grub.cfg, sysfs, ... */
    O_OPEN_REG,   /* ks_root_open_regular: grubenv, dpkg status, initrds */
    O_LOCK_RW,    /* the lock: read-write, created when missing */
    O_LOCK_RO,    /* the shared lock of apply --dry-run: read-only */
    O_READ_OLD,   /* ks_file_read_old: a file's content before a change */
    O_CHECKPOINT, /* ks_fs_checkpoint_path: a file or directory, for an ioctl */
    O_BLOCK,      /* the boot file system's device for blkid (or its image) */
    O_HOST,       /* ks_open_regular: --config FILE, --deb FILE on the running machine */
    _O_MAX,
} opener;

static const char *const opener_name[_O_MAX] = {
    [O_READ_FILE] = "ks_root_read_file", [O_OPEN_REG] = "ks_root_open_regular",
    [O_LOCK_RW] = "lock read-write",     [O_LOCK_RO] = "lock read-only",
    [O_READ_OLD] = "ks_file_read_old",   [O_CHECKPOINT] = "ks_fs_checkpoint_path",
    [O_BLOCK] = "block device",          [O_HOST] = "ks_open_regular",
};

static int make(kind k, const char *p)
{
    _cleanup_free_ char *target = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, r = 0;

    switch (k) {
    case K_REGULAR:
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, "12345\n", 6) != 6)
            r = -errno;
        if (fd >= 0)
            close(fd);
        return r;
    case K_DIR:
        return mkdir(p, 0755) < 0 ? -errno : 0;
    case K_FIFO:
        return mkfifo(p, 0644) < 0 ? -errno : 0;
    case K_SOCKET:
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
        close(fd);
        return r;
    case K_CHR_NULL:
        return mknod(p, S_IFCHR | 0666, makedev(1, 3)) < 0 ? -errno : 0;
    case K_CHR_TTY:
        return mknod(p, S_IFCHR | 0666, makedev(5, 0)) < 0 ? -errno : 0;
    case K_CHR_WATCHDOG:
        return mknod(p, S_IFCHR | 0600, makedev(10, 130)) < 0 ? -errno : 0;
    case K_BLK:
        return mknod(p, S_IFBLK | 0600, makedev(7, 0)) < 0 ? -errno : 0;
    case K_LINK_FIFO:
        target = ks_asprintf("%s.target", p);
        if (!target || mkfifo(target, 0644) < 0)
            return -errno;
        return symlink(target + strlen(base) + 1, p) < 0 ? -errno : 0;
    case K_LINK_CHR:
        target = ks_asprintf("%s.target", p);
        if (!target || mknod(target, S_IFCHR | 0666, makedev(1, 3)) < 0)
            return -errno;
        return symlink(target + strlen(base) + 1, p) < 0 ? -errno : 0;
    default:
        return -EINVAL;
    }
}

/* What the opener does with the file at rel (inside the root) or abs (on the host): 0 or
 * -errno; an fd it returns is closed. */
static int call(opener o, const ks_root *r, const char *rel, const char *abs)
{
    _cleanup_free_ char *buf = NULL;
    bool exists = false;
    size_t len = 0;
    mode_t mode = 0;
    int fd;

    switch (o) {
    case O_READ_FILE:
        return ks_root_read_file(r, rel, 4096, &buf, &len);
    case O_OPEN_REG:
        fd = ks_root_open_regular(r, rel, 0);
        break;
    case O_LOCK_RW:
        fd = ks_root_open_file(r, rel, O_RDWR | O_CREAT | O_NOFOLLOW, 0644, KS_FILE_REGULAR);
        break;
    case O_LOCK_RO:
        fd = ks_root_open_file(r, rel, O_RDONLY | O_NOFOLLOW, 0, KS_FILE_REGULAR);
        break;
    case O_READ_OLD:
        return ks_file_read_old(r, rel, 4096, false, &exists, &buf, &len, &mode);
    case O_CHECKPOINT:
        return ks_fs_checkpoint_path(r, rel) < 0 ? ks_fs_checkpoint_path(r, rel) : 0;
    case O_BLOCK:
        fd = ks_root_open_file(r, rel, O_RDONLY, 0, KS_FILE_REGULAR | KS_FILE_BLOCK);
        break;
    case O_HOST:
        fd = ks_open_regular(abs);
        break;
    default:
        return -EINVAL;
    }
    if (fd >= 0)
        close(fd);
    return fd < 0 ? fd : 0;
}

/* The error each kind gives an opener that takes regular files only; 0: it is opened. */
static int expected(opener o, kind k)
{
    switch (k) {
    case K_REGULAR:
        return 0;
    case K_DIR:
        return o == O_CHECKPOINT ? 0 : -EISDIR;
    case K_FIFO:
        return -ESPIPE;
    case K_SOCKET:
        return -ENOTSOCK;
    case K_BLK:
        return o == O_BLOCK ? 1 : -ENODEV; /* 1: opened, whatever the driver answers */
    case K_LINK_FIFO:
        /* O_NOFOLLOW lookups see the link itself */
        return o == O_LOCK_RW || o == O_LOCK_RO ? -ELOOP : -ESPIPE;
    case K_LINK_CHR:
        return o == O_LOCK_RW || o == O_LOCK_RO ? -ELOOP : -ENODEV;
    default:
        return -ENODEV;
    }
}

/* call() in a child under alarm(5): a FIFO that blocks the open is one failure, not a hang.
 * *ret_blocked: the child was still in the call after 5 s. */
static int call_bounded(opener o, const ks_root *r, const char *rel, const char *abs,
                        bool *ret_blocked)
{
    int pipefd[2], got = -EIO, status = 0;
    pid_t pid;

    *ret_blocked = false;
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -errno;
    pid = fork();
    if (pid == 0) {
        alarm(5);
        got = call(o, r, rel, abs);
        (void)!write(pipefd[1], &got, sizeof(got));
        _exit(0);
    }
    close(pipefd[1]);
    if (pid > 0 && read(pipefd[0], &got, sizeof(got)) != sizeof(got))
        got = -EIO;
    close(pipefd[0]);
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
        WTERMSIG(status) == SIGALRM)
        *ret_blocked = true;
    return got;
}

/* The IN_OPEN events for name (and "NAME.target", a link's target) since the last call. */
static unsigned opens_of(int ino, const char *name)
{
    char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    unsigned n = 0;
    ssize_t len;

    while ((len = read(ino, buf, sizeof(buf))) > 0)
        for (char *p = buf; p < buf + len;) {
            struct inotify_event *e = (struct inotify_event *)p;
            if (e->len && (e->mask & IN_OPEN) && ks_startswith(e->name, name))
                n++;
            p += sizeof(*e) + e->len;
        }
    return n;
}

int main(void)
{
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_close_ int ino = -EBADF;
    unsigned skipped = 0;

    CHECK(mkdtemp(base) != NULL);
    CHECK(ks_root_open(base, &r) == 0);
    ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CHECK(ino >= 0);
    CHECK(inotify_add_watch(ino, base, IN_OPEN) >= 0);

    for (kind k = 0; k < _K_MAX; k++)
        for (opener o = 0; o < _O_MAX; o++) {
            _cleanup_free_ char *name = ks_asprintf("f-%s-%d", kind_name[k], (int)o);
            _cleanup_free_ char *abs = ks_asprintf("%s/%s", base, name);
            int want = expected(o, k), got;
            bool blocked;
            unsigned opens;

            if (make(k, abs) == -EPERM) {
                skipped++;
                continue;
            }
            (void)opens_of(ino, name);
            got = call_bounded(o, r, name, abs, &blocked);
            opens = opens_of(ino, name);
            CHECK_MSG(!blocked, "%s on a %s: blocked for 5 s", opener_name[o], kind_name[k]);
            if (want == 1) {
                CHECK_MSG(opens >= 1, "%s on a %s: opened %u times, expected it opened",
                          opener_name[o], kind_name[k], opens);
                continue;
            }
            CHECK_MSG(got == want, "%s on a %s: %d (%s), expected %d (%s)", opener_name[o],
                      kind_name[k], got, ks_strerror(got), want, ks_strerror(want));
            if (want < 0)
                CHECK_MSG(opens == 0, "%s on a %s: opened %u times before it said %s",
                          opener_name[o], kind_name[k], opens, ks_strerror(got));
        }
    if (skipped)
        fprintf(stderr, "%u rows skipped: mknod needs CAP_MKNOD\n", skipped);

    /* The lock created where nothing is: a new regular file of the mode asked. */
    {
        struct stat st;
        int fd =
            ks_root_open_file(r, "new-lock", O_RDWR | O_CREAT | O_NOFOLLOW, 0640, KS_FILE_REGULAR);
        CHECK(fd >= 0);
        CHECK(fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              (st.st_mode & 07777) == 0640);
        if (fd >= 0)
            close(fd);
    }
    /* A lookup that would open a file is refused: only ks_root_open_file() opens them. */
    CHECK(ks_root_open_at(r, "new-lock", O_RDONLY, 0) == -EINVAL);
    CHECK(ks_root_open_at(r, "new-lock", O_RDWR | O_CREAT, 0644) == -EINVAL);
    {
        int fd = ks_root_open_at(r, "new-lock", O_PATH, 0);
        CHECK(fd >= 0);
        if (fd >= 0)
            close(fd);
    }

    {
        _cleanup_free_ char *cmd = ks_asprintf("rm -rf '%s'", base);
        CHECK(cmd && system(cmd) == 0);
    }
    TEST_DONE();
}
