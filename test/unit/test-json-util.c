/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The JSON builder's one error rule: the document, or NULL when any call failed. */
#include "lib/basic/json-util.h"
#include "lib/basic/util.h"
#include "test.h"

static const char *text(json_object *o)
{
    return json_object_to_json_string_ext(o,
                                          JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* ks_json_parse_document: a whole untrusted document as one value, or why not. */
static const struct {
    const char *text;
    size_t len; /* 0: strlen(text) */
    size_t max;
    size_t containers, values; /* 0: no bound */
    int ret;
    const char *error; /* NULL: parses */
} documents[] = {
    {"{\"a\": 1}\n  ", 0, 100, 0, 0, 0, NULL},
    {"{\"a\": 1} x", 0, 100, 0, 0, -EBADMSG, "not valid JSON: trailing data at byte 9"},
    {"{\"a\"", 0, 100, 0, 0, -EBADMSG, "not valid JSON: unexpected end of input"},
    {"null\n", 0, 100, 0, 0, -EBADMSG, "not a JSON object"},
    {"{}\0{}", 5, 100, 0, 0, -EBADMSG, "contains a NUL byte"},
    {"{\"a\": 1}", 0, 4, 0, 0, -EBADMSG, "larger than 4 bytes"},
    {"", 0, 100, 0, 0, -EBADMSG, "not valid JSON: unexpected end of input"},
    /* The limits, counted on the text: each key and value, each object and array. */
    {"{\"a\": [{}, {}], \"b\": {}}", 0, 100, 5, 0, 0, NULL},
    {"{\"a\": [{}, {}], \"b\": {}}", 0, 100, 3, 0, -EBADMSG,
     "holds more than 3 objects and arrays"},
    {"{\"a\": [1, -2, true, false, null, \"x\"]}", 0, 100, 0, 9, 0, NULL},
    {"{\"a\": [1, -2, true, false, null, \"x\"]}", 0, 100, 0, 7, -EBADMSG,
     "holds more than 7 values"},
    /* Brackets, quotes and digits inside strings are text, not values. */
    {"{\"a\": \"[{\\\"1, 2, [[\"}", 0, 100, 1, 3, 0, NULL},
    {"[[[[[]]]]]", 0, 100, 4, 0, -EBADMSG, "holds more than 4 objects and arrays"},
};

static void test_documents(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(documents); i++) {
        json_object *o = NULL;
        char *why = NULL;
        size_t len = documents[i].len ? documents[i].len : strlen(documents[i].text);
        ks_json_limits limits = {.bytes = documents[i].max,
                                 .containers =
                                     documents[i].containers ? documents[i].containers : SIZE_MAX,
                                 .values = documents[i].values ? documents[i].values : SIZE_MAX};
        int r = ks_json_parse_document(documents[i].text, len, &limits, &o, &why);

        CHECK_MSG(r == documents[i].ret, "document %zu: %d", i, r);
        CHECK_MSG((o != NULL) == (documents[i].ret == 0), "document %zu: value", i);
        CHECK_MSG(streq_ptr(why, documents[i].error), "document %zu: '%s'", i, strempty(why));
        json_object_put(o);
        free(why);
    }
}

/* ks_json_get_u64: a table of values under "k", each with what comes back. */
static void test_get_u64(void)
{
    static const struct {
        const char *doc;
        uint64_t max;
        int ret;
        uint64_t value; /* *ret after it (7: untouched) */
    } t[] = {
        {"{\"k\": 42}", 100, 1, 42},
        {"{\"k\": 0}", 100, 1, 0},
        {"{\"k\": 100}", 100, 1, 100},
        {"{\"k\": 101}", 100, -ERANGE, 7},
        {"{\"k\": -1}", 100, -ERANGE, 7},
        {"{\"k\": 9223372036854775807}", INT64_MAX, 1, INT64_MAX},
        {"{\"k\": 1.5}", 100, -EBADMSG, 7},
        {"{\"k\": \"4\"}", 100, -EBADMSG, 7},
        {"{\"k\": true}", 100, -EBADMSG, 7},
        {"{\"k\": null}", 100, 0, 7},
        {"{\"other\": 1}", 100, 0, 7},
        {"[1]", 100, 0, 7},
    };

    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        json_object *o = json_tokener_parse(t[i].doc);
        uint64_t v = 7;
        int r = ks_json_get_u64(o, "k", t[i].max, &v);
        CHECK_MSG(r == t[i].ret && v == t[i].value, "%s: %d %llu", t[i].doc, r,
                  (unsigned long long)v);
        json_object_put(o);
    }
    {
        char *d = (char *)"x";
        CHECK(ks_strdup_null(NULL, &d) == 0 && d == NULL);
        CHECK(ks_strdup_null("ab", &d) == 0 && d && strcmp(d, "ab") == 0);
        free(d);
    }
}

int main(void)
{
    test_get_u64();
    {
        /* Every kind of value; NULL strings are null, not failures. */
        ks_json_builder b = {0};
        json_object *o = ks_jb_object(&b), *a = ks_jb_array(&b);

        ks_jb_add(&b, o, "s", ks_jb_string(&b, "a/b"));
        ks_jb_add(&b, o, "n", ks_jb_string(&b, NULL));
        ks_jb_add(&b, o, "i", ks_jb_int(&b, -5));
        ks_jb_add(&b, o, "t", ks_jb_bool(&b, true));
        ks_jb_add(&b, o, "b", ks_jb_base64(&b, "\x00\x01\x02\xff", 4));
        ks_jb_push(&b, a, ks_jb_int(&b, 1));
        ks_jb_push(&b, a, ks_jb_string(&b, "x"));
        ks_jb_add(&b, o, "a", a);
        o = ks_jb_finish(&b, o);
        CHECK(o != NULL && !b.failed);
        CHECK_STREQ(
            o ? text(o) : NULL,
            "{\"s\":\"a/b\",\"n\":null,\"i\":-5,\"t\":true,\"b\":\"AAEC/w==\",\"a\":[1,\"x\"]}");
        json_object_put(o);
    }
    {
        /* A null in an array is a failure: the whole document goes. */
        ks_json_builder b = {0};
        json_object *a = ks_jb_array(&b);

        ks_jb_push(&b, a, ks_jb_int(&b, 1));
        ks_jb_push(&b, a, NULL);
        CHECK(b.failed);
        CHECK(ks_jb_finish(&b, a) == NULL);
    }
    {
        /* A failed object (NULL) takes its values with it and fails the document. */
        ks_json_builder b = {0};
        json_object *top = ks_jb_object(&b);

        ks_jb_add(&b, NULL, "k", ks_jb_string(&b, "lost"));
        CHECK(b.failed);
        b.failed = false;
        ks_jb_push(&b, NULL, ks_jb_int(&b, 2));
        CHECK(b.failed);
        CHECK(ks_jb_finish(&b, top) == NULL);
        CHECK(ks_jb_finish(&(ks_json_builder){0}, NULL) == NULL);
    }
    {
        /* A list of strings is an array, NULL the empty one; a part that failed elsewhere
         * (NULL) fails this document too, where a NULL value would be null. */
        ks_json_builder b = {0};
        json_object *o = ks_jb_object(&b);
        char *const l[] = {"a", "b\"c", NULL};

        ks_jb_add(&b, o, "l", ks_jb_strv(&b, l));
        ks_jb_add(&b, o, "e", ks_jb_strv(&b, NULL));
        ks_jb_add(&b, o, "p", ks_jb_part(&b, ks_jb_strv(&(ks_json_builder){0}, l + 1)));
        CHECK(!b.failed);
        ks_jb_add(&b, o, "q", ks_jb_part(&b, NULL));
        CHECK(b.failed);
        b.failed = false;
        o = ks_jb_finish(&b, o);
        CHECK_STREQ(o ? text(o) : NULL,
                    "{\"l\":[\"a\",\"b\\\"c\"],\"e\":[],\"p\":[\"b\\\"c\"],\"q\":null}");
        json_object_put(o);
    }
    test_documents();
    TEST_DONE();
}
