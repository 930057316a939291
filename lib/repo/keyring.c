/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>

#include "lib/basic/fileio.h"
#include "lib/repo/gpgme-dl.h"
#include "lib/repo/keyring.h"
#include "lib/basic/string-table.h"
#include "lib/basic/util.h"

#define KEY_FILE_MAX (4 * 1024 * 1024)

static const char *const ks_key_status_table[_KS_KEY_STATUS_MAX] = {
    [KS_KEY_OK] = "ok",
    [KS_KEY_ERROR] = "error",
    [KS_KEY_NO_KEY] = "no-key",
    [KS_KEY_MULTIPLE] = "multiple-keys",
    [KS_KEY_WRONG_FINGERPRINT] = "wrong-fingerprint",
    [KS_KEY_REVOKED] = "revoked",
    [KS_KEY_EXPIRED] = "expired",
    [KS_KEY_DISABLED] = "disabled",
    [KS_KEY_INVALID] = "invalid",
};

static const int status_errno[_KS_KEY_STATUS_MAX] = {
    [KS_KEY_OK] = 0,
    [KS_KEY_ERROR] = EIO,
    [KS_KEY_NO_KEY] = ENOKEY,
    [KS_KEY_MULTIPLE] = ENOTUNIQ,
    [KS_KEY_WRONG_FINGERPRINT] = EKEYREJECTED,
    [KS_KEY_REVOKED] = EKEYREVOKED,
    [KS_KEY_EXPIRED] = EKEYEXPIRED,
    [KS_KEY_DISABLED] = EACCES,
    [KS_KEY_INVALID] = EBADMSG,
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_key_status, ks_key_status);

void ks_key_info_done(ks_key_info *info)
{
    if (!info)
        return;
    free(info->reason);
    free(info->fingerprint);
    free(info->uid);
    *info = (ks_key_info){0};
}

int ks_fingerprint_normalize(const char *fpr, char **ret)
{
    _cleanup_free_ char *out = NULL;
    size_t n = 0;

    if (!fpr)
        return -EINVAL;
    out = malloc(strlen(fpr) + 1);
    if (!out)
        return -ENOMEM;
    for (const char *p = fpr; *p; p++) {
        if (*p == ' ' || *p == '\t')
            continue;
        if (!isxdigit((unsigned char)*p))
            return -EINVAL;
        out[n++] = (char)toupper((unsigned char)*p);
    }
    out[n] = '\0';
    if (n != 40 && n != 64)
        return -EINVAL;
    *ret = TAKE_PTR(out);
    return 0;
}

/* Fills the verdict part of *info and returns the status's errno. */
static int refuse(ks_key_info *info, ks_key_status s, const char *fmt, ...) _printf_(3, 4);
static int refuse(ks_key_info *info, ks_key_status s, const char *fmt, ...)
{
    va_list ap;

    info->status = s;
    free(info->reason);
    info->reason = NULL;
    va_start(ap, fmt);
    (void)ks_vasprintf_r(&info->reason, fmt, ap);
    va_end(ap);
    return -status_errno[s];
}

static int error_info(ks_key_info *info, int err, const char *what)
{
    refuse(info, KS_KEY_ERROR, "%s: %s", what, strerror(-err));
    return err;
}

/* Removes a directory tree made by us (the temporary GNUPGHOME); best effort. */
static void rm_rf_at(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d;
    struct dirent *de;

    if (fd < 0) {
        unlinkat(dfd, name, 0);
        return;
    }
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    while ((de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        if (de->d_type == DT_DIR)
            rm_rf_at(dirfd(d), de->d_name);
        else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno == EISDIR)
            rm_rf_at(dirfd(d), de->d_name);
    }
    closedir(d);
    unlinkat(dfd, name, AT_REMOVEDIR);
}

static void gnupghome_removep(char **home)
{
    if (!*home)
        return;
    rm_rf_at(AT_FDCWD, *home);
    free(*home);
}

static int write_small_file(const char *dir, const char *name, const char *text)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", dir, name);
    _cleanup_close_ int fd = -1;
    size_t n = strlen(text);

    if (!p)
        return -ENOMEM;
    fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (n > 0 && write(fd, text, n) != (ssize_t)n)
        return -EIO;
    return 0;
}

/*
 * A private GNUPGHOME, never the user's. An empty common.conf keeps gpg >= 2.4.1 from switching
 * a fresh home to keyboxd, and no-autostart keeps gpg from starting any daemon at all, so that
 * removing the directory afterwards leaves nothing running.
 */
static int gnupghome_new(char **ret)
{
    const char *tmp = getenv("TMPDIR");
    _cleanup_free_ char *home = NULL;
    int r;

    if (!tmp || tmp[0] != '/' || strlen(tmp) > 64)
        tmp = "/tmp"; /* gpg's socket paths must stay short */
    home = ks_asprintf("%s/kswap-gpg.XXXXXX", tmp);
    if (!home)
        return -ENOMEM;
    if (!mkdtemp(home))
        return -errno;
    r = write_small_file(home, "common.conf", "");
    if (r >= 0)
        r = write_small_file(home, "gpg.conf", "no-autostart\ntrust-model always\n");
    if (r < 0) {
        rm_rf_at(AT_FDCWD, home);
        return r;
    }
    *ret = TAKE_PTR(home);
    return 0;
}

static void ctx_releasep(gpgme_ctx_t *ctx)
{
    if (*ctx)
        sym_gpgme_release(*ctx);
}

static void data_releasep(gpgme_data_t *d)
{
    if (*d)
        sym_gpgme_data_release(*d);
}

static void key_unrefp(gpgme_key_t *k)
{
    if (*k)
        sym_gpgme_key_unref(*k);
}

static int gpg_errno(gpgme_error_t e)
{
    int r = sym_gpgme_err_code_to_errno(gpgme_err_code(e));
    return r > 0 ? -r : -EIO;
}

static int ctx_new(const char *home, gpgme_ctx_t *ret)
{
    gpgme_ctx_t ctx = NULL;
    gpgme_error_t e;
    int r;

    r = ks_dlopen_gpgme(NULL);
    if (r < 0)
        return -ENOPKG; /* no libgpgme11: as without a usable gpg */
    sym_gpgme_check_version_internal(NULL, offsetof(struct _gpgme_signature, validity));
    e = sym_gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP);
    if (e)
        return -ENOPKG; /* no usable gpg on this machine */
    e = sym_gpgme_new(&ctx);
    if (e)
        return gpg_errno(e);
    e = sym_gpgme_ctx_set_engine_info(ctx, GPGME_PROTOCOL_OpenPGP, NULL, home);
    if (!e)
        e = sym_gpgme_set_protocol(ctx, GPGME_PROTOCOL_OpenPGP);
    if (!e)
        e = sym_gpgme_set_keylist_mode(ctx, GPGME_KEYLIST_MODE_LOCAL);
    if (e) {
        sym_gpgme_release(ctx);
        return gpg_errno(e);
    }
    sym_gpgme_set_offline(ctx, 1); /* kswap opens no network connections */
    sym_gpgme_set_armor(ctx, 0);
    *ret = ctx;
    return 0;
}

/* The whole job; export is done only when ret_data is given and the key is accepted. */
static int keyring_run(const void *data, size_t len, const char *pinned_fpr, time_t now,
                       ks_key_info *info, void **ret_data, size_t *ret_len)
{
    _cleanup_(gnupghome_removep) char *home = NULL;
    _cleanup_(ctx_releasep) gpgme_ctx_t ctx = NULL;
    _cleanup_(data_releasep) gpgme_data_t in = NULL, out = NULL;
    _cleanup_(key_unrefp) gpgme_key_t key = NULL;
    _cleanup_free_ char *pin = NULL;
    gpgme_import_result_t imp;
    gpgme_error_t e;
    gpgme_key_t k;
    int r;

    r = ks_fingerprint_normalize(pinned_fpr ? pinned_fpr : KS_XANMOD_KEY_FPR, &pin);
    if (r < 0) {
        refuse(info, KS_KEY_ERROR, "pinned fingerprint '%s' is not 40 or 64 hex digits",
               strempty(pinned_fpr));
        return r;
    }
    if (len == 0)
        return refuse(info, KS_KEY_NO_KEY, "the key file is empty");

    r = gnupghome_new(&home);
    if (r < 0)
        return error_info(info, r, "cannot create a temporary GNUPGHOME");
    r = ctx_new(home, &ctx);
    if (r == -ENOPKG)
        return error_info(info, r, "gpg is not usable (gpgme found no OpenPGP engine)");
    if (r < 0)
        return error_info(info, r, "cannot set up gpgme");

    e = sym_gpgme_data_new_from_mem(&in, data, len, 0);
    if (e)
        return error_info(info, gpg_errno(e), "gpgme");
    e = sym_gpgme_op_import(ctx, in);
    imp = sym_gpgme_op_import_result(ctx);
    if (imp && imp->secret_read > 0)
        /* Secret material has no business in an apt keyring (and needs gpg-agent to import). */
        return refuse(info, KS_KEY_INVALID, "the file holds a secret key; give the public key");
    if (gpgme_err_code(e) == GPG_ERR_NO_DATA || (!e && imp && imp->considered == 0))
        return refuse(info, KS_KEY_NO_KEY, "the file holds no OpenPGP key");
    if (e)
        return refuse(info, KS_KEY_INVALID, "gpg cannot import the key: %s", sym_gpgme_strerror(e));

    e = sym_gpgme_op_keylist_start(ctx, NULL, 0);
    if (e)
        return error_info(info, gpg_errno(e), "cannot list the imported keys");
    while (!(e = sym_gpgme_op_keylist_next(ctx, &k))) {
        info->n_keys++;
        if (!key)
            key = k;
        else
            sym_gpgme_key_unref(k);
    }
    sym_gpgme_op_keylist_end(ctx);
    if (gpgme_err_code(e) != GPG_ERR_EOF)
        return error_info(info, gpg_errno(e), "cannot list the imported keys");
    if (info->n_keys == 0)
        /* gpg read a key but kept none: no valid self-signature, no user id, ... */
        return refuse(info, KS_KEY_INVALID,
                      "gpg rejected the key in the file (%d read, none "
                      "usable)",
                      imp ? imp->considered : 0);
    if (info->n_keys > 1)
        return refuse(info, KS_KEY_MULTIPLE, "the file holds %u keys; exactly one is expected",
                      info->n_keys);
    if (!key->subkeys || !key->subkeys->fpr)
        return refuse(info, KS_KEY_INVALID, "gpg reports no fingerprint for the key");

    info->fingerprint = strdup(key->subkeys->fpr);
    if (key->uids && key->uids->uid)
        info->uid = strdup(key->uids->uid);
    if (!info->fingerprint || (key->uids && key->uids->uid && !info->uid))
        return error_info(info, -ENOMEM, "out of memory");
    info->created = (time_t)key->subkeys->timestamp;
    info->expires = key->subkeys->expires > 0 ? (time_t)key->subkeys->expires : 0;
    info->expires_soon = info->expires != 0 && info->expires - now < KS_KEY_EXPIRES_SOON_SEC;

    if (strcasecmp(info->fingerprint, pin) != 0)
        return refuse(info, KS_KEY_WRONG_FINGERPRINT, "key %s (%s) is not the pinned key %s",
                      info->fingerprint, strempty(info->uid), pin);
    if (key->revoked || key->subkeys->revoked)
        return refuse(info, KS_KEY_REVOKED, "key %s is revoked", info->fingerprint);
    if (key->expired || key->subkeys->expired || (info->expires != 0 && info->expires <= now))
        return refuse(info, KS_KEY_EXPIRED, "key %s expired", info->fingerprint);
    if (key->disabled)
        return refuse(info, KS_KEY_DISABLED, "key %s is disabled", info->fingerprint);
    if (key->invalid || key->subkeys->invalid)
        return refuse(info, KS_KEY_INVALID, "gpg marks key %s invalid", info->fingerprint);
    if (!key->can_sign)
        /* apt checks Release signatures: a key that cannot sign can verify nothing. */
        return refuse(info, KS_KEY_INVALID, "key %s has no usable signing key", info->fingerprint);

    if (ret_data) {
        char *buf;
        size_t n = 0;

        e = sym_gpgme_data_new(&out);
        if (e)
            return error_info(info, gpg_errno(e), "gpgme");
        /* Only the newest self-signatures: what apt needs, without third-party signatures. */
        e = sym_gpgme_op_export(ctx, info->fingerprint, GPGME_EXPORT_MODE_MINIMAL, out);
        if (e)
            return error_info(info, gpg_errno(e), "cannot export the key");
        buf = sym_gpgme_data_release_and_get_mem(out, &n);
        out = NULL;
        if (!buf || n == 0) {
            sym_gpgme_free(buf);
            return error_info(info, -EIO, "gpg exported nothing");
        }
        /* gpgme's buffer must go back through sym_gpgme_free(); hand out a malloc()ed copy. */
        *ret_data = malloc(n);
        if (!*ret_data) {
            sym_gpgme_free(buf);
            return error_info(info, -ENOMEM, "out of memory");
        }
        memcpy(*ret_data, buf, n);
        sym_gpgme_free(buf);
        *ret_len = n;
    }
    info->status = KS_KEY_OK;
    return 0;
}

int ks_keyring_check_data(const void *data, size_t len, const char *pinned_fpr, time_t now,
                          ks_key_info *ret)
{
    *ret = (ks_key_info){0};
    return keyring_run(data, len, pinned_fpr, now, ret, NULL, NULL);
}

int ks_keyring_export_binary_data(const void *data, size_t len, const char *pinned_fpr, time_t now,
                                  ks_key_info *ret_info, void **ret_data, size_t *ret_len)
{
    void *d = NULL;
    size_t n = 0;
    int r;

    *ret_info = (ks_key_info){0};
    r = keyring_run(data, len, pinned_fpr, now, ret_info, &d, &n);
    if (r < 0)
        return r;
    *ret_data = d;
    *ret_len = n;
    return 0;
}

/* Key files are on the running machine (--key FILE, or kswap's data), not inside --root. */
static int read_key_file(const char *path, char **ret, size_t *ret_len)
{
    _cleanup_close_ int fd = -1;

    fd = ks_open_regular(path);
    if (fd < 0)
        return fd;
    return ks_read_fd(fd, KEY_FILE_MAX, ret, ret_len);
}

int ks_keyring_check(const char *key_path, const char *pinned_fpr, time_t now, ks_key_info *ret)
{
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    int r;

    *ret = (ks_key_info){0};
    r = read_key_file(key_path, &data, &len);
    if (r < 0) {
        refuse(ret, KS_KEY_ERROR, "cannot read key file '%s': %s", key_path, strerror(-r));
        return r;
    }
    return keyring_run(data, len, pinned_fpr, now, ret, NULL, NULL);
}

int ks_keyring_export_binary(const char *key_path, const char *pinned_fpr, time_t now,
                             ks_key_info *ret_info, void **ret_data, size_t *ret_len)
{
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    int r;

    *ret_info = (ks_key_info){0};
    r = read_key_file(key_path, &data, &len);
    if (r < 0) {
        refuse(ret_info, KS_KEY_ERROR, "cannot read key file '%s': %s", key_path, strerror(-r));
        return r;
    }
    return ks_keyring_export_binary_data(data, len, pinned_fpr, now, ret_info, ret_data, ret_len);
}
