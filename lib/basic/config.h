/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/basic/root.h"

/*
 * kswap.conf: INI sections of keys, each key a list of values. A key given again appends
 * (in one file or across drop-ins); an empty value clears what came before. Values of the
 * list getter are split on white space and commas. Read with libinih: comments start a line
 * with ';' or '#', or follow a value after " ;" (and, unlike libinih, after " #" too); lines
 * longer than libinih's 200 bytes are refused instead of being split.
 *
 * Strict: an unknown section, an unknown key or a value that does not fit the key's type is an
 * error (-EBADMSG, "FILE:LINE: why; did you mean 'KEY'?"), so that nothing acts on a misread
 * configuration. Every key is in one table (ks_config_keys(), documented in kswap.conf(5)):
 * this layer's own ([verify], [repository], [apply], [metrics]) and those a layer above
 * registers before reading any configuration (ks_config_register(): the [accept] keys of the
 * acceptance check plug-ins, checks/registry.c), so that this layer need not know them.
 */
typedef struct ks_config ks_config;

#define KS_CONFIG_PATH "/etc/kswap/kswap.conf"
#define KS_CONFIG_DROPIN_DIR "/etc/kswap/kswap.conf.d"
#define KS_VERIFY_DEFAULT_MODULES "nf_tables nf_conntrack wireguard sch_cake sch_fq tcp_bbr"
#define KS_VERIFY_DEFAULT_BBR_VERSION 3
/* XanMod's archive; [repository] uri names a mirror or an apt cache in front of it. */
#define KS_REPOSITORY_DEFAULT_URI "http://deb.xanmod.org"
/* Debian's prometheus-node-exporter: --collector.textfile.directory */
#define KS_METRICS_DEFAULT_TEXTFILE_DIR "/var/lib/prometheus/node-exporter"

typedef enum ks_config_type {
    KS_CT_STRING, /* one value, any text (the last one counts) */
    KS_CT_LIST,   /* words of every value, each checked by item_ok */
    KS_CT_UINT,   /* decimal, min..max in 64 bits */
    KS_CT_BOOL,   /* yes/no, true/false, on/off, 1/0 */
    KS_CT_ENUM,   /* one of enum_values */
} ks_config_type;

typedef struct ks_config_key {
    const char *section, *key;
    ks_config_type type;
    uint64_t min, max;                 /* KS_CT_UINT */
    const char *def;                   /* the default as text; NULL: none */
    bool (*item_ok)(const char *word); /* KS_CT_LIST: each word; KS_CT_STRING: the value */
    const char *hint;                  /* what item_ok wants, for the error: "PROTO:PORT, ..." */
    const char *const *enum_values;    /* KS_CT_ENUM, NULL-terminated */
} ks_config_key;

/* Table entries: a list of words each item_ok accepts (hint says what it wants), a number. */
#define KS_CONFIG_LIST(s, k, fn, d, h)                                                             \
    {                                                                                              \
        .section = s, .key = k, .type = KS_CT_LIST, .item_ok = fn, .def = d, .hint = h             \
    }
#define KS_CONFIG_UINT(s, k, lo, hi, d)                                                            \
    {                                                                                              \
        .section = s, .key = k, .type = KS_CT_UINT, .min = lo, .max = hi, .def = #d                \
    }
/* Words every name key accepts: a unit, an interface, a module; never a path nor an option. */
bool ks_config_item_name(const char *word);
#define KS_CONFIG_HINT_NAME "a name, not a path"
bool ks_config_item_any(const char *word);

/* Every known key (this layer's, then the registered ones); valid until the next register. */
const ks_config_key *ks_config_keys(size_t *ret_n);
const ks_config_key *ks_config_key_find(const char *section, const char *key);
/*
 * Adds a table of keys (n entries) of a layer above, once (registering the same table again
 * does nothing): -EEXIST when a key is known already, -E2BIG past the fixed capacity. Call it
 * before reading any configuration.
 */
int ks_config_register(const ks_config_key *table, size_t n);
/* Decimal digits only, min <= v <= max: -EINVAL malformed, -ERANGE out of range (64 bits). */
int ks_config_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
int ks_config_parse_bool(const char *s, bool *ret);

ks_config *ks_config_new(void);
ks_config *ks_config_free(ks_config *c);
static inline void ks_config_freep(ks_config **c)
{
    ks_config_free(*c);
}
#define _cleanup_config_ __attribute__((cleanup(ks_config_freep)))

/*
 * Reads etc/kswap/kswap.conf inside the root (missing is fine), or path on the running machine
 * when given (missing is an error), then etc/kswap/kswap.conf.d/ (*.conf, sorted) inside the
 * root. On a parse error returns -EBADMSG and, when ret_error is given, "FILE:LINE: why".
 */
int ks_config_load(const ks_root *root, const char *path, ks_config **ret, char **ret_error);
/* Adds the settings of one text; origin names it in errors. */
int ks_config_parse(ks_config *c, const char *text, const char *origin, char **ret_error);

/* Every raw value given for section/key, in order; NULL when never set (or cleared). */
char *const *ks_config_get_values(const ks_config *c, const char *section, const char *key);
/* Given in some file, even when an empty value cleared it ("key ="): that is not unset. */
bool ks_config_is_set(const ks_config *c, const char *section, const char *key);
/* The last value, or def. */
const char *ks_config_get_string(const ks_config *c, const char *section, const char *key,
                                 const char *def);
/* Words of every value (split on white space and commas); def (split) when unset. */
int ks_config_get_strv(const ks_config *c, const char *section, const char *key, const char *def,
                       char ***ret);
/* The last value as an integer 0..INT_MAX; def when unset; -EINVAL when it is not one. */
int ks_config_get_int(const ks_config *c, const char *section, const char *key, int def, int *ret);
/* A KS_CT_UINT key: the last value, or the table's default; -ENOKEY for another key. */
int ks_config_get_u64(const ks_config *c, const char *section, const char *key, uint64_t *ret);
/* yes/no, true/false, on/off, 1/0; def when unset; -EINVAL otherwise. */
int ks_config_get_bool(const ks_config *c, const char *section, const char *key, bool def,
                       bool *ret);

/* [verify] modules and bbr_version with their defaults; c may be NULL (defaults). */
int ks_config_verify_modules(const ks_config *c, char ***ret);
int ks_config_verify_bbr_version(const ks_config *c, int *ret);
