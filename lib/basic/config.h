/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "lib/basic/root.h"

/*
 * kswap.conf: INI sections of keys, each key a list of values. A key given again appends
 * (in one file or across drop-ins); an empty value clears what came before. Values of the
 * list getter are split on white space and commas. Read with libinih: comments start a line
 * with ';' or '#', or follow a value after " ;" (and, unlike libinih, after " #" too); lines
 * longer than libinih's 200 bytes are refused instead of being split.
 */
typedef struct ks_config ks_config;

#define KS_CONFIG_PATH "/etc/kswap/kswap.conf"
#define KS_CONFIG_DROPIN_DIR "/etc/kswap/kswap.conf.d"
#define KS_VERIFY_DEFAULT_MODULES "nf_tables nf_conntrack wireguard sch_cake sch_fq tcp_bbr"
#define KS_VERIFY_DEFAULT_BBR_VERSION 3

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
/* The last value, or def. */
const char *ks_config_get_string(const ks_config *c, const char *section, const char *key,
                                 const char *def);
/* Words of every value (split on white space and commas); def (split) when unset. */
int ks_config_get_strv(const ks_config *c, const char *section, const char *key, const char *def,
                       char ***ret);
/* The last value as an integer; def when unset; -EINVAL when it is not one. */
int ks_config_get_int(const ks_config *c, const char *section, const char *key, int def, int *ret);
/* yes/no, true/false, on/off, 1/0; def when unset; -EINVAL otherwise. */
int ks_config_get_bool(const ks_config *c, const char *section, const char *key, bool def,
                       bool *ret);

/* [verify] modules and bbr_version with their defaults; c may be NULL (defaults). */
int ks_config_verify_modules(const ks_config *c, char ***ret);
int ks_config_verify_bbr_version(const ks_config *c, int *ret);
