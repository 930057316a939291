/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int ks_base64_encode(const void *data, size_t len, char **ret)
{
    const unsigned char *p = data;
    char *out, *o;

    assert(data || len == 0);
    assert(ret);
    if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
        return -ENOMEM;
    out = o = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *o++ = i + 2 < len ? alphabet[v & 63] : '=';
    }
    *o = '\0';
    *ret = out;
    return 0;
}

static int value(char c)
{
    const char *p = c ? strchr(alphabet, c) : NULL;
    return p ? (int)(p - alphabet) : -1;
}

int ks_base64_decode(const char *s, size_t n, unsigned char **ret, size_t *ret_len)
{
    size_t len = 0;
    unsigned char *out;

    assert(s || n == 0);
    assert(ret);
    assert(ret_len);
    if (n % 4 != 0)
        return -EBADMSG;
    out = malloc(n / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i += 4) {
        int a = value(s[i]), b = value(s[i + 1]), c, d;
        bool last = i + 4 == n;
        /* Padding only at the very end, and only as "x=" or "=="-shaped tails. */
        c = last && s[i + 2] == '=' && s[i + 3] == '=' ? -2 : value(s[i + 2]);
        d = last && s[i + 3] == '=' && c != -1 ? -2 : value(s[i + 3]);
        if (a < 0 || b < 0 || c == -1 || d == -1) {
            free(out);
            return -EBADMSG;
        }
        out[len++] = (unsigned char)(a << 2 | b >> 4);
        if (c >= 0)
            out[len++] = (unsigned char)((b & 15) << 4 | c >> 2);
        if (c >= 0 && d >= 0)
            out[len++] = (unsigned char)((c & 3) << 6 | d);
    }
    out[len] = '\0';
    *ret = out;
    *ret_len = len;
    return 0;
}
