/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Ownership hand-over without goto ladders, as in kmod's shared/macro.h. */
#define _cleanup_(fn) __attribute__((cleanup(fn)))
#define _cleanup_free_ _cleanup_(ks_freep)
#define _cleanup_close_ _cleanup_(ks_closep)
#define _cleanup_fclose_ _cleanup_(ks_fclosep)
#define _cleanup_closedir_ _cleanup_(ks_closedirp)
#define _cleanup_strv_free_ _cleanup_(ks_strv_freep)
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _p = (p);                                                                    \
        (p) = NULL;                                                                                \
        _p;                                                                                        \
    })

/* The value of a struct, which is left empty: hands over what a value-type result holds. */
#define TAKE_STRUCT(s)                                                                             \
    ({                                                                                             \
        __typeof__(s) _s = (s);                                                                    \
        (s) = (__typeof__(s)){0};                                                                  \
        _s;                                                                                        \
    })

/* An unset fd is -EBADF (as in systemd), never 0: every test of an fd is `fd >= 0`. */
#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _fd = (fd);                                                                            \
        (fd) = -EBADF;                                                                             \
        _fd;                                                                                       \
    })

/*
 * _cleanup_ helpers for owned types, as in systemd's src/basic/macro.h:
 *   DEFINE_TRIVIAL_CLEANUP_FUNC(ks_foo *, ks_foo_free) gives ks_foo_freep(ks_foo **);
 *   DEFINE_TRIVIAL_DONE_FUNC(ks_bar, ks_bar_done) gives ks_bar_donep(ks_bar *), for a value-type
 *   result whose _done() frees what it holds and leaves it empty, so that an early return is safe.
 */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
    static inline void func##p(type *p)                                                            \
    {                                                                                              \
        if (*p)                                                                                    \
            func(*p);                                                                              \
    }
#define DEFINE_TRIVIAL_DONE_FUNC(type, func)                                                       \
    static inline void func##p(type *p)                                                            \
    {                                                                                              \
        func(p);                                                                                   \
    }

static inline void ks_freep(void *p)
{
    free(*(void **)p);
}

static inline void ks_closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

static inline void ks_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

static inline void ks_closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

static inline bool streq(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static inline const char *strempty(const char *s)
{
    return s ? s : "";
}

/* NULL-terminated string vectors. */
char **ks_strv_free(char **l);
static inline void ks_strv_freep(char ***l)
{
    ks_strv_free(*l);
}
size_t ks_strv_length(char *const *l);
int ks_strv_push(char ***l, char *value);         /* takes ownership of value */
int ks_strv_extend(char ***l, const char *value); /* copies value */
bool ks_strv_contains(char *const *l, const char *value);
void ks_strv_sort(char **l);
/* Splits on any of the separator characters, dropping empty words. */
int ks_strv_split(const char *s, const char *separators, char ***ret);
/* The words joined by separator ("" for none); NULL only when out of memory. */
char *ks_strv_join(char *const *l, const char *separator);

/*
 * The first element of base[0..n) (each size bytes) that cmp finds equal to an earlier one, in
 * O(n log n) (a sorted list of indexes), where a loop over the earlier ones is quadratic: a
 * list of half a million names read from a file must not take minutes. 1 with *ret_index its
 * index (and *ret_earlier, optional, the first one it equals), 0 when all differ, -ENOMEM.
 */
int ks_find_duplicate(const void *base, size_t n, size_t size,
                      int (*cmp)(const void *a, const void *b), size_t *ret_index,
                      size_t *ret_earlier);

/* Text helpers. */
const char *ks_startswith(const char *s, const char *prefix);
bool ks_endswith(const char *s, const char *suffix);
char *ks_strstrip(char *s); /* strips leading and trailing white space in place */
int ks_safe_atou64(const char *s, unsigned long long *ret); /* whole string, base 10 */
int ks_safe_atoi(const char *s, int *ret);                  /* whole string, base 10 */
char *ks_asprintf(const char *fmt, ...) _printf_(1, 2);     /* NULL when out of memory */
/* *dst = a copy of s, or NULL when s is NULL. 0 or -ENOMEM. */
int ks_strdup_null(const char *s, char **dst);
/* The same, returning 0 or -ENOMEM; *ret is untouched on failure. */
int ks_asprintf_r(char **ret, const char *fmt, ...) _printf_(2, 3);
int ks_vasprintf_r(char **ret, const char *fmt, va_list ap) _printf_(2, 0);
/* The first error is the cause: formats into *error only while it is NULL. 0 when *error holds
 * a message (this one or an earlier one), -ENOMEM when formatting failed (*error stays NULL). */
int ks_set_first_errorf(char **error, const char *fmt, ...) _printf_(2, 3);
int ks_set_first_verrorf(char **error, const char *fmt, va_list ap) _printf_(2, 0);
/* Module name as the kernel knows it: '-' becomes '_'. In place. */
void ks_module_name_normalize(char *name);
/* Iterates lines of a text buffer: returns length of the line at *pos, advances *pos. */
bool ks_next_line(const char *text, size_t len, size_t *pos, const char **ret_line,
                  size_t *ret_len);

/* A random 128-bit id as 32 lower-case hexadecimal digits (getrandom(2), the kernel's
 * pool), e.g. the identity of a swap. -errno when the kernel gives no random bytes. */
#define KS_ID128_STRING_MAX 33
int ks_id128_random(char ret[static KS_ID128_STRING_MAX]);
/* Whether s is such an id (32 lower-case hexadecimal digits, nothing else). */
bool ks_id128_is_valid(const char *s);
