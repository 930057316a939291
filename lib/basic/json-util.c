/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <ctype.h>

#include "lib/basic/base64.h"
#include "lib/basic/escape.h"
#include "lib/basic/fileio.h"
#include "lib/basic/json-util.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"

static json_object *check(ks_json_builder *b, json_object *o)
{
    if (!o)
        b->failed = true;
    return o;
}

json_object *ks_jb_string(ks_json_builder *b, const char *s)
{
    assert(b);
    return s ? check(b, json_object_new_string(s)) : NULL;
}

json_object *ks_jb_base64(ks_json_builder *b, const void *p, size_t len)
{
    _cleanup_free_ char *s = NULL;

    assert(b);
    if (ks_base64_encode(p, len, &s) < 0) {
        b->failed = true;
        return NULL;
    }
    return ks_jb_string(b, s);
}

json_object *ks_jb_int(ks_json_builder *b, int64_t v)
{
    assert(b);
    return check(b, json_object_new_int64(v));
}

json_object *ks_jb_double(ks_json_builder *b, double v)
{
    assert(b);
    /* JSON has no NaN or infinity: a value that is not a number is null. */
    if (!isfinite(v))
        return NULL;
    return check(b, json_object_new_double(v));
}

json_object *ks_jb_bool(ks_json_builder *b, bool v)
{
    assert(b);
    return check(b, json_object_new_boolean(v));
}

json_object *ks_jb_object(ks_json_builder *b)
{
    assert(b);
    return check(b, json_object_new_object());
}

json_object *ks_jb_array(ks_json_builder *b)
{
    assert(b);
    return check(b, json_object_new_array());
}

json_object *ks_jb_strv(ks_json_builder *b, char *const *l)
{
    json_object *a = ks_jb_array(b);

    for (; l && *l; l++)
        ks_jb_push(b, a, ks_jb_string(b, *l));
    return a;
}

json_object *ks_jb_part(ks_json_builder *b, json_object *v)
{
    assert(b);
    return check(b, v);
}

void ks_jb_add(ks_json_builder *b, json_object *o, const char *key, json_object *v)
{
    assert(b);
    assert(key);
    /* No object: its creation failed. */
    if (!o || json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        b->failed = true;
    }
}

void ks_jb_push(ks_json_builder *b, json_object *a, json_object *v)
{
    assert(b);
    if (!a || !v || json_object_array_add(a, v) < 0) {
        json_object_put(v);
        b->failed = true;
    }
}

json_object *ks_jb_finish(ks_json_builder *b, json_object *o)
{
    assert(b);
    if (b->failed || !o) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

char *ks_json_to_utf8(json_object *o, int flags)
{
    const char *s;

    assert(o);
    s = json_object_to_json_string_ext(o, flags);
    if (!s)
        return NULL;
    return ks_utf8_sanitize(s, strlen(s), NULL);
}

int ks_json_file_text(json_object *o, char **ret)
{
    _cleanup_free_ char *s = NULL;
    char *text;

    assert(ret);
    if (!o)
        return -ENOMEM;
    s = ks_json_to_utf8(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                               JSON_C_TO_STRING_NOSLASHESCAPE);
    json_object_put(o);
    text = s ? ks_asprintf("%s\n", s) : NULL;
    if (!text)
        return -ENOMEM;
    *ret = text;
    return 0;
}

static bool all_space(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)s[i]))
            return false;
    return true;
}

int ks_json_check_limits(const char *text, size_t len, const ks_json_limits *limits,
                         char **ret_error)
{
    size_t containers = 0, values = 0;
    bool in_string = false, value_may_start = true;

    assert(text || len == 0);
    assert(limits);
    assert(ret_error);
    for (size_t i = 0; i < len; i++) {
        char c = text[i];

        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            values++;
        } else if (c == '{' || c == '[') {
            containers++;
            values++;
        } else if (value_may_start &&
                   (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n')) {
            values++;
        }
        if (!isspace((unsigned char)c))
            value_may_start = c == '[' || c == ',' || c == ':';
        if (containers > limits->containers) {
            *ret_error = ks_asprintf("holds more than %zu objects and arrays", limits->containers);
            return *ret_error ? -E2BIG : -ENOMEM;
        }
        if (values > limits->values) {
            *ret_error = ks_asprintf("holds more than %zu values", limits->values);
            return *ret_error ? -E2BIG : -ENOMEM;
        }
    }
    return 0;
}

int ks_json_parse_document(const char *text, size_t len, const ks_json_limits *limits,
                           json_object **ret, char **ret_error)
{
    json_tokener *tok;
    json_object *o;
    size_t end;
    char *why = NULL;
    int r;

    assert(text || len == 0);
    assert(limits);
    assert(ret);
    assert(ret_error);
    if (len > limits->bytes)
        why = ks_asprintf("larger than %zu bytes", limits->bytes);
    else if (len > 0 && memchr(text, '\0', len))
        why = strdup("contains a NUL byte");
    else if ((r = ks_json_check_limits(text, len, limits, &why)) < 0) {
        if (r == -ENOMEM)
            return r;
    } else {
        tok = json_tokener_new();
        if (!tok)
            return -ENOMEM;
        o = json_tokener_parse_ex(tok, len > 0 ? text : "", (int)len);
        end = json_tokener_get_parse_end(tok);
        if (!o) {
            enum json_tokener_error e = json_tokener_get_error(tok);
            why = e == json_tokener_success    ? strdup("not a JSON object") /* the document null */
                  : e == json_tokener_continue ? strdup("not valid JSON: unexpected end of input")
                                               : ks_asprintf("not valid JSON at byte %zu: %s", end,
                                                             json_tokener_error_desc(e));
        } else if (end < len && !all_space(text + end, len - end)) {
            json_object_put(o);
            why = ks_asprintf("not valid JSON: trailing data at byte %zu", end);
        } else {
            json_tokener_free(tok);
            *ret = o;
            return 0;
        }
        json_tokener_free(tok);
    }
    if (!why)
        return -ENOMEM;
    *ret_error = why;
    return -EBADMSG;
}

int ks_json_read_file(const ks_root *root, const char *path, size_t max, char **ret_text,
                      size_t *ret_len, char **ret_error)
{
    int r = ks_root_read_file(root, path, max, ret_text, ret_len);

    if (r == -ENOENT) {
        *ret_text = NULL;
        *ret_len = 0;
        return 0;
    }
    if (r == -EFBIG) {
        if (ret_error)
            *ret_error = ks_asprintf("larger than %zu bytes", max);
        return -EBADMSG;
    }
    /* "is a FIFO, not a regular file" rather than what errno that stands for reads as */
    if (r < 0 && ret_error)
        *ret_error = strdup(ks_strerror(r));
    return r;
}

int ks_json_get_u64(json_object *o, const char *key, uint64_t max, uint64_t *ret)
{
    json_object *v = NULL;
    int64_t n;

    assert(key);
    assert(ret);
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return -EBADMSG;
    errno = 0;
    n = json_object_get_int64(v);
    if (errno != 0 || n < 0 || (uint64_t)n > max)
        return -ERANGE;
    *ret = (uint64_t)n;
    return 1;
}

int ks_json_reader_fail(ks_json_reader *p, int err, const char *fmt, ...)
{
    va_list ap;

    if (!p->error) {
        va_start(ap, fmt);
        if (vasprintf(&p->error, fmt, ap) < 0) {
            p->error = NULL;
            p->oom = true;
        }
        va_end(ap);
    }
    return err;
}

int ks_json_reader_string(ks_json_reader *p, json_object *o, const char *ctx, const char *key,
                          bool required, char **dst)
{
    json_object *v = NULL;
    char *copy;

    if (!json_object_object_get_ex(o, key, &v) || !v) {
        free(*dst);
        *dst = NULL;
        return required ? ks_json_reader_fail(p, -EBADMSG, "%s'%s' is missing", ctx, key) : 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return ks_json_reader_fail(p, -EBADMSG, "%s'%s' is not a string", ctx, key);
    copy = strdup(json_object_get_string(v));
    if (!copy) {
        p->oom = true;
        return -ENOMEM;
    }
    free(*dst);
    *dst = copy;
    return 0;
}

int ks_json_reader_end(ks_json_reader *p, int r, char **ret_error)
{
    if (p->oom || r == -ENOMEM) {
        free(p->error);
        p->error = NULL;
        return -ENOMEM;
    }
    if (ret_error)
        *ret_error = p->error;
    else
        free(p->error);
    p->error = NULL;
    return r;
}
