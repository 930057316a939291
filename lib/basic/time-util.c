/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/time-util.h"

char *ks_format_utc(time_t t, char buf[static KS_UTC_MAX])
{
    struct tm tm;

    assert(buf);
    if (!gmtime_r(&t, &tm) || strftime(buf, KS_UTC_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, KS_UTC_MAX, "1970-01-01T00:00:00Z");
    return buf;
}

int ks_utc_string(time_t t, char **ret)
{
    char buf[KS_UTC_MAX], *s;

    assert(ret);
    s = strdup(ks_format_utc(t, buf));
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int ks_parse_utc(const char *s, time_t *ret)
{
    struct tm tm = {0};
    const char *end;
    time_t t;

    assert(ret);
    if (!s)
        return -EINVAL;
    /* Exactly the form ks_format_utc() writes: nothing before, nothing after. */
    if (strlen(s) != KS_UTC_MAX - 1)
        return -EINVAL;
    end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!end || *end)
        return -EINVAL;
    t = timegm(&tm);
    if (t == (time_t)-1)
        return -ERANGE;
    *ret = t;
    return 0;
}

long long ks_monotonic_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
