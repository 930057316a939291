/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The reach check against sockets of this test on the loopback only: a listener, a closed
 * port, a listener whose queue is full (the SYN is dropped: no answer in time), a name from
 * /etc/hosts, IPv6 when the machine has ::1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "checks/check.h"
#include "lib/basic/util.h"
#include "test.h"

/* A TCP listener on the loopback with backlog; its port in *ret_port. */
static int listener(int family, int backlog, unsigned *ret_port)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof(*a);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*a);
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *ret_port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                         : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Fills the accept queue of a backlog-0 listener (one connection, never accepted). */
static int fill_queue(unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

typedef enum target { OPEN, CLOSED, FULL, OPEN6 } target;

static const struct reach_case {
    const char *name;
    const char *host; /* the item is HOST:PORT, PORT the test's socket */
    target target;
    unsigned timeout_ms;
    int ret;
    const char *detail; /* a part of the detail */
} cases[] = {
    {"a listener answers", "127.0.0.1", OPEN, 5000, 1, "connected to 127.0.0.1 port"},
    {"a name of /etc/hosts", "localhost", OPEN, 5000, 1, "connected to"},
    {"IPv6 in brackets", "[::1]", OPEN6, 5000, 1, "connected to ::1 port"},
    {"nothing listens", "127.0.0.1", CLOSED, 5000, 0, "Connection refused"},
    {"the SYN is dropped", "127.0.0.1", FULL, 300, 0, "no answer in time"},
    {"the failure names host and port", "127.0.0.1", CLOSED, 5000, 0,
     "no TCP connection to 127.0.0.1 port"},
};

int main(void)
{
    bool have6;
    unsigned p6 = 0;
    int fd6 = listener(AF_INET6, 8, &p6);

    have6 = fd6 >= 0;
    if (!have6)
        fprintf(stderr, "no IPv6 loopback here (%s): the IPv6 case is skipped\n", strerror(-fd6));
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const struct reach_case *t = &cases[i];
        _cleanup_free_ char *item = NULL;
        unsigned port = 0;
        int fd = -1, queued = -1, r;
        ks_check chk = {0};
        ks_check_ctx ctx = {.program_timeout_ms = t->timeout_ms};

        if (t->target == OPEN6) {
            if (!have6)
                continue;
            port = p6;
        } else {
            fd = listener(AF_INET, t->target == FULL ? 0 : 8, &port);
            CHECK_MSG(fd >= 0, "%s: listener", t->name);
            if (t->target == CLOSED) {
                close(fd); /* the port is free again: nothing listens on it */
                fd = -1;
            }
            if (t->target == FULL)
                queued = fill_queue(port);
        }
        item = ks_asprintf("%s:%u", t->host, port);
        chk.arg = item;
        r = ks_check_reach(&ctx, &chk);
        CHECK_MSG(r == t->ret, "%s: %d, expected %d (%s)", t->name, r, t->ret,
                  strempty(chk.detail));
        CHECK_MSG(chk.detail && strstr(chk.detail, t->detail), "%s: detail '%s' lacks '%s'",
                  t->name, strempty(chk.detail), t->detail);
        free(chk.detail);
        if (queued >= 0)
            close(queued);
        if (fd >= 0)
            close(fd);
    }
    if (fd6 >= 0)
        close(fd6);
    TEST_DONE();
}
