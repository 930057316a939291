/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/escape.h"

size_t ks_utf8_char(const char *s, size_t len, uint32_t *ret_cp)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp, min;
    size_t n;

    if (len == 0)
        return 0;
    if (p[0] < 0x80) {
        n = 1, cp = p[0], min = 0;
    } else if ((p[0] & 0xe0) == 0xc0) {
        n = 2, cp = p[0] & 0x1f, min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3, cp = p[0] & 0x0f, min = 0x800;
    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4, cp = p[0] & 0x07, min = 0x10000;
    } else {
        return 0; /* a continuation byte, or 0xf8..0xff */
    }
    if (n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, beyond Unicode, a surrogate */
    if (ret_cp)
        *ret_cp = cp;
    return n;
}

bool ks_utf8_is_valid(const char *s, size_t len)
{
    for (size_t i = 0, n; i < len; i += n) {
        n = ks_utf8_char(s + i, len - i, NULL);
        if (n == 0)
            return false;
    }
    return true;
}

static bool is_bidi_control(uint32_t cp)
{
    return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static char *put_hex(char *o, const char *prefix, uint32_t v, int digits)
{
    static const char hex[] = "0123456789abcdef";

    while (*prefix)
        *o++ = *prefix++;
    for (int d = digits - 1; d >= 0; d--)
        *o++ = hex[(v >> (4 * d)) & 15];
    return o;
}

char *ks_escape_terminal(const char *s, size_t len, unsigned flags)
{
    char *out, *o;

    assert(s || len == 0);
    /* The longest form is "\xNN" for one byte ("\u202e" is 6 bytes for a 3-byte character). */
    out = malloc(len * 4 + 1);
    if (!out)
        return NULL;
    o = out;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp = 0;
        size_t n;

        if (c == '\n' && (flags & KS_ESCAPE_KEEP_NEWLINE)) {
            *o++ = '\n';
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            o = put_hex(o, "\\x", c, 2);
            i++;
        } else if (c == '\\') {
            *o++ = '\\';
            *o++ = '\\';
            i++;
        } else if (c < 0x80) {
            *o++ = (char)c;
            i++;
        } else if (!(flags & KS_ESCAPE_UTF8) || (n = ks_utf8_char(s + i, len - i, &cp)) == 0) {
            o = put_hex(o, "\\x", c, 2); /* not UTF-8 here: the byte, whatever it is */
            i++;
        } else if (cp <= 0x9f) {
            o = put_hex(o, "\\x", cp, 2); /* C1: U+0080..U+009F */
            i += n;
        } else if (is_bidi_control(cp)) {
            o = put_hex(o, "\\u", cp, 4);
            i += n;
        } else {
            memcpy(o, s + i, n);
            o += n;
            i += n;
        }
    }
    *o = '\0';
    return out;
}

char *ks_escape_text(const char *s)
{
    return s ? ks_escape_terminal(s, strlen(s), KS_ESCAPE_UTF8) : NULL;
}

const char *ks_esc(const char *s)
{
    static _Thread_local char *ring[KS_ESCAPE_RING];
    static _Thread_local unsigned next;
    char *e;

    if (!s)
        return "";
    e = ks_escape_text(s);
    if (!e)
        return "";
    free(ring[next]);
    ring[next] = e;
    next = (next + 1) % KS_ESCAPE_RING;
    return e;
}

char *ks_utf8_sanitize(const char *s, size_t len, size_t *ret_len)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    char *out, *o;

    assert(s || len == 0);
    out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    o = out;
    for (size_t i = 0; i < len;) {
        size_t n = ks_utf8_char(s + i, len - i, NULL);
        if (n == 0) {
            memcpy(o, replacement, 3);
            o += 3;
            i++;
        } else {
            memcpy(o, s + i, n);
            o += n;
            i += n;
        }
    }
    *o = '\0';
    if (ret_len)
        *ret_len = (size_t)(o - out);
    return out;
}

static bool is_continuation(char c)
{
    return ((unsigned char)c & 0xc0) == 0x80;
}

size_t ks_utf8_cut(const char *s, size_t len, size_t max)
{
    size_t n;

    if (len <= max)
        return len;
    n = max;
    /* s[n] is the first byte left out: while it continues a character, that character goes. */
    for (unsigned back = 0; n > 0 && back < 3 && is_continuation(s[n]); back++)
        n--;
    /* Not the start of a character after three steps: not UTF-8 there; cut where asked. */
    return is_continuation(s[n]) ? max : n;
}

size_t ks_utf8_skip_partial(const char *s, size_t len)
{
    size_t n = 0;

    while (n < len && n < 3 && is_continuation(s[n]))
        n++;
    return n;
}
