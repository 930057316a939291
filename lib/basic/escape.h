/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Text from data (interface names, PRETTY_NAME, GRUB titles, the journal's reason, a program's
 * output) on its way to a terminal, and into JSON. kswap prints through one layer (cmd/output.c)
 * that passes every string argument through ks_escape_terminal(); JSON documents pass through
 * ks_utf8_sanitize() as they are written out.
 */
typedef enum ks_escape_flags {
    /* The terminal's character set is UTF-8: valid UTF-8 stays as it is (but C1 controls and
     * bidirectional overrides); otherwise every byte above ASCII is escaped too. */
    KS_ESCAPE_UTF8 = 1u << 0,
    /* A newline stays a line break (a program's output, the previous boot's journal). */
    KS_ESCAPE_KEEP_NEWLINE = 1u << 1,
} ks_escape_flags;

/*
 * The first len bytes of s for a terminal: control characters (C0 but a kept newline, DEL, C1
 * whether encoded in UTF-8 or as raw bytes) and bytes that are not valid UTF-8 (or every byte
 * above ASCII without KS_ESCAPE_UTF8) become \xNN, the bidirectional controls U+202A..U+202E
 * and U+2066..U+2069 \uNNNN, a backslash \\, so that nothing from data can move the cursor,
 * retitle the window, ring the bell or reorder the text around it. NULL on ENOMEM.
 */
char *ks_escape_terminal(const char *s, size_t len, unsigned flags);

/* ks_escape_terminal() of a string for a UTF-8 terminal, newlines escaped too (PRETTY_NAME, GRUB
 * titles, file names). NULL in, NULL out; NULL on ENOMEM. */
char *ks_escape_text(const char *s);

/* The same into a ring of buffers owned by the caller's thread, for printf() arguments: valid
 * until KS_ESCAPE_RING further calls; "" for NULL or on ENOMEM. */
#define KS_ESCAPE_RING 8
const char *ks_esc(const char *s);

/*
 * The length of the valid UTF-8 character at s (at most len bytes): 1 to 4, with its code point
 * in *ret_cp (optional); 0 when the bytes there are not one (a stray continuation byte, an
 * overlong form, a surrogate, above U+10FFFF, or cut short by len).
 */
size_t ks_utf8_char(const char *s, size_t len, uint32_t *ret_cp);
/* Whether the first len bytes of s are valid UTF-8 throughout. */
bool ks_utf8_is_valid(const char *s, size_t len);
/*
 * A copy of the first len bytes of s that is valid UTF-8: each byte that does not start a valid
 * character becomes U+FFFD. *ret_len (optional) the copy's length; NULL on ENOMEM.
 */
char *ks_utf8_sanitize(const char *s, size_t len, size_t *ret_len);
/*
 * Where text cut to at most max bytes should end so that no character is cut in two: max
 * (or len when shorter), moved back over up to three continuation bytes of the character that
 * would be cut.
 */
size_t ks_utf8_cut(const char *s, size_t len, size_t max);
/* How many bytes at the start of s belong to a character whose start was cut off (the last
 * bytes of a text kept from its end): up to three continuation bytes. */
size_t ks_utf8_skip_partial(const char *s, size_t len);
