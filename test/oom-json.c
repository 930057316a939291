/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * LD_PRELOAD for test-json-oom.py: the KS_FAIL_NTH-th call (from 1) of json-c's building functions
 * fails once, as out of memory does; said on stderr, and the number of calls at exit.
 */
#include <dlfcn.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long calls;

static int fail_now(const char *what)
{
    const char *e = getenv("KS_FAIL_NTH");
    if (!e || ++calls != atol(e))
        return 0;
    fprintf(stderr, "oom-shim: failing call %ld (%s)\n", calls, what);
    return 1;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

json_object *json_object_new_string(const char *s)
{
    return fail_now("new_string") ? NULL : NEXT(json_object_new_string)(s);
}
json_object *json_object_new_int64(int64_t v)
{
    return fail_now("new_int64") ? NULL : NEXT(json_object_new_int64)(v);
}
json_object *json_object_new_boolean(json_bool v)
{
    return fail_now("new_boolean") ? NULL : NEXT(json_object_new_boolean)(v);
}
json_object *json_object_new_object(void)
{
    return fail_now("new_object") ? NULL : NEXT(json_object_new_object)();
}
json_object *json_object_new_array(void)
{
    return fail_now("new_array") ? NULL : NEXT(json_object_new_array)();
}
int json_object_object_add(json_object *o, const char *k, json_object *v)
{
    return fail_now("object_add") ? -1 : NEXT(json_object_object_add)(o, k, v);
}
int json_object_array_add(json_object *a, json_object *v)
{
    return fail_now("array_add") ? -1 : NEXT(json_object_array_add)(a, v);
}

__attribute__((destructor)) static void report(void)
{
    if (getenv("KS_FAIL_NTH"))
        fprintf(stderr, "oom-shim: %ld calls\n", calls);
}
