/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <sys/stat.h>

#include "lib/basic/util.h"
#include "lib/host/dpkglock.h"
#include "lock-holder.h"
#include "test.h"

typedef enum setup {
    SETUP_NO_FILES, /* no var/lib/dpkg/lock* at all */
    SETUP_FILES,    /* both exist, nobody holds them */
    SETUP_CHILD,    /* a child holds one of them */
    SETUP_SELF,     /* this process holds lock-frontend through another descriptor */
    SETUP_SYMLINK,  /* lock-frontend is a symlink (apt opens it O_NOFOLLOW) */
} setup;

static const struct {
    const char *name;
    setup setup;
    const char *file; /* which lock the child takes */
    lock_kind kind;
    const char *comm;
    int ret;
    const char *want_lock;
    bool want_pid; /* the child's pid (or ours for SETUP_SELF) is named */
    const char *want_name;
} cases[] = {
    {"no lock files", SETUP_NO_FILES, NULL, 0, NULL, 0, NULL, false, NULL},
    {"lock files, nobody holds them", SETUP_FILES, NULL, 0, NULL, 0, NULL, false, NULL},
    {"unattended-upgrades holds lock-frontend (as apt takes it)", SETUP_CHILD,
     KS_DPKG_FRONTEND_LOCK_PATH, LOCK_POSIX_WRITE, "unattended-upgr", 1, KS_DPKG_FRONTEND_LOCK_PATH,
     true, "unattended-upgr"},
    {"dpkg holds lock (dpkg run by hand: no frontend lock)", SETUP_CHILD, KS_DPKG_LOCK_PATH,
     LOCK_POSIX_WRITE, "dpkg", 1, KS_DPKG_LOCK_PATH, true, "dpkg"},
    {"a read lock conflicts with apt's write lock too", SETUP_CHILD, KS_DPKG_LOCK_PATH,
     LOCK_POSIX_READ, "reader", 1, KS_DPKG_LOCK_PATH, true, "reader"},
    {"an OFD lock: the holder found through /proc/PID/fdinfo", SETUP_CHILD,
     KS_DPKG_FRONTEND_LOCK_PATH, LOCK_OFD_WRITE, "ofd-holder", 1, KS_DPKG_FRONTEND_LOCK_PATH, true,
     "ofd-holder"},
    {"a lock of this very process (F_OFD_GETLK sees it, F_GETLK would not)", SETUP_SELF, NULL, 0,
     NULL, 1, KS_DPKG_FRONTEND_LOCK_PATH, true, NULL},
    {"lock-frontend is a symlink", SETUP_SYMLINK, NULL, 0, NULL, -ELOOP, NULL, false, NULL},
};

static void touch(const char *base, const char *rel)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", base, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        abort();
    close(fd);
}

static void test_probe(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char base[] = "/tmp/kswap-dpkglock.XXXXXX";
        _cleanup_free_ char *dir = NULL, *cmd = NULL, *path = NULL;
        _cleanup_root_ ks_root *root = NULL;
        ks_dpkg_lock_holder h = {0};
        lock_holder child = {0};
        pid_t want_pid = 0;
        int self_fd = -1, r;

        if (!mkdtemp(base))
            abort();
        dir = ks_asprintf("%s/var/lib/dpkg", base);
        cmd = ks_asprintf("mkdir -p '%s'", dir);
        if (!dir || !cmd || system(cmd) != 0)
            abort();
        if (cases[i].setup != SETUP_NO_FILES && cases[i].setup != SETUP_SYMLINK) {
            touch(base, KS_DPKG_FRONTEND_LOCK_PATH);
            touch(base, KS_DPKG_LOCK_PATH);
        }
        if (cases[i].setup == SETUP_SYMLINK) {
            path = ks_asprintf("%s/%s", base, KS_DPKG_FRONTEND_LOCK_PATH);
            CHECK(symlink("lock", path) == 0);
            touch(base, KS_DPKG_LOCK_PATH);
        }
        if (cases[i].setup == SETUP_CHILD) {
            path = ks_asprintf("%s/%s", base, cases[i].file);
            child = lock_holder_start(path, cases[i].kind, cases[i].comm);
            want_pid = child.pid;
        }
        if (cases[i].setup == SETUP_SELF) {
            struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
            path = ks_asprintf("%s/%s", base, KS_DPKG_FRONTEND_LOCK_PATH);
            self_fd = open(path, O_RDWR | O_CLOEXEC);
            CHECK(self_fd >= 0 && fcntl(self_fd, F_SETLK, &fl) == 0);
            want_pid = getpid();
        }
        CHECK(ks_root_open(base, &root) == 0);
        r = ks_dpkg_lock_probe(root, &h);
        CHECK_MSG(r == cases[i].ret, "%s: %d, want %d", cases[i].name, r, cases[i].ret);
        if (r > 0) {
            CHECK_STREQ(h.lock, cases[i].want_lock);
            if (cases[i].want_pid)
                CHECK_MSG(h.pid == want_pid, "%s: pid %d, want %d", cases[i].name, (int)h.pid,
                          (int)want_pid);
            if (cases[i].want_name)
                CHECK_STREQ(h.name, cases[i].want_name);
            /* the child is this test program: its command line names it */
            if (cases[i].setup == SETUP_CHILD)
                CHECK_MSG(h.cmdline && strstr(h.cmdline, "test-dpkglock"), "%s: cmdline '%s'",
                          cases[i].name, strempty(h.cmdline));
        }
        lock_holder_stop(&child);
        if (self_fd >= 0)
            close(self_fd);
        /* Released: free again. */
        if (r > 0) {
            ks_dpkg_lock_holder h2 = {0};
            CHECK_MSG(ks_dpkg_lock_probe(root, &h2) == 0, "%s: still held after release",
                      cases[i].name);
            ks_dpkg_lock_holder_done(&h2);
        }
        ks_dpkg_lock_holder_done(&h);
        free(cmd);
        cmd = ks_asprintf("rm -rf '%s'", base);
        if (!cmd || system(cmd) != 0)
            abort();
    }
}

static const struct {
    const char *name;
    const char *output;
    const char *want;
} apt_outputs[] = {
    {"apt 2.x on a held frontend lock (its real three lines)",
     "Reading package lists...\n"
     "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 "
     "(unattended-upgr)\n"
     "N: Be aware that removing the lock file is not a solution and may break your system.\n"
     "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another "
     "process using it?\n",
     "Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 "
     "(unattended-upgr)"},
    {"old apt: no holder",
     "E: Could not get lock /var/lib/dpkg/lock - open (11: Resource "
     "temporarily unavailable)\r\nE: Unable to lock the administration "
     "directory (/var/lib/dpkg/), is another process using it?\r\n",
     "Could not get lock /var/lib/dpkg/lock - open (11: Resource temporarily unavailable)"},
    {"no lock problem", "E: Sub-process /usr/bin/dpkg returned an error code (1)\n", NULL},
    {"empty", "", NULL},
    {"the last of two lock lines", "E: Could not get lock A\nE: Could not get lock B",
     "Could not get lock B"},
};

static void test_apt_line(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(apt_outputs); i++) {
        _cleanup_free_ char *got = ks_apt_lock_error_line(apt_outputs[i].output);
        CHECK_MSG(streq_ptr(got, apt_outputs[i].want), "%s: '%s'", apt_outputs[i].name,
                  strempty(got));
    }
    CHECK(ks_apt_lock_error_line(NULL) == NULL);
}

static void test_describe(void)
{
    _cleanup_free_ char *name = NULL, *cmdline = NULL;

    CHECK(ks_process_describe(getpid(), &name, &cmdline) == 0);
    CHECK_STREQ(name, "test-dpkglock");
    CHECK(cmdline && strstr(cmdline, "test-dpkglock"));
    CHECK(ks_process_describe(0, NULL, NULL) == -ESRCH);
}

int main(void)
{
    test_probe();
    test_apt_line();
    test_describe();
    TEST_DONE();
}
