/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <time.h>

/* Length of an ISO 8601 UTC time as kswap writes it ("2026-11-30T07:50:00Z"), with the NUL. */
#define KS_UTC_MAX 21

/* t as ISO 8601 UTC into buf; the epoch's when t cannot be represented. Returns buf. */
char *ks_format_utc(time_t t, char buf[static KS_UTC_MAX]);
/* The same, as a new string. 0 or -ENOMEM; *ret untouched on failure. */
int ks_utc_string(time_t t, char **ret);
/* The reverse: "2026-11-30T07:50:00Z" to seconds since the epoch. -EINVAL for any other text;
 * *ret untouched on failure. */
int ks_parse_utc(const char *s, time_t *ret);

/* Milliseconds of CLOCK_MONOTONIC: for timeouts and durations, never for dates. */
long long ks_monotonic_ms(void);
