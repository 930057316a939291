/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "lib/basic/spawn.h"
#include "lib/basic/util.h"
#include "test.h"

typedef struct status_seen {
    char buf[256];
    size_t len;
    unsigned calls;
} status_seen;

static void on_status(void *userdata, const char *data, size_t n)
{
    status_seen *x = userdata;
    x->calls++;
    if (x->len + n < sizeof(x->buf)) {
        memcpy(x->buf + x->len, data, n);
        x->len += n;
    }
}

/* A status fd (apt's APT::Status-Fd=N): its lines reach the callback, not the output. */
static void test_status_fd(void)
{
    char *argv[] = {(char *)"sh", (char *)"-c",
                    (char *)"echo out; printf 'pmstatus:p:10:Unpacking p\n' >&5; echo err >&2; "
                            "printf 'dlstatus:1:100:Retrieving file 1 of 1\n' >&5",
                    NULL};
    ks_spawn_result r = {0};
    status_seen x = {{0}, 0, 0};

    CHECK(ks_spawn(argv,
                   KS_SPAWN_OPTS(.status_fd = 5, .on_status = on_status, .status_userdata = &x,
                                 .timeout_ms = 5000),
                   &r) == 0);
    CHECK(ks_spawn_succeeded(&r));
    CHECK(x.calls >= 1);
    CHECK_STREQ(x.buf, "pmstatus:p:10:Unpacking p\ndlstatus:1:100:Retrieving file 1 of 1\n");
    CHECK(strstr(r.output, "out\n") && strstr(r.output, "err\n") && !strstr(r.output, "status"));
    ks_spawn_result_done(&r);
    /* Without the option the fd is not open in the child. */
    CHECK(ks_spawn(argv, KS_SPAWN_OPTS(.timeout_ms = 5000), &r) == 0);
    CHECK(!ks_spawn_succeeded(&r) || strstr(r.output, "Bad file descriptor"));
    ks_spawn_result_done(&r);
    /* stdio and the file to run cannot be taken over. */
    CHECK(ks_spawn(argv, KS_SPAWN_OPTS(.status_fd = 2), &r) == -EINVAL);
    CHECK(ks_spawn(argv, KS_SPAWN_OPTS(.status_fd = 7, .exec_fd = 7), &r) == -EINVAL);
}

int main(void)
{
    test_status_fd();
    ks_spawn_result r = {0};
    _cleanup_free_ char *p = NULL, *line = NULL;
    struct timespec a, b;

    CHECK(ks_find_program("true", &p) == 0);
    CHECK(p && p[0] == '/');
    CHECK(ks_find_program("kswap-no-such-program", &p) == -ENOENT);

    CHECK(ks_spawn((char *[]){"true", NULL}, KS_SPAWN_OPTS(), &r) == 0);
    CHECK(ks_spawn_succeeded(&r));
    CHECK_INTEQ(r.output_len, 0);
    ks_spawn_result_done(&r);

    CHECK(ks_spawn((char *[]){"false", NULL}, KS_SPAWN_OPTS(), &r) == 0);
    CHECK(!ks_spawn_succeeded(&r));
    CHECK_INTEQ(r.exit_code, 1);
    ks_spawn_result_done(&r);

    CHECK(ks_spawn((char *[]){"kswap-no-such-program", NULL}, KS_SPAWN_OPTS(), &r) == -ENOENT);

    /* Arguments are never seen by a shell; stderr is captured with stdout. */
    CHECK(ks_spawn((char *[]){"sh", "-c", "echo out; echo err >&2; exit 3", NULL}, KS_SPAWN_OPTS(),
                   &r) == 0);
    CHECK_INTEQ(r.exit_code, 3);
    CHECK(strstr(r.output, "out\n") && strstr(r.output, "err\n"));
    line = ks_spawn_last_line(&r);
    CHECK(line && (streq(line, "err") || streq(line, "out")));
    ks_spawn_result_done(&r);
    CHECK(ks_spawn((char *[]){"echo", "$HOME;", "`x`", NULL}, KS_SPAWN_OPTS(), &r) == 0);
    CHECK_STREQ(r.output, "$HOME; `x`\n");
    ks_spawn_result_done(&r);

    /* Extra environment replaces the inherited value. */
    setenv("KSWAP_ROOT", "/wrong", 1);
    CHECK(ks_spawn((char *[]){"sh", "-c", "printf %s \"$KSWAP_ROOT\"", NULL},
                   KS_SPAWN_OPTS(.env = (char *[]){"KSWAP_ROOT=/srv/root", NULL}), &r) == 0);
    CHECK_STREQ(r.output, "/srv/root");
    ks_spawn_result_done(&r);

    /* Timeout: the whole process group dies, including a child of the shell. */
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK(ks_spawn((char *[]){"sh", "-c", "sleep 30 & sleep 30; echo never", NULL},
                   KS_SPAWN_OPTS(.timeout_ms = 300), &r) == 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK(r.timed_out);
    CHECK(!ks_spawn_succeeded(&r));
    CHECK(b.tv_sec - a.tv_sec < 5);
    ks_spawn_result_done(&r);

    /* Large output is bounded: the last bytes are kept. */
    CHECK(ks_spawn((char *[]){"sh", "-c", "seq 1 200000; echo tail-marker", NULL},
                   KS_SPAWN_OPTS(.max_output = 4096), &r) == 0);
    CHECK(ks_spawn_succeeded(&r));
    CHECK(r.output_truncated);
    CHECK_INTEQ(r.output_len, 4096);
    CHECK(ks_endswith(r.output, "200000\ntail-marker\n"));
    ks_spawn_result_done(&r);

    /* A signal is reported as 128 + its number. */
    CHECK(ks_spawn((char *[]){"sh", "-c", "kill -TERM $$", NULL}, KS_SPAWN_OPTS(), &r) == 0);
    CHECK_INTEQ(r.term_signal, 15);
    CHECK_INTEQ(r.exit_code, 143);
    ks_spawn_result_done(&r);

    /* Working directory. */
    CHECK(ks_spawn((char *[]){"pwd", NULL}, KS_SPAWN_OPTS(.cwd = "/"), &r) == 0);
    CHECK_STREQ(r.output, "/\n");
    ks_spawn_result_done(&r);

    /* Descriptor 0 is a descriptor: given as stdin it is the child's stdin, not "unset"; unset
     * (the default, -EBADF) is /dev/null. */
    {
        int saved = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3), fds[2];

        CHECK(saved >= 0 && pipe(fds) == 0);
        CHECK(write(fds[1], "from-fd-0", 9) == 9);
        close(fds[1]);
        CHECK(dup2(fds[0], STDIN_FILENO) == STDIN_FILENO);
        close(fds[0]);
        CHECK(ks_spawn((char *[]){"cat", NULL}, KS_SPAWN_OPTS(.stdin_fd = STDIN_FILENO), &r) == 0);
        CHECK_STREQ(r.output, "from-fd-0");
        ks_spawn_result_done(&r);
        CHECK(ks_spawn((char *[]){"cat", NULL}, KS_SPAWN_OPTS(), &r) == 0);
        CHECK_STREQ(r.output, "");
        ks_spawn_result_done(&r);
        CHECK(dup2(saved, STDIN_FILENO) == STDIN_FILENO);
        close(saved);
    }

    /* A program that leaves a background child holding the pipe does not hang us. */
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK(ks_spawn((char *[]){"sh", "-c", "sleep 20 & echo started", NULL}, KS_SPAWN_OPTS(), &r) ==
          0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK(ks_spawn_succeeded(&r));
    CHECK(b.tv_sec - a.tv_sec < 5);
    ks_spawn_result_done(&r);

    TEST_DONE();
}
