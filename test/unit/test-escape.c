/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text from data on its way to a terminal and into JSON (issue 34, items 5 and 6): control
 * characters, C1, invalid UTF-8 and, outside a UTF-8 locale, every byte above ASCII never reach
 * the terminal raw; JSON is valid UTF-8; cuts fall between characters.
 */
#include "lib/basic/escape.h"
#include "lib/basic/util.h"
#include "test.h"

#define U8 KS_ESCAPE_UTF8
#define NL KS_ESCAPE_KEEP_NEWLINE

static const struct {
    const char *name;
    const char *in;
    size_t len; /* 0: strlen(in) */
    unsigned flags;
    const char *out;
} terminal[] = {
    {"plain", "Debian GNU/Linux 12 (bookworm)", 0, U8, "Debian GNU/Linux 12 (bookworm)"},
    {"UTF-8 stays", "Ubuntu 24.04 \xc2\xb7 caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x90\xa7", 0, U8,
     "Ubuntu 24.04 \xc2\xb7 caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x90\xa7"},
    {"UTF-8 in the C locale", "caf\xc3\xa9", 0, 0, "caf\\xc3\\xa9"},
    {"CSI clear screen", "x\x1b[2J\x1b[H", 0, U8, "x\\x1b[2J\\x1b[H"},
    {"OSC title", "\x1b]0;owned\x07", 0, U8, "\\x1b]0;owned\\x07"},
    {"interface ESC BEL 0xff", "wg\x1b[31m\x07\xff", 0, U8, "wg\\x1b[31m\\x07\\xff"},
    {"interface 0xff, C locale", "wg\xff", 0, 0, "wg\\xff"},
    {"newline and CR", "a\nb\rc", 0, U8, "a\\x0ab\\x0dc"},
    {"newline kept when asked, CR never", "a\nb\rc", 0, U8 | NL, "a\nb\\x0dc"},
    {"tab", "a\tb", 0, U8 | NL, "a\\x09b"},
    {"DEL", "a\x7f", 0, U8, "a\\x7f"},
    {"C1 CSI (U+009B) in UTF-8",
     "a\xc2\x9b"
     "2J",
     0, U8, "a\\x9b2J"},
    {"C1 CSI as a raw byte",
     "a\x9b"
     "2J",
     0, U8, "a\\x9b2J"},
    {"C1 CSI as a raw byte, C locale",
     "a\x9b"
     "2J",
     0, 0, "a\\x9b2J"},
    {"U+00A0 is not C1",
     "a\xc2\xa0"
     "b",
     0, U8,
     "a\xc2\xa0"
     "b"},
    {"right-to-left override",
     "abc\xe2\x80\xae"
     "def",
     0, U8, "abc\\u202edef"},
    {"first strong isolate", "\xe2\x81\xa8x", 0, U8, "\\u2068x"},
    {"overlong slash", "a\xc0\xaf", 0, U8, "a\\xc0\\xaf"},
    {"surrogate", "\xed\xa0\x80", 0, U8, "\\xed\\xa0\\x80"},
    {"above U+10FFFF", "\xf4\x90\x80\x80", 0, U8, "\\xf4\\x90\\x80\\x80"},
    {"a character cut at the end", "ab\xe2\x80", 0, U8, "ab\\xe2\\x80"},
    {"a stray continuation byte", "\x80x", 0, U8, "\\x80x"},
    {"NUL inside a length", "a\0b", 3, U8, "a\\x00b"},
    {"backslash doubled", "a\\x1b", 0, U8, "a\\\\x1b"},
    {"empty", "", 0, U8, ""},
};

static const struct {
    const char *name, *in, *out;
} sanitize[] = {
    {"valid", "wg0 caf\xc3\xa9", "wg0 caf\xc3\xa9"},
    {"0xff", "wg\xff", "wg\xef\xbf\xbd"},
    {"cut character", "ab\xe2\x80", "ab\xef\xbf\xbd\xef\xbf\xbd"},
    {"overlong", "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
    {"controls stay (JSON escapes them)", "\x1b[31m\x07", "\x1b[31m\x07"},
};

static const struct {
    const char *name, *in;
    size_t max, cut;
} cuts[] = {
    {"short enough", "abc", 10, 3},
    {"ASCII", "abcdef", 4, 4},
    {"before a 2-byte character", "abc\xc3\xa9", 4, 3},
    {"after it", "abc\xc3\xa9x", 5, 5},
    {"inside a 4-byte character", "a\xf0\x9f\x90\xa7", 3, 1},
    {"inside a 4-byte character, last byte", "a\xf0\x9f\x90\xa7", 4, 1},
    {"not UTF-8: where asked", "a\x80\x80\x80\x80\x80", 5, 5},
};

int main(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(terminal); i++) {
        size_t len = terminal[i].len ? terminal[i].len : strlen(terminal[i].in);
        _cleanup_free_ char *e = ks_escape_terminal(terminal[i].in, len, terminal[i].flags);
        CHECK_MSG(e && streq(e, terminal[i].out), "%s: '%s'", terminal[i].name, strempty(e));
        /* what comes out is printable: no control byte but a kept newline, valid UTF-8 */
        for (const char *p = e; p && *p; p++)
            CHECK_MSG((unsigned char)*p >= 0x20 && *p != 0x7f ? true : *p == '\n',
                      "%s: byte 0x%02x comes out", terminal[i].name, (unsigned char)*p);
        CHECK_MSG(e && ks_utf8_is_valid(e, strlen(e)), "%s: not UTF-8", terminal[i].name);
        if (!(terminal[i].flags & U8))
            for (const char *p = e; p && *p; p++)
                CHECK_MSG((unsigned char)*p < 0x80, "%s: byte above ASCII in the C locale",
                          terminal[i].name);
    }
    /* The older names: UTF-8, newlines escaped. */
    CHECK_STREQ(ks_esc("a\nb\x1b"), "a\\x0ab\\x1b");
    CHECK(ks_escape_text(NULL) == NULL);
    CHECK_STREQ(ks_esc(NULL), "");

    for (size_t i = 0; i < ARRAY_SIZE(sanitize); i++) {
        size_t n = 0;
        _cleanup_free_ char *s = ks_utf8_sanitize(sanitize[i].in, strlen(sanitize[i].in), &n);
        CHECK_MSG(s && streq(s, sanitize[i].out) && n == strlen(s), "sanitize %s: '%s'",
                  sanitize[i].name, strempty(s));
        CHECK(s && ks_utf8_is_valid(s, n));
    }
    for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
        size_t n = ks_utf8_cut(cuts[i].in, strlen(cuts[i].in), cuts[i].max);
        CHECK_MSG(n == cuts[i].cut, "cut %s: %zu, expected %zu", cuts[i].name, n, cuts[i].cut);
    }
    CHECK(ks_utf8_skip_partial("\x9f\x90\xa7x", 4) == 3);
    CHECK(ks_utf8_skip_partial("\x80\x80\x80\x80", 4) == 3);
    CHECK(ks_utf8_skip_partial("ab", 2) == 0);
    CHECK(ks_utf8_is_valid("", 0));
    CHECK(!ks_utf8_is_valid("\xff", 1));
    TEST_DONE();
}
