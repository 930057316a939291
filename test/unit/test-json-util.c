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

int main(void)
{
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
    TEST_DONE();
}
