/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/debversion.h"

/* dpkg's order(): '~' before everything, even the end; letters before other characters. */
static int order(int c)
{
    if (isdigit(c))
        return 0;
    if (isalpha(c))
        return c;
    if (c == '~')
        return -1;
    if (c)
        return c + 256;
    return 0;
}

/* dpkg's verrevcmp (lib/dpkg/version.c). */
static int verrevcmp(const char *a, const char *b)
{
    while (*a || *b) {
        int first_diff = 0;

        while ((*a && !isdigit((unsigned char)*a)) || (*b && !isdigit((unsigned char)*b))) {
            int ac = order((unsigned char)*a), bc = order((unsigned char)*b);
            if (ac != bc)
                return ac - bc;
            a++;
            b++;
        }
        while (*a == '0')
            a++;
        while (*b == '0')
            b++;
        while (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            if (!first_diff)
                first_diff = *a - *b;
            a++;
            b++;
        }
        if (isdigit((unsigned char)*a))
            return 1;
        if (isdigit((unsigned char)*b))
            return -1;
        if (first_diff)
            return first_diff;
    }
    return 0;
}

typedef struct version {
    unsigned long epoch;
    char *upstream; /* points into buf */
    const char *revision;
    char *buf;
} version;

/* dpkg's parseversion: [epoch:]upstream[-revision], the revision after the last '-'. */
static int parse_version(const char *s, version *ret)
{
    version v = {};
    char *colon, *hyphen, *p;

    while (isspace((unsigned char)*s))
        s++;
    v.buf = strdup(s);
    if (!v.buf)
        return -ENOMEM;
    for (p = v.buf + strlen(v.buf); p > v.buf && isspace((unsigned char)p[-1]); p--)
        p[-1] = '\0';
    v.upstream = v.buf;
    colon = strchr(v.buf, ':');
    if (colon) {
        bool digits = colon > v.buf;
        for (p = v.buf; p < colon; p++)
            digits = digits && isdigit((unsigned char)*p);
        if (digits && colon - v.buf < 10) {
            v.epoch = strtoul(v.buf, NULL, 10);
            v.upstream = colon + 1;
        }
    }
    hyphen = strrchr(v.upstream, '-');
    v.revision = "";
    if (hyphen) {
        *hyphen = '\0';
        v.revision = hyphen + 1;
    }
    *ret = v;
    return 0;
}

int ks_deb_version_compare(const char *a, const char *b)
{
    version va, vb;
    int r;

    if (parse_version(a, &va) < 0)
        return strcmp(a, b);
    if (parse_version(b, &vb) < 0) {
        free(va.buf);
        return strcmp(a, b);
    }
    if (va.epoch != vb.epoch)
        r = va.epoch > vb.epoch ? 1 : -1;
    else {
        r = verrevcmp(va.upstream, vb.upstream);
        if (r == 0)
            r = verrevcmp(va.revision, vb.revision);
    }
    free(va.buf);
    free(vb.buf);
    return r > 0 ? 1 : r < 0 ? -1 : 0;
}
