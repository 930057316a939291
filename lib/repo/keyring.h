/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* XanMod's archive signing key, "XanMod Kernel <kernel@xanmod.org>" (docs/facts.md, "XanMod"). */
#define KS_XANMOD_KEY_FPR "D38D7D1DA1349567ADED882D86F7D09EE734E623"
/* The key as kswap ships it, relative to KSWAP_DATADIR (config.h); installed by data/. */
#define KS_XANMOD_KEY_DATA_NAME "keys/xanmod-archive-keyring.asc"
/* A key that expires within this many seconds of "now" is accepted with a warning. */
#define KS_KEY_EXPIRES_SOON_SEC (30 * 24 * 3600)

/* Why a key file was accepted or refused. Each refusal has its own errno (see below). */
typedef enum ks_key_status {
    KS_KEY_OK,
    KS_KEY_ERROR,             /* could not evaluate: unreadable file, no gpg, no memory */
    KS_KEY_NO_KEY,            /* -ENOKEY: empty file, garbage, no OpenPGP key in it */
    KS_KEY_MULTIPLE,          /* -ENOTUNIQ: more than one primary key */
    KS_KEY_WRONG_FINGERPRINT, /* -EKEYREJECTED: not the pinned key */
    KS_KEY_REVOKED,           /* -EKEYREVOKED */
    KS_KEY_EXPIRED,           /* -EKEYEXPIRED (by gpg's clock or by "now") */
    KS_KEY_DISABLED,          /* -EACCES */
    KS_KEY_INVALID,           /* -EBADMSG: gpg refused it, or no usable signing key */
    _KS_KEY_STATUS_MAX,
    _KS_KEY_STATUS_INVALID = -EINVAL,
} ks_key_status;

typedef struct ks_key_info {
    ks_key_status status;
    char *reason;      /* human words when status != KS_KEY_OK, else NULL */
    char *fingerprint; /* primary fingerprint of the key found (upper-case hex), or NULL */
    char *uid;         /* its first user id, or NULL */
    unsigned n_keys;   /* primary keys found in the file */
    time_t created;
    time_t expires;    /* 0: never */
    bool expires_soon; /* expires less than KS_KEY_EXPIRES_SOON_SEC after "now" */
} ks_key_info;

void ks_key_info_done(ks_key_info *info);
const char *ks_key_status_to_string(ks_key_status s);

/*
 * Normalises a fingerprint as people write it ("D38D 7D1D ...", lower case) to upper-case hex
 * without blanks. -EINVAL unless 40 (v4) or 64 (v5) hex digits remain.
 */
int ks_fingerprint_normalize(const char *fpr, char **ret);

/*
 * Imports an armored or binary key file (a path on the running machine, not inside --root) into
 * a private temporary GNUPGHOME that is removed afterwards, and checks it: exactly one primary
 * key, whose fingerprint is pinned_fpr (NULL: KS_XANMOD_KEY_FPR), neither revoked, expired,
 * disabled nor invalid. Returns 0 when the key is accepted, or a negative errno: the refusal's
 * own (see ks_key_status), -EINVAL for a malformed pin, or an error (-ENOENT, -ENOMEM, ...).
 * *ret is filled in every case, so that the caller can say why; free it with
 * ks_key_info_done().
 */
int ks_keyring_check(const char *key_path, const char *pinned_fpr, time_t now, ks_key_info *ret);
/* The same on the bytes of a key file. */
int ks_keyring_check_data(const void *data, size_t len, const char *pinned_fpr, time_t now,
                          ks_key_info *ret);

/*
 * Checks like ks_keyring_check() and, when the key is accepted, returns its minimal export as a
 * binary OpenPGP keyring (what `gpg --dearmor` gives; what apt's Signed-By wants for a .gpg
 * file) in *ret_data (free()) and *ret_len. They are untouched on failure; *ret_info is filled
 * as by ks_keyring_check().
 */
int ks_keyring_export_binary(const char *key_path, const char *pinned_fpr, time_t now,
                             ks_key_info *ret_info, void **ret_data, size_t *ret_len);
int ks_keyring_export_binary_data(const void *data, size_t len, const char *pinned_fpr, time_t now,
                                  ks_key_info *ret_info, void **ret_data, size_t *ret_len);
