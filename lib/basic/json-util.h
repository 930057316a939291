/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Building a JSON document with json-c, with one error rule for kswap (the state journal, the
 * commands' --json): calls are not checked one by one; the first one that fails (out of memory)
 * poisons the builder, and ks_jb_finish() gives the document or NULL. A NULL value is JSON null
 * in an object; an array never holds null, so pushing NULL is a failure.
 */
typedef struct ks_json_builder {
    bool failed;
} ks_json_builder;

json_object *ks_jb_string(ks_json_builder *b, const char *s); /* NULL s: null, not a failure */
json_object *ks_jb_base64(ks_json_builder *b, const void *p, size_t len); /* lib/basic/base64.h */
json_object *ks_jb_int(ks_json_builder *b, int64_t v);
json_object *ks_jb_double(ks_json_builder *b, double v); /* not finite: null, not a failure */
json_object *ks_jb_bool(ks_json_builder *b, bool v);
json_object *ks_jb_object(ks_json_builder *b);
json_object *ks_jb_array(ks_json_builder *b);
/* The array of the strings of l (NULL l: the empty array). */
json_object *ks_jb_strv(ks_json_builder *b, char *const *l);
/* A value built and finished elsewhere (NULL: that failed), passed on: NULL is a failure. */
json_object *ks_jb_part(ks_json_builder *b, json_object *v);
/* Adds v (taken over; NULL: null) under key to the object o (NULL o: a failure). */
void ks_jb_add(ks_json_builder *b, json_object *o, const char *key, json_object *v);
/* Appends v (taken over) to the array a. */
void ks_jb_push(ks_json_builder *b, json_object *a, json_object *v);
/* o when every call succeeded; otherwise NULL (o is freed). */
json_object *ks_jb_finish(ks_json_builder *b, json_object *o);

/*
 * o as JSON text that is valid UTF-8 whatever its strings hold: json-c writes a string's bytes
 * as they are (an interface named "wg\xff", a journal cut inside a character), and a consumer
 * (Ansible, jq, Python) refuses the whole document then. Every byte that does not begin a valid
 * UTF-8 character becomes U+FFFD (lib/basic/escape.h). flags: JSON_C_TO_STRING_*. The one way
 * kswap writes a JSON document out; malloc'd, NULL on ENOMEM.
 */
char *ks_json_to_utf8(json_object *o, int flags);

/*
 * A file of kswap's own (the command log, the swap history) as text: o pretty-printed, valid
 * UTF-8 whatever its strings hold (as ks_json_to_utf8), with a final newline. Takes o (NULL:
 * the builder ran out of memory). 0 with *ret malloc'd; -ENOMEM.
 */
int ks_json_file_text(json_object *o, char **ret);

/*
 * What a document of untrusted text may hold before json-c builds its tree: json-c spends about
 * 1 KiB on every object (its hash table) and some 60 bytes on every other value, so a 16 MiB
 * file of "{}," would take 5 GiB and minutes. Counted in one pass over the text first.
 */
typedef struct ks_json_limits {
    size_t bytes;
    size_t containers; /* objects and arrays */
    size_t values;     /* every value and key: containers, strings, numbers, true/false/null */
} ks_json_limits;

/*
 * A whole document of untrusted text as one JSON value (the journal, the swap history): within
 * limits, no NUL byte (json-c would stop there and report success), nothing but white space
 * after the value. 0 with *ret (the caller's reference); -EBADMSG with *ret_error saying what
 * is wrong ("contains a NUL byte", "not valid JSON at byte N: ...", "not a JSON object" for the
 * document null, "holds more than N objects and arrays"); -ENOMEM.
 */
int ks_json_parse_document(const char *text, size_t len, const ks_json_limits *limits,
                           json_object **ret, char **ret_error);
/* Counts what limits bounds, stopping once one is over: 0, or -E2BIG with *ret_error. */
int ks_json_check_limits(const char *text, size_t len, const ks_json_limits *limits,
                         char **ret_error);

/*
 * The text of a JSON file of kswap's own inside root (a history, a log): 0 with *ret_text NULL
 * when the file does not exist; -EBADMSG with *ret_error "larger than MAX bytes" for a file
 * over max; other errors as ks_root_read_file().
 */
struct ks_root;
int ks_json_read_file(const struct ks_root *root, const char *path, size_t max, char **ret_text,
                      size_t *ret_len, char **ret_error);

/*
 * Reading a document of kswap's own back (the state journal, the command log, the swap
 * history): the first error is kept, worded for the operator ("swaps[2]: 'id' is missing"), and
 * running out of memory is remembered apart, so that the reader answers -ENOMEM, not a wording.
 */
typedef struct ks_json_reader {
    char *error; /* the first error, malloc'd */
    bool oom;
} ks_json_reader;

/* Keeps the first error (formatted); returns err. */
int ks_json_reader_fail(ks_json_reader *p, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/*
 * The string under key of the object o into *dst (replacing it; absent or null gives NULL, an
 * error when required); ctx prefixes the error ("commands[3]: "). 0, -EBADMSG, -ENOMEM.
 */
int ks_json_reader_string(ks_json_reader *p, json_object *o, const char *ctx, const char *key,
                          bool required, char **dst);
/* The end of a read that failed with r: -ENOMEM when memory ran out (the error freed), else r
 * with the error handed to *ret_error (freed when ret_error is NULL). */
int ks_json_reader_end(ks_json_reader *p, int r, char **ret_error);

/*
 * A whole number in [0, max] under key in the object o (what the journal, the history and the
 * connections' JSON keep): 1 with *ret; 0 when absent or null (*ret untouched); -EBADMSG when
 * it is not a whole number, -ERANGE when it is out of range.
 */
int ks_json_get_u64(json_object *o, const char *key, uint64_t max, uint64_t *ret);
