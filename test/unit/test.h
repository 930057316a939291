/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A minimal table-friendly test harness: each CHECK counts; main returns failures != 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/basic/alloc-util.h"

static int ks_test_failed, ks_test_run;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        ks_test_run++;                                                                             \
        if (!(cond)) {                                                                             \
            ks_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        ks_test_run++;                                                                             \
        if (!(cond)) {                                                                             \
            ks_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STREQ(a, b)                                                                          \
    do {                                                                                           \
        const char *_a = (a), *_b = (b);                                                           \
        ks_test_run++;                                                                             \
        if (!((_a == NULL && _b == NULL) || (_a && _b && strcmp(_a, _b) == 0))) {                  \
            ks_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: '%s' != '%s' (%s vs %s)\n", __FILE__, __LINE__,                \
                    _a ? _a : "(null)", _b ? _b : "(null)", #a, #b);                               \
        }                                                                                          \
    } while (0)

#define CHECK_INTEQ(a, b)                                                                          \
    do {                                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                                        \
        ks_test_run++;                                                                             \
        if (_a != _b) {                                                                            \
            ks_test_failed++;                                                                      \
            fprintf(stderr, "%s:%d: %lld != %lld (%s vs %s)\n", __FILE__, __LINE__, _a, _b, #a,    \
                    #b);                                                                           \
        }                                                                                          \
    } while (0)

#define TEST_DONE()                                                                                \
    do {                                                                                           \
        fprintf(stderr, "%d checks, %d failed\n", ks_test_run, ks_test_failed);                    \
        return ks_test_failed ? 1 : 0;                                                             \
    } while (0)

/* Path of a file in test/fixtures (passed by meson as KS_FIXTURES). */
static inline const char *ks_fixture_dir(void)
{
    const char *d = getenv("KS_FIXTURES");
    if (!d)
        d = "test/fixtures";
    if (access(d, R_OK) != 0) {
        /* A missing data folder must not look like a parser bug (or pass by reading nothing). */
        fprintf(stderr,
                "fixtures folder '%s' is missing: run the tests with meson test, or set "
                "KS_FIXTURES to the checkout's test/fixtures\n",
                d);
        exit(1);
    }
    return d;
}

/* Reads a whole test data file (on the machine, not inside a root); NULL when unreadable. */
static inline char *ks_test_slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f)
        return NULL;
    do {
        /* Room for 4096 more bytes and the NUL: fread fills all but the last byte. */
        if (!GREEDY_REALLOC(buf, cap, len + 4096 + 1))
            abort();
        n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
    } while (n > 0);
    fclose(f);
    buf[len] = '\0';
    if (ret_len)
        *ret_len = len;
    return buf;
}
