/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "test.h"

static char base[] = "/tmp/kswap-test-root.XXXXXX";

static void sh(const char *cmd)
{
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
}

/*
 * A ".." in a lookup while another process renames files: openat2() says EAGAIN then, and the
 * lookup must be retried, not reported as a missing file.
 */
static void test_dotdot_during_renames(const ks_root *r)
{
    _cleanup_free_ char *a = ks_asprintf("%s/rename-a", base),
                        *b = ks_asprintf("%s/rename-b", base);
    unsigned missing = 0;
    pid_t pid;

    CHECK(a && b);
    if (!a || !b)
        return;
    fclose(fopen(a, "w"));
    pid = fork();
    if (pid == 0) {
        for (;;) {
            (void)!rename(a, b);
            (void)!rename(b, a);
        }
    }
    CHECK(pid > 0);
    for (unsigned i = 0; i < 50000; i++)
        if (!ks_root_exists(r, "sys/dev/block/8:1/../part/partition"))
            missing++;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_MSG(missing == 0, "%u of 50000 lookups lost while files were renamed", missing);
}

int main(void)
{
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_free_ char *buf = NULL, *link = NULL, *cmd = NULL;
    _cleanup_strv_free_ char **names = NULL;
    size_t len;

    CHECK(mkdtemp(base) != NULL);
    cmd = ks_asprintf("mkdir -p %s/etc %s/sys/devices/disk/part && echo hello > %s/etc/x && "
                      "ln -s /etc/x %s/abs && ln -s ../../../../etc/x %s/rel && "
                      "mkdir -p %s/sys/dev/block && ln -s ../../devices/disk/part "
                      "%s/sys/dev/block/8:1 && echo 1 > %s/sys/devices/disk/part/partition",
                      base, base, base, base, base, base, base, base);
    sh(cmd);

    CHECK(ks_root_open(base, &r) == 0);
    CHECK(!ks_root_is_host(r));
    CHECK(ks_root_read_file(r, "/etc/x", 100, &buf, &len) == 0);
    CHECK_STREQ(buf, "hello\n");
    free(TAKE_PTR(buf));
    /* An absolute symlink resolves inside the root, not on the host. */
    CHECK(ks_root_read_file(r, "abs", 100, &buf, &len) == 0);
    CHECK_STREQ(buf, "hello\n");
    free(TAKE_PTR(buf));
    /* ".." cannot climb out of the root. */
    CHECK(ks_root_read_file(r, "rel", 100, &buf, &len) == 0);
    free(TAKE_PTR(buf));
    CHECK(ks_root_read_file(r, "../../../../etc/x", 100, &buf, &len) == 0);
    CHECK_STREQ(buf, "hello\n");
    free(TAKE_PTR(buf));
    /* sysfs style: through a relative link, then ".." to the parent device. */
    CHECK(ks_root_exists(r, "sys/dev/block/8:1/partition"));
    CHECK(ks_root_exists(r, "sys/dev/block/8:1/../part/partition"));
    CHECK(ks_root_readlink(r, "sys/dev/block/8:1", &link) == 0);
    CHECK_STREQ(link, "../../devices/disk/part");
    CHECK(ks_root_read_file(r, "etc/x", 2, &buf, &len) == -EFBIG);
    CHECK(ks_root_read_file(r, "etc/missing", 100, &buf, &len) == -ENOENT);
    CHECK(ks_root_list_dir(r, "etc", &names) == 0);
    CHECK_INTEQ(ks_strv_length(names), 1);

    /* Atomic writes create parents, replace content and leave no temporary file. */
    CHECK(ks_write_atomic(r, "var/lib/kswap/state.json", "{}\n", 3, 0644) == 0);
    CHECK(ks_write_atomic(r, "var/lib/kswap/state.json", "{\"a\":1}\n", 8, 0600) == 0);
    CHECK(ks_root_read_file(r, "var/lib/kswap/state.json", 100, &buf, &len) == 0);
    CHECK_STREQ(buf, "{\"a\":1}\n");
    ks_strv_free(TAKE_PTR(names));
    CHECK(ks_root_list_dir(r, "var/lib/kswap", &names) == 0);
    CHECK_INTEQ(ks_strv_length(names), 1);
    {
        struct stat st;
        CHECK(ks_root_stat(r, "var/lib/kswap/state.json", &st) == 0);
        CHECK_INTEQ(st.st_mode & 0777, 0600);
    }
    CHECK(ks_unlink_durable(r, "var/lib/kswap/state.json") == 0);

    /* An absolute symlink on the way resolves inside the root: nothing lands on the host. */
    {
        char *lnk = ks_asprintf("ln -s /kswap-escape-test %s/escape", base);
        sh(lnk);
        free(lnk);
        (void)rmdir("/kswap-escape-test/sub");
        (void)rmdir("/kswap-escape-test");
        /* A dangling link refuses, as mkdir -p does; a link to an existing directory inside
         * the root is followed there. */
        CHECK(ks_write_atomic(r, "escape/sub/f", "x", 1, 0644) < 0);
        CHECK(access("/kswap-escape-test", F_OK) != 0);
        CHECK(ks_mkdir_p(r, "kswap-escape-test", 0755) == 0);
        CHECK(ks_write_atomic(r, "escape/sub/f", "x", 1, 0644) == 0);
        CHECK(access("/kswap-escape-test", F_OK) != 0);
        CHECK(ks_root_exists(r, "kswap-escape-test/sub/f"));
    }
    CHECK(!ks_root_exists(r, "var/lib/kswap/state.json"));
    test_dotdot_during_renames(r);

    free(cmd);
    cmd = ks_asprintf("rm -rf %s", base);
    sh(cmd);
    TEST_DONE();
}
