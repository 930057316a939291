/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/escape.h"

char *ks_escape_text(const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p;
    char *out, *o;

    if (!s)
        return NULL;
    out = malloc(strlen(s) * 4 + 1);
    if (!out)
        return NULL;
    for (p = (const unsigned char *)s, o = out; *p; p++) {
        /* C1 controls are U+0080..U+009F: 0xc2 0x80..0x9f in UTF-8. */
        bool c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
        if (*p < 0x20 || *p == 0x7f || c1) {
            unsigned v = c1 ? p[1] : *p;
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[v >> 4];
            *o++ = hex[v & 15];
            if (c1)
                p++;
        } else if (*p == '\\') {
            *o++ = '\\';
            *o++ = '\\';
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
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
