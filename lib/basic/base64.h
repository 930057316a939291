/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

/*
 * Base64 (RFC 4648, standard alphabet, padded): the state journal keeps bytes (grubenv, the
 * previous content of a file) as JSON strings.
 */

/* The encoding of len bytes at p, NUL-terminated. 0 or -ENOMEM; *ret untouched on failure. */
int ks_base64_encode(const void *p, size_t len, char **ret);
/*
 * Decodes the len characters at s. Only the padded form is accepted: a length that is a
 * multiple of 4, padding only at the very end ("x=" or "=="), no white space, no NUL.
 * -EBADMSG otherwise, -ENOMEM; *ret (NUL-terminated, for text) and *ret_len untouched on
 * failure.
 */
int ks_base64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len);
