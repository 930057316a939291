/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reach: a TCP connection to HOST:PORT opens (the fleet controller, the gateway): the node
 * reaches out, where the floor only proves that something listens. Each address HOST resolves
 * to is tried in turn within the check's time (program_timeout); the connection is closed at
 * once, nothing is sent.
 */
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checks/check.h"
#include "lib/basic/time-util.h"
#include "lib/basic/util.h"

#define DEFAULT_TIMEOUT_MS 30000u

/* "host:port" or "[v6]:port" into its parts (validated when the configuration was read). */
static int split_hostport(const char *s, char **ret_host, char **ret_port)
{
    const char *colon = strrchr(s, ':');
    const char *h = s;
    size_t hn;

    if (!colon || colon == s || !colon[1])
        return -EINVAL;
    hn = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hn < 3 || colon[-1] != ']')
            return -EINVAL;
        h = s + 1;
        hn -= 2;
    }
    *ret_host = strndup(h, hn);
    *ret_port = strdup(colon + 1);
    if (!*ret_host || !*ret_port) {
        free(*ret_host);
        free(*ret_port);
        return -ENOMEM;
    }
    return 0;
}

/* 0 connected, or a positive errno (ETIMEDOUT when deadline passed first). */
static int connect_one(const struct addrinfo *ai, long long deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int err = 0;

    if (fd < 0)
        return errno;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        err = errno;
        while (err == EINPROGRESS || err == EINTR) {
            long long left = deadline - ks_monotonic_ms();
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            socklen_t len = sizeof(err);
            int n;

            if (left <= 0) {
                err = ETIMEDOUT;
                break;
            }
            n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
            if (n < 0) {
                err = errno;
                continue;
            }
            if (n == 0) {
                err = ETIMEDOUT;
                break;
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        }
    }
    close(fd);
    return err;
}

static void format_addr(const struct addrinfo *ai, char *buf, size_t size)
{
    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, buf, size, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(buf, size, "?");
}

int ks_check_reach(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *host = NULL, *port = NULL, *tried = NULL;
    const struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    long long start = ks_monotonic_ms();
    long long deadline =
        start + (c->program_timeout_ms ? c->program_timeout_ms : DEFAULT_TIMEOUT_MS);
    int r, g;

    {
        _cleanup_free_ char *item = ks_check_id_unescape(chk->arg, strlen(chk->arg));
        if (!item)
            return -ENOMEM;
        r = split_hostport(item, &host, &port);
        if (r < 0)
            return r;
    }
    free(chk->detail);
    chk->detail = NULL;
    g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        /* The resolver is part of what a trial kernel must bring back: a failure, not an error. */
        chk->detail = ks_asprintf("%s does not resolve: %s", host,
                                  g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
        return chk->detail ? 0 : -ENOMEM;
    }
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        char addr[NI_MAXHOST];
        int err = connect_one(ai, deadline);
        char *t;

        format_addr(ai, addr, sizeof(addr));
        if (err == 0) {
            chk->detail = ks_asprintf("connected to %s port %s in %lld ms", addr, port,
                                      ks_monotonic_ms() - start);
            freeaddrinfo(res);
            return chk->detail ? 1 : -ENOMEM;
        }
        t = ks_asprintf("%s%s%s: %s", strempty(tried), tried ? "; " : "", addr,
                        err == ETIMEDOUT ? "no answer in time" : strerror(err));
        if (!t) {
            freeaddrinfo(res);
            return -ENOMEM;
        }
        free(tried);
        tried = t;
        if (err == ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    chk->detail = ks_asprintf("no TCP connection to %s port %s (%s)", host, port, strempty(tried));
    return chk->detail ? 0 : -ENOMEM;
}

static bool item_ok(const char *v)
{
    const char *colon = strrchr(v, ':');
    unsigned long long n;

    if (!colon || colon == v || ks_safe_atou64(colon + 1, &n) < 0 || n == 0 || n > 65535)
        return false;
    /* [v6]:port or host:port; a bare IPv6 address needs brackets. */
    if (v[0] == '[')
        return colon[-1] == ']' && colon - v > 2;
    return !memchr(v, ':', (size_t)(colon - v));
}

static const ks_config_key keys[] = {
    /* Off by default: a node need not reach anything beyond its own listeners. */
    KS_CONFIG_LIST("accept", "reach", item_ok, NULL,
                   "HOST:PORT, PORT 1-65535, [ADDR]:PORT for IPv6"),
    {0},
};

const ks_check_kind ks_check_kind_reach = {
    .name = "reach",
    .max_fields = 1,
    .run = ks_check_reach,
    .keys = keys,
    .item_key = "reach",
};
