/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "lib/basic/alloc-util.h"
#include "lib/basic/findings.h"
#include "lib/basic/string-table.h"
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
        {"0", 0, 0},        {"10", 0, 10},      {"-1", 0, -1},      {"", -EINVAL, 0},
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

static void test_greedy_realloc(void)
{
    static const struct {
        size_t need;    /* elements asked for, one call after the other */
        bool ok;        /* the call succeeds */
        size_t min_cap; /* capacity at least this afterwards */
        bool zeroed;    /* GREEDY_REALLOC0: the new elements read 0 */
    } cases[] = {
        {1, true, 1, true},
        {8, true, 8, true},
        {9, true, 9, true},
        {1000, true, 1000, true},
        {3, true, 1000, true}, /* never shrinks */
        {SIZE_MAX / 4, false, 1000, true},
    };
    _cleanup_free_ int *a = NULL;
    size_t cap = 0;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t before = a ? cap : 0;
        bool ok = GREEDY_REALLOC0(a, cap, cases[i].need);
        CHECK_INTEQ(ok, cases[i].ok);
        CHECK(cap >= cases[i].min_cap);
        if (ok && cases[i].zeroed)
            for (size_t k = before; k < cap; k++)
                CHECK_INTEQ(a[k], 0);
        for (size_t k = 0; k < cap; k++)
            a[k] = (int)k + 1; /* later calls must keep these */
        for (size_t k = 0; k < cap; k++)
            CHECK_INTEQ(a[k], (int)k + 1);
    }
}

typedef enum {
    COLOUR_RED,
    COLOUR_GREEN,
    COLOUR_BLUE,
    _COLOUR_MAX,
    _COLOUR_INVALID = -EINVAL
} colour;
static const char *const colour_table[_COLOUR_MAX] = {
    [COLOUR_RED] = "red", [COLOUR_BLUE] = "blue", /* GREEN has no name */
};
DEFINE_PRIVATE_STRING_TABLE_LOOKUP(colour, colour);

static void test_string_table(void)
{
    static const struct {
        const char *name; /* looked up with _from_string */
        colour value;     /* what it gives */
        const char *back; /* _to_string of value */
    } cases[] = {
        {"red", COLOUR_RED, "red"},       {"blue", COLOUR_BLUE, "blue"},
        {"green", _COLOUR_INVALID, NULL}, {"", _COLOUR_INVALID, NULL},
        {"RED", _COLOUR_INVALID, NULL},   {NULL, _COLOUR_INVALID, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        colour c = colour_from_string(cases[i].name);
        CHECK_INTEQ(c, cases[i].value);
        CHECK_STREQ(colour_to_string(c), cases[i].back);
    }
    CHECK(colour_to_string(COLOUR_GREEN) == NULL);
    CHECK(colour_to_string(_COLOUR_MAX) == NULL);
}

static void test_asprintf(void)
{
    char *s = (char *)"untouched";
    CHECK_INTEQ(ks_asprintf_r(&s, "%s-%d", "a", 7), 0);
    CHECK_STREQ(s, "a-7");
    free(s);
}

static void test_set_first_error(void)
{
    char *e = NULL;

    CHECK_INTEQ(ks_set_first_errorf(&e, "first %d", 1), 0);
    CHECK_STREQ(e, "first 1");
    CHECK_INTEQ(ks_set_first_errorf(&e, "second %d", 2), 0); /* the first one stays */
    CHECK_STREQ(e, "first 1");
    free(e);
}

static void test_id128(void)
{
    char a[KS_ID128_STRING_MAX], b[KS_ID128_STRING_MAX];
    static const char *const bad[] = {
        "",
        "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0",
        "0123456789ABCDEF0123456789abcdef",
        "0123456789abcdef0123456789abcdeg",
        "01234567-89ab-cdef-0123-456789abcdef",
        " 123456789abcdef0123456789abcdef",
    };

    CHECK(ks_id128_random(a) == 0 && ks_id128_random(b) == 0);
    CHECK(ks_id128_is_valid(a) && ks_id128_is_valid(b));
    CHECK(!streq(a, b)); /* 2^-128 */
    CHECK(ks_id128_is_valid("0123456789abcdef0123456789abcdef"));
    CHECK(!ks_id128_is_valid(NULL));
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        CHECK_MSG(!ks_id128_is_valid(bad[i]), "'%s' is not an id", bad[i]);
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ks_find_duplicate: the first repeat in list order, whatever the sort does with the rest. */
static void test_find_duplicate(void)
{
    static const struct {
        const char *list[8]; /* NULL-terminated */
        int ret;
        size_t index, earlier;
    } cases[] = {
        {{NULL}, 0, 0, 0},
        {{"a", NULL}, 0, 0, 0},
        {{"a", "b", "c", NULL}, 0, 0, 0},
        {{"a", "a", NULL}, 1, 1, 0},
        {{"b", "a", "c", "a", NULL}, 1, 3, 1},
        /* two repeats: the one that comes first in the list */
        {{"z", "y", "x", "y", "z", NULL}, 1, 3, 1},
        {{"a", "b", "b", "a", NULL}, 1, 2, 1},
        {{"c", "c", "c", NULL}, 1, 1, 0},
        {{"q", "p", "o", "n", "m", "q", "n", NULL}, 1, 5, 0},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t n = 0, index = 99, earlier = 99;
        int r;

        while (cases[i].list[n])
            n++;
        r = ks_find_duplicate(cases[i].list, n, sizeof(char *), cmp_strp, &index, &earlier);
        CHECK_MSG(r == cases[i].ret, "duplicate case %zu: %d", i, r);
        if (r > 0)
            CHECK_MSG(index == cases[i].index && earlier == cases[i].earlier,
                      "duplicate case %zu: %zu (of %zu), expected %zu (of %zu)", i, index, earlier,
                      cases[i].index, cases[i].earlier);
        else
            CHECK_MSG(index == 99, "duplicate case %zu: index set without a duplicate", i);
    }
}

int main(void)
{
    test_find_duplicate();
    test_id128();
    test_greedy_realloc();
    test_string_table();
    test_asprintf();
    test_set_first_error();
    test_split();
    test_numbers();
    test_lines();
    test_findings();
    TEST_DONE();
}
