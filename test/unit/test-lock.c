/* SPDX-License-Identifier: GPL-2.0-or-later */
/* var/lib/kswap/lock: a forked child holds it; we wait, time out, name it, then get it. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "lib/engine/lock.h"
#include "lib/basic/util.h"
#include "test.h"

static long elapsed_ms(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

/* The child takes the lock, says so on ready, then holds it until told (or killed). */
static pid_t spawn_holder(const char *dir, int *ret_go)
{
    int ready[2], go[2];
    pid_t pid;
    char c;

    if (pipe(ready) < 0 || pipe(go) < 0)
        exit(1);
    pid = fork();
    if (pid < 0)
        exit(1);
    if (pid == 0) {
        ks_root *r = NULL;
        ks_lock *l = NULL;
        close(ready[0]);
        close(go[1]);
        if (ks_root_open(dir, &r) < 0 || ks_lock_acquire(r, 0, &l, NULL) < 0)
            _exit(2);
        if (write(ready[1], "r", 1) != 1)
            _exit(3);
        /* EOF or a byte: release. */
        if (read(go[0], &c, 1) < 0)
            _exit(4);
        ks_lock_release(l);
        ks_root_free(r);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    if (read(ready[0], &c, 1) != 1) {
        fprintf(stderr, "holder did not start\n");
        exit(1);
    }
    close(ready[0]);
    *ret_go = go[1];
    return pid;
}

static void test_parse(void)
{
    static const struct {
        const char *text;
        int ret;
        pid_t pid;
    } cases[] = {
        {"1234\n", 0, 1234},
        {"1234", 0, 1234},
        {"1\n", 0, 1},
        {"", -EBADMSG, 0},
        {"\n", -EBADMSG, 0},
        {"0\n", -EBADMSG, 0},
        {"-5\n", -EBADMSG, 0},
        {"12 34\n", -EBADMSG, 0},
        {"12\n\n", -EBADMSG, 0},
        {" 12\n", -EBADMSG, 0},
        {"99999999999999999999\n", -EBADMSG, 0},
        {"abc", -EBADMSG, 0},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        pid_t p = 77;
        int r = ks_lock_parse_pid(cases[i].text, strlen(cases[i].text), &p);
        CHECK_MSG(r == cases[i].ret, "case %zu: %d", i, r);
        CHECK_INTEQ(p, cases[i].ret == 0 ? cases[i].pid : 77);
    }
}

int main(void)
{
    char tmpl[] = "/tmp/kswap-lock-XXXXXX";
    char *dir = mkdtemp(tmpl);
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_free_ char *text = NULL, *cmd = NULL;
    ks_lock *l = NULL, *l2 = NULL;
    struct timespec t0;
    pid_t holder, seen = -1;
    int go, status, r;

    test_parse();
    CHECK(dir && ks_root_open(dir, &root) == 0);
    if (!root)
        TEST_DONE();
    CHECK(KS_LOCK_TIMEOUT_MS_DEFAULT == 10000);

    /* Free: taken at once, parents created, our pid inside. */
    CHECK(ks_lock_acquire(root, 0, &l, NULL) == 0);
    CHECK(ks_root_read_file(root, KS_LOCK_PATH, 100, &text, NULL) == 0);
    {
        char want[24];
        snprintf(want, sizeof(want), "%d\n", (int)getpid());
        CHECK_STREQ(text, want);
    }
    /* flock belongs to the open file: a second take in this process is refused too. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(ks_lock_acquire(root, 0, &l2, &seen) == -EBUSY);
    CHECK(l2 == NULL);
    CHECK_INTEQ(seen, getpid());
    CHECK(elapsed_ms(&t0) < 1000);
    l = ks_lock_release(l);
    CHECK(l == NULL);
    CHECK(ks_lock_release(NULL) == NULL);
    /* Released: no pid left for a waiter to blame. */
    CHECK(ks_lock_read_holder(root, &seen) == 0);
    CHECK_INTEQ(seen, 0);

    /* A child holds it: we wait the given time, then -EBUSY naming the child. */
    holder = spawn_holder(dir, &go);
    seen = -1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = ks_lock_acquire(root, 400, &l, &seen);
    CHECK_INTEQ(r, -EBUSY);
    CHECK(l == NULL);
    CHECK_INTEQ(seen, holder);
    CHECK_MSG(elapsed_ms(&t0) >= 390 && elapsed_ms(&t0) < 3000, "waited %ld ms", elapsed_ms(&t0));
    CHECK(ks_lock_read_holder(root, &seen) == 0 && seen == holder);

    /* It lets go while we wait: we get it within the wait. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (fork() == 0) {
        /* A helper that tells the holder to release after 300 ms. */
        struct timespec d = {.tv_sec = 0, .tv_nsec = 300000000L};
        nanosleep(&d, NULL);
        if (write(go, "g", 1) != 1)
            _exit(1);
        _exit(0);
    }
    r = ks_lock_acquire(root, 5000, &l, &seen);
    CHECK_INTEQ(r, 0);
    CHECK_MSG(elapsed_ms(&t0) >= 250 && elapsed_ms(&t0) < 4000, "got it after %ld ms",
              elapsed_ms(&t0));
    close(go);
    CHECK(waitpid(holder, &status, 0) == holder && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    while (wait(NULL) > 0)
        ;
    l = ks_lock_release(l);

    /* A holder killed with SIGKILL leaves no stale lock, only a stale pid. */
    holder = spawn_holder(dir, &go);
    CHECK(ks_lock_acquire(root, 0, &l, &seen) == -EBUSY && seen == holder);
    kill(holder, SIGKILL);
    CHECK(waitpid(holder, &status, 0) == holder && WIFSIGNALED(status));
    close(go);
    CHECK(ks_lock_read_holder(root, &seen) == 0 && seen == holder);
    CHECK(ks_lock_acquire(root, 0, &l, NULL) == 0);
    free(text);
    text = NULL;
    CHECK(ks_root_read_file(root, KS_LOCK_PATH, 100, &text, NULL) == 0);
    CHECK(text && ks_safe_atoi(strtok(text, "\n"), &r) == 0 && r == getpid());
    l = ks_lock_release(l);

    /* A directory in the way: an error, not -EBUSY. */
    cmd = ks_asprintf("rm -f '%s/var/lib/kswap/lock' && mkdir '%s/var/lib/kswap/lock'", dir, dir);
    CHECK(cmd && system(cmd) == 0);
    r = ks_lock_acquire(root, 0, &l, NULL);
    CHECK_MSG(r < 0 && r != -EBUSY, "got %d", r);

    free(cmd);
    cmd = ks_asprintf("rm -rf '%s'", dir);
    if (cmd && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    TEST_DONE();
}
