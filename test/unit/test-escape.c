/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Control characters from data never reach the terminal raw (PRETTY_NAME, GRUB titles). */
#include "lib/basic/escape.h"
#include "lib/basic/util.h"
#include "test.h"

static const struct {
    const char *name, *in, *out;
} cases[] = {
    {"plain", "Debian GNU/Linux 12 (bookworm)", "Debian GNU/Linux 12 (bookworm)"},
    {"UTF-8 stays", "Ubuntu 24.04 \xc2\xb7 caf\xc3\xa9 \xe2\x80\x94",
     "Ubuntu 24.04 \xc2\xb7 caf\xc3\xa9 \xe2\x80\x94"},
    {"CSI clear screen", "x\x1b[2J\x1b[H", "x\\x1b[2J\\x1b[H"},
    {"OSC title", "\x1b]0;owned\x07", "\\x1b]0;owned\\x07"},
    {"newline and CR", "a\nb\rc", "a\\x0ab\\x0dc"},
    {"tab", "a\tb", "a\\x09b"},
    {"DEL", "a\x7f", "a\\x7f"},
    {"C1 CSI (U+009B)",
     "a\xc2\x9b"
     "2J",
     "a\\x9b2J"},
    {"backslash doubled", "a\\x1b", "a\\\\x1b"},
    {"empty", "", ""},
};

int main(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *e = ks_escape_text(cases[i].in);
        CHECK_MSG(e && streq(e, cases[i].out), "%s: '%s'", cases[i].name, strempty(e));
        CHECK_STREQ(ks_esc(cases[i].in), cases[i].out);
    }
    CHECK(ks_escape_text(NULL) == NULL);
    CHECK_STREQ(ks_esc(NULL), "");
    TEST_DONE();
}
