/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/random.h>

#include "lib/basic/string-table.h"
#include "lib/basic/util.h"

char **ks_strv_free(char **l)
{
    if (!l)
        return NULL;
    for (char **p = l; *p; p++)
        free(*p);
    free(l);
    return NULL;
}

size_t ks_strv_length(char *const *l)
{
    size_t n = 0;
    if (l)
        while (l[n])
            n++;
    return n;
}

int ks_strv_push(char ***l, char *value)
{
    size_t n = ks_strv_length(*l);
    char **nl;

    if (!value)
        return -ENOMEM;
    nl = realloc(*l, (n + 2) * sizeof(char *));
    if (!nl) {
        free(value);
        return -ENOMEM;
    }
    nl[n] = value;
    nl[n + 1] = NULL;
    *l = nl;
    return 0;
}

int ks_strv_extend(char ***l, const char *value)
{
    return ks_strv_push(l, strdup(value));
}

bool ks_strv_contains(char *const *l, const char *value)
{
    if (l)
        for (; *l; l++)
            if (streq(*l, value))
                return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ks_strv_sort(char **l)
{
    size_t n = ks_strv_length(l);
    if (n > 1)
        qsort(l, n, sizeof(char *), cmp_str);
}

typedef struct dup_sort {
    const char *base;
    size_t size;
    int (*cmp)(const void *a, const void *b);
} dup_sort;

static int cmp_index(const void *a, const void *b, void *userdata)
{
    const dup_sort *d = userdata;
    size_t i = *(const size_t *)a, k = *(const size_t *)b;
    int c = d->cmp(d->base + i * d->size, d->base + k * d->size);

    if (c != 0)
        return c;
    return i < k ? -1 : i > k; /* equal elements in their order in the list */
}

int ks_find_duplicate(const void *base, size_t n, size_t size,
                      int (*cmp)(const void *a, const void *b), size_t *ret_index,
                      size_t *ret_earlier)
{
    dup_sort d = {.base = base, .size = size, .cmp = cmp};
    _cleanup_free_ size_t *idx = NULL;
    size_t best = SIZE_MAX, earlier = 0;

    assert(base || n == 0);
    assert(cmp);
    assert(ret_index);
    if (n < 2)
        return 0;
    idx = malloc(n * sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    qsort_r(idx, n, sizeof(*idx), cmp_index, &d);
    /* In each run of equal elements the second in list order is that run's first repeat. */
    for (size_t i = 1; i < n; i++)
        if (cmp(d.base + idx[i - 1] * size, d.base + idx[i] * size) == 0 &&
            (i < 2 || cmp(d.base + idx[i - 2] * size, d.base + idx[i - 1] * size) != 0) &&
            idx[i] < best) {
            best = idx[i];
            earlier = idx[i - 1];
        }
    if (best == SIZE_MAX)
        return 0;
    *ret_index = best;
    if (ret_earlier)
        *ret_earlier = earlier;
    return 1;
}

int ks_strv_split(const char *s, const char *separators, char ***ret)
{
    _cleanup_strv_free_ char **l = NULL;
    int r;

    while (*s) {
        size_t n;
        s += strspn(s, separators);
        n = strcspn(s, separators);
        if (n == 0)
            break;
        r = ks_strv_push(&l, strndup(s, n));
        if (r < 0)
            return r;
        s += n;
    }
    if (!l) {
        l = calloc(1, sizeof(char *));
        if (!l)
            return -ENOMEM;
    }
    *ret = TAKE_PTR(l);
    return 0;
}

char *ks_strv_join(char *const *l, const char *separator)
{
    size_t n = 1, sn = strlen(separator), at = 0;
    char *out;

    for (char *const *i = l; i && *i; i++)
        n += strlen(*i) + sn;
    out = malloc(n);
    if (!out)
        return NULL;
    for (char *const *i = l; i && *i; i++) {
        size_t w = strlen(*i);
        if (i != l) {
            memcpy(out + at, separator, sn);
            at += sn;
        }
        memcpy(out + at, *i, w);
        at += w;
    }
    out[at] = '\0';
    return out;
}

const char *ks_startswith(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

bool ks_endswith(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

char *ks_strstrip(char *s)
{
    char *e;
    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    return s;
}

int ks_safe_atou64(const char *s, unsigned long long *ret)
{
    char *end;
    unsigned long long v;

    if (!s || !isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end != '\0')
        return -EINVAL;
    *ret = v;
    return 0;
}

int ks_safe_atoi(const char *s, int *ret)
{
    char *end;
    long v;

    if (!s || !*s || isspace((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return -ERANGE;
    if (end == s || *end != '\0')
        return -EINVAL;
    *ret = (int)v;
    return 0;
}

int ks_asprintf_r(char **ret, const char *fmt, ...)
{
    va_list ap;
    char *s;
    int r;

    assert(ret);
    assert(fmt);
    va_start(ap, fmt);
    r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int ks_vasprintf_r(char **ret, const char *fmt, va_list ap)
{
    char *s;

    assert(ret);
    assert(fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int ks_set_first_verrorf(char **error, const char *fmt, va_list ap)
{
    assert(error);
    assert(fmt);
    if (*error)
        return 0;
    return ks_vasprintf_r(error, fmt, ap);
}

int ks_set_first_errorf(char **error, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_set_first_verrorf(error, fmt, ap);
    va_end(ap);
    return r;
}

ptrdiff_t ks_string_table_lookup(const char *const *table, size_t n, const char *key)
{
    if (!key)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (table[i] && streq(table[i], key))
            return (ptrdiff_t)i;
    return -EINVAL;
}

char *ks_asprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    int r;

    va_start(ap, fmt);
    r = vasprintf(&s, fmt, ap);
    va_end(ap);
    return r < 0 ? NULL : s;
}

bool ks_next_line(const char *text, size_t len, size_t *pos, const char **ret_line, size_t *ret_len)
{
    const char *nl;
    size_t n;

    if (*pos >= len)
        return false;
    nl = memchr(text + *pos, '\n', len - *pos);
    n = nl ? (size_t)(nl - (text + *pos)) : len - *pos;
    *ret_line = text + *pos;
    *ret_len = n;
    *pos += n + (nl ? 1 : 0);
    return true;
}

void ks_module_name_normalize(char *name)
{
    for (; *name; name++)
        if (*name == '-')
            *name = '_';
}

int ks_id128_random(char ret[static KS_ID128_STRING_MAX])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t bytes[16];
    size_t got = 0;

    /* Blocks only until the pool is initialised (early boot); a signal is retried. */
    while (got < sizeof(bytes)) {
        ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(bytes); i++) {
        ret[2 * i] = hex[bytes[i] >> 4];
        ret[2 * i + 1] = hex[bytes[i] & 0xf];
    }
    ret[32] = '\0';
    return 0;
}

bool ks_id128_is_valid(const char *s)
{
    if (!s || strlen(s) != 32)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return false;
    return true;
}

int ks_strdup_null(const char *s, char **dst)
{
    *dst = s ? strdup(s) : NULL;
    return s && !*dst ? -ENOMEM : 0;
}
