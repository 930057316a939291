/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The output layer's text functions (lib/basic/escape.h) on any bytes: what goes to a terminal
 * holds no control byte but a kept newline, is valid UTF-8 (ASCII outside a UTF-8 locale);
 * what goes into JSON is valid UTF-8; a cut falls between characters of valid text.
 */
#include <stdint.h>

#include "lib/basic/escape.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned flag_sets[] = {0, KS_ESCAPE_UTF8, KS_ESCAPE_UTF8 | KS_ESCAPE_KEEP_NEWLINE,
                                         KS_ESCAPE_KEEP_NEWLINE};
    const char *s = (const char *)data;
    char *out;
    size_t n;

    for (size_t k = 0; k < ARRAY_SIZE(flag_sets); k++) {
        unsigned flags = flag_sets[k];
        out = ks_escape_terminal(s, size, flags);
        if (!out)
            abort();
        n = strlen(out);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)out[i];
            if ((c < 0x20 && !(c == '\n' && (flags & KS_ESCAPE_KEEP_NEWLINE))) || c == 0x7f)
                abort();
            if (!(flags & KS_ESCAPE_UTF8) && c >= 0x80)
                abort();
        }
        if (!ks_utf8_is_valid(out, n))
            abort();
        free(out);
    }
    out = ks_utf8_sanitize(s, size, &n);
    if (!out || !ks_utf8_is_valid(out, n))
        abort();
    if (ks_utf8_is_valid(s, size) && (n != size || memcmp(out, s, size) != 0))
        abort(); /* valid text passes unchanged */
    free(out);
    for (size_t max = 0; max <= size && max < 16; max++) {
        size_t cut = ks_utf8_cut(s, size, max);
        if (cut > max)
            abort();
        if (ks_utf8_is_valid(s, size) && !ks_utf8_is_valid(s, cut))
            abort();
    }
    return 0;
}
