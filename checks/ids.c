/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Check ids that round-trip whatever names hold: "KIND:F1:...:Fn", each field percent-escaped
 * (checks/check.h, ks_check_id_escape()), so that splitting on the first n-1 colons gives the
 * fields back (an nft chain "allow:ssh", an interface named with ESC, a unit with a space).
 */
#include "checks/check.h"
#include "lib/basic/util.h"

/* Length of the valid UTF-8 sequence at s (of at most n bytes), 0 when none starts there;
 * *ret_cp its code point. */
static size_t utf8_len(const unsigned char *s, size_t n, unsigned *ret_cp)
{
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xe0) == 0xc0 ? 2
                 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    unsigned cp;

    if (!len || len > n)
        return 0;
    cp = len == 1 ? s[0] : s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    /* Overlong forms, surrogates, past U+10FFFF. */
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    *ret_cp = cp;
    return len;
}

/* The length of a printable UTF-8 character at s (not a C1 control, U+0080 to U+009F, nor the
 * invisible and bidirectional marks of U+2000 to U+206F and U+FEFF); 0 for anything else. */
static size_t printable_utf8_len(const unsigned char *s, size_t n)
{
    unsigned cp = 0;
    size_t len = utf8_len(s, n, &cp);

    if (!len || cp < 0xa0 || (cp >= 0x2000 && cp <= 0x206f) || cp == 0xfeff)
        return 0;
    return len;
}

/*
 * How many bytes at s an id keeps as they are (0: the byte is escaped): printable ASCII but for
 * the escape itself, kswap.conf's list separators (white space, ','), quotes, and ':' within a
 * field (last: the field is the id's last); a printable UTF-8 character.
 */
static size_t id_kept_len(const unsigned char *s, size_t n, bool last)
{
    if (*s < 0x80)
        return *s > ' ' && *s < 0x7f && !strchr("%,\"'", *s) && (last || *s != ':') ? 1 : 0;
    return printable_utf8_len(s, n);
}

/* The same for text: any printable ASCII, newlines and tabs too when multiline. */
static size_t text_kept_len(const unsigned char *s, size_t n, bool multiline)
{
    if (*s < 0x80)
        return (*s >= ' ' && *s != 0x7f) || (multiline && (*s == '\n' || *s == '\t')) ? 1 : 0;
    return printable_utf8_len(s, n);
}

/* s with each byte that kept() does not keep written as "%XX". */
static char *escape(const char *s, size_t (*kept)(const unsigned char *, size_t, bool), bool flag)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), o = 0;
    char *out = malloc(3 * n + 1);

    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = kept(p + i, n - i, flag);
        if (k) {
            memcpy(out + o, p + i, k);
            o += k;
            i += k;
        } else {
            snprintf(out + o, 4, "%%%02X", p[i]);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

char *ks_check_id_escape(const char *s, bool last)
{
    return escape(s, id_kept_len, last);
}

char *ks_check_text_escape(const char *s, bool multiline)
{
    return escape(s, text_kept_len, multiline);
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

char *ks_check_id_unescape(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        /* "%XX" is one byte; a '%' not followed by two hex digits is itself (an item written
         * by hand, or an id of a kswap that did not escape); "%00" too: no name holds NUL. */
        if (s[i] == '%' && i + 2 < n && (hi = hex_value(s[i + 1])) >= 0 &&
            (lo = hex_value(s[i + 2])) >= 0 && (hi || lo)) {
            out[o++] = (char)(hi << 4 | lo);
            i += 2;
        } else
            out[o++] = s[i];
    }
    out[o] = '\0';
    return out;
}

int ks_check_arg_fields(const char *arg, unsigned max, char ***ret)
{
    _cleanup_strv_free_ char **f = NULL;
    const char *p = arg;

    for (unsigned i = 0;; i++) {
        const char *colon = i + 1 < max ? strchr(p, ':') : NULL;
        int r = ks_strv_push(&f, ks_check_id_unescape(p, colon ? (size_t)(colon - p) : strlen(p)));
        if (r < 0)
            return r;
        if (!colon)
            break;
        p = colon + 1;
    }
    *ret = TAKE_PTR(f);
    return 0;
}

char *ks_check_id_join(const char *kind, char *const *fields)
{
    _cleanup_free_ char *id = strdup(kind);

    for (char *const *f = fields; id && f && *f; f++) {
        _cleanup_free_ char *e = ks_check_id_escape(*f, !f[1]);
        char *next = e ? ks_asprintf("%s:%s", id, e) : NULL;
        free(id);
        id = next;
    }
    return TAKE_PTR(id);
}

char *ks_check_id_upgrade(const char *id)
{
    _cleanup_strv_free_ char **f = NULL;
    const char *arg;
    const ks_check_kind *kind = ks_check_kind_of(id, &arg);

    if (!kind || !arg || !kind->max_fields)
        return strdup(id);
    /* Split as the kswap that wrote it did (the last field takes the rest), never unescaped. */
    for (unsigned i = 0; i < kind->max_fields; i++) {
        const char *colon = i + 1 < kind->max_fields ? strchr(arg, ':') : NULL;
        if (ks_strv_push(&f, strndup(arg, colon ? (size_t)(colon - arg) : strlen(arg))) < 0)
            return NULL;
        if (!colon)
            break;
        arg = colon + 1;
    }
    return ks_check_id_join(kind->name, f);
}
