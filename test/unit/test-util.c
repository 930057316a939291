/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/findings.h"
#include "lib/basic/util.h"
#include "test.h"

static void test_split(void)
{
    static const struct {
        const char *in;
        size_t n;
        const char *first, *last;
    } cases[] = {
        {"", 0, NULL, NULL},
        {"   ", 0, NULL, NULL},
        {"a", 1, "a", "a"},
        {" a  b\tc ", 3, "a", "c"},
        {"nf_tables,nf_conntrack", 2, "nf_tables", "nf_conntrack"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_strv_free_ char **l = NULL;
        CHECK(ks_strv_split(cases[i].in, " \t,", &l) == 0);
        CHECK_INTEQ(ks_strv_length(l), cases[i].n);
        if (cases[i].n > 0) {
            CHECK_STREQ(l[0], cases[i].first);
            CHECK_STREQ(l[cases[i].n - 1], cases[i].last);
        }
    }
}

static void test_numbers(void)
{
    static const struct {
        const char *in;
        int ret, value;
    } cases[] = {
        {"0", 0, 0},      {"10", 0, 10},  {"-1", 0, -1},          {"", -EINVAL, 0},
        {" 1", -EINVAL, 0}, {"1 ", -EINVAL, 0}, {"1x", -EINVAL, 0}, {"99999999999", -ERANGE, 0},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int v = 12345;
        int r = ks_safe_atoi(cases[i].in, &v);
        CHECK_MSG(r == cases[i].ret, "'%s' gave %d", cases[i].in, r);
        if (r == 0)
            CHECK_INTEQ(v, cases[i].value);
        else
            CHECK_INTEQ(v, 12345); /* ret_ untouched on failure */
    }
}

static void test_lines(void)
{
    const char *t = "a\n\nbc\nd";
    size_t pos = 0, n;
    const char *l;
    int count = 0;
    while (ks_next_line(t, strlen(t), &pos, &l, &n))
        count++;
    CHECK_INTEQ(count, 4);
}

static void test_findings(void)
{
    ks_findings f = {0};
    CHECK_INTEQ(ks_findings_worst(&f), KS_SEV_OK);
    CHECK(ks_findings_add(&f, "a.b", KS_SEV_WARN, "do x", "value %d", 3) == 0);
    CHECK(ks_findings_add(&f, "c.d", KS_SEV_OK, NULL, "fine") == 0);
    CHECK_INTEQ(ks_findings_worst(&f), KS_SEV_WARN);
    CHECK_STREQ(ks_findings_get(&f, "a.b")->message, "value 3");
    CHECK_STREQ(ks_verdict_to_string(KS_SEV_BLOCK), "blocked");
    ks_findings_clear(&f);
    CHECK_INTEQ(f.n, 0);
}

int main(void)
{
    test_split();
    test_numbers();
    test_lines();
    test_findings();
    TEST_DONE();
}
