/* SPDX-License-Identifier: GPL-2.0-or-later */
/* UTC times as the journal writes them. */
#include <errno.h>
#include <limits.h>

#include "lib/basic/time-util.h"
#include "lib/basic/util.h"
#include "test.h"

int main(void)
{
    static const struct {
        time_t t;
        const char *utc;
    } cases[] = {
        {0, "1970-01-01T00:00:00Z"},
        {1795996800, "2026-11-30T00:00:00Z"},
        {1795996800 + 3723, "2026-11-30T01:02:03Z"},
        {951782400, "2000-02-29T00:00:00Z"}, /* leap day */
        {4102444799, "2099-12-31T23:59:59Z"},
        /* A year that does not fit the format: the epoch, never a truncated string. */
        {LLONG_MAX, "1970-01-01T00:00:00Z"},
    };
    char buf[KS_UTC_MAX];

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *s = NULL;

        CHECK_STREQ(ks_format_utc(cases[i].t, buf), cases[i].utc);
        CHECK_INTEQ(ks_utc_string(cases[i].t, &s), 0);
        CHECK_STREQ(s, cases[i].utc);
        if (cases[i].t != LLONG_MAX) {
            time_t back = -1;
            CHECK_INTEQ(ks_parse_utc(cases[i].utc, &back), 0);
            CHECK_MSG(back == cases[i].t, "case %zu: parsed %lld", i, (long long)back);
        }
    }

    /* Anything but the exact form is refused, and the output is untouched. */
    static const char *const bad[] = {
        "",
        "2026-11-30T07:50:00",   /* no Z */
        "2026-11-30T07:50:00Z ", /* trailing */
        " 2026-11-30T07:50:00Z", /* leading */
        "2026-11-30 07:50:00Z",
        "2026-13-30T07:50:00Z", /* month 13 */
        "2026-11-30T25:50:00Z",
        "yesterday at noon...",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        time_t t = 42;
        CHECK_MSG(ks_parse_utc(bad[i], &t) == -EINVAL, "'%s' accepted", bad[i]);
        CHECK(t == 42);
    }
    {
        time_t t = 42;
        CHECK(ks_parse_utc(NULL, &t) == -EINVAL && t == 42);
    }
    TEST_DONE();
}
