/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Check ids (checks/ids.c): any bytes as names (split on NUL, which no name holds) make an id of
 * one clean word that splits back into the same names; any bytes as an id (a journal, a
 * configured item) unescape, split and upgrade without harm.
 */
#include <stdint.h>

#include "checks/check.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void names_round_trip(const uint8_t *data, size_t size)
{
    char *fields[4] = {NULL};
    _cleanup_free_ char *copy = malloc(size + 1), *id = NULL, *text = NULL;
    _cleanup_strv_free_ char **back = NULL;
    size_t n = 0;

    if (!copy)
        abort();
    memcpy(copy, data, size);
    copy[size] = '\0';
    /* Up to three names, NUL between them. */
    for (char *p = copy; n < 3 && p <= copy + size; p += strlen(p) + 1)
        fields[n++] = p;
    id = ks_check_id_join("nft-chain", fields);
    if (!id)
        abort();
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p <= ' ' || *p == 0x7f || *p == ',' || *p == '"' || *p == '\'')
            abort();
    /* Valid, printable UTF-8: text escaping (which escapes nothing else) leaves it as it is. */
    text = ks_check_text_escape(id, false);
    if (!text || !streq(text, id))
        abort();
    if (ks_check_arg_fields(id + strlen("nft-chain:"), (unsigned)n, &back) < 0 ||
        ks_strv_length(back) != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (!streq(back[i], fields[i]))
            abort();
}

static void any_id(const uint8_t *data, size_t size)
{
    _cleanup_free_ char *text = strndup((const char *)data, size), *plain = NULL, *now = NULL;

    if (!text)
        abort();
    plain = ks_check_id_unescape(text, strlen(text));
    now = ks_check_id_upgrade(text);
    if (!plain || !now || strlen(plain) > strlen(text))
        abort();
    for (unsigned max = 0; max < 5; max++) {
        _cleanup_strv_free_ char **f = NULL;
        if (ks_check_arg_fields(text, max, &f) < 0 || ks_strv_length(f) < 1 ||
            ks_strv_length(f) > (max ? max : 1))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    names_round_trip(data, size);
    any_id(data, size);
    return 0;
}
