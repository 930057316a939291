/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <string.h>

/*
 * An enum's names in one table, and its to/from-string functions generated from it, as in
 * systemd's src/basic/string-table.h:
 *
 *     static const char *const ks_state_table[_KS_STATE_MAX] = {
 *         [KS_STATE_IDLE] = "idle", ...
 *     };
 *     DEFINE_STRING_TABLE_LOOKUP(ks_state, ks_state);
 *
 * gives `const char *ks_state_to_string(ks_state v)` (NULL for a value out of range or without
 * a name) and `ks_state ks_state_from_string(const char *s)` (the enum's _INVALID value, which
 * must be -EINVAL, for NULL or an unknown name).
 */
ptrdiff_t ks_string_table_lookup(const char *const *table, size_t n, const char *key);

#define _DEFINE_STRING_TABLE_TO_STRING(name, type, scope)                                          \
    scope const char *name##_to_string(type v)                                                     \
    {                                                                                              \
        if ((size_t)v >= sizeof(name##_table) / sizeof(name##_table[0]))                           \
            return NULL;                                                                           \
        return name##_table[v];                                                                    \
    }

#define _DEFINE_STRING_TABLE_FROM_STRING(name, type, scope)                                        \
    scope type name##_from_string(const char *s)                                                   \
    {                                                                                              \
        ptrdiff_t i = ks_string_table_lookup(name##_table,                                         \
                                             sizeof(name##_table) / sizeof(name##_table[0]), s);   \
        return i < 0 ? (type)-EINVAL : (type)i;                                                    \
    }

#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                           \
    _DEFINE_STRING_TABLE_TO_STRING(name, type, )
#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)                                         \
    _DEFINE_STRING_TABLE_FROM_STRING(name, type, )
#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                                     \
    _DEFINE_STRING_TABLE_TO_STRING(name, type, )                                                   \
    _DEFINE_STRING_TABLE_FROM_STRING(name, type, )
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                   \
    _DEFINE_STRING_TABLE_TO_STRING(name, type, static)
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP(name, type)                                             \
    _DEFINE_STRING_TABLE_TO_STRING(name, type, static)                                             \
    _DEFINE_STRING_TABLE_FROM_STRING(name, type, static)
