/* SPDX-License-Identifier: GPL-2.0-or-later */
/* UTC times as the journal writes them. */
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
    }
    TEST_DONE();
}
