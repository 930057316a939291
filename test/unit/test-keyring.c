/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Key checks with the real XanMod key and with keys made at test time in a GNUPGHOME of the
 * test's own (as git's t/lib-gpg.sh does); gpgv proves the exported keyring is a real one.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "lib/repo/keyring.h"
#include "lib/basic/util.h"
#include "test.h"

static char tmpdir[] = "/tmp/ks-test-keyring.XXXXXX";
static char *gnupghome;

/* Runs a shell command with the test's GNUPGHOME; returns its exit status. */
static int sh(const char *fmt, ...) _printf_(1, 2);
static int sh(const char *fmt, ...)
{
    _cleanup_free_ char *cmd = NULL;
    va_list ap;
    int st;

    va_start(ap, fmt);
    if (ks_vasprintf_r(&cmd, fmt, ap) < 0)
        abort();
    va_end(ap);
    st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static char *path(const char *name)
{
    char *p = ks_asprintf("%s/%s", tmpdir, name);
    if (!p)
        abort();
    return p;
}

static int write_file(const char *name, const void *data, size_t len)
{
    _cleanup_free_ char *p = path(name);
    FILE *f = fopen(p, "wb");
    size_t n;

    if (!f)
        return -errno;
    n = fwrite(data, 1, len, f);
    return fclose(f) == 0 && n == len ? 0 : -EIO;
}

/* Fingerprint of the newest key with this user id in the test GNUPGHOME. */
static char *fingerprint_of(const char *uid)
{
    _cleanup_free_ char *out = path("fpr.out");
    char buf[256] = "";
    FILE *f;

    if (sh("gpg --batch --with-colons --list-keys '%s' 2>/dev/null | awk -F: '$1==\"fpr\"{print "
           "$10; exit}' > %s",
           uid, out) != 0)
        return NULL;
    f = fopen(out, "r");
    if (!f)
        return NULL;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] ? strdup(buf) : NULL;
}

static char *gen_key(const char *uid, const char *expire, const char *extra)
{
    if (sh("gpg --batch --quiet %s --passphrase '' --pinentry-mode loopback "
           "--quick-gen-key '%s' ed25519 sign %s 2>/dev/null",
           strempty(extra), uid, expire) != 0)
        return NULL;
    return fingerprint_of(uid);
}

static int export_key(const char *fpr, const char *file, bool armor)
{
    _cleanup_free_ char *p = path(file);
    return sh("gpg --batch %s --export %s > %s", armor ? "--armor" : "", fpr, p);
}

static void count_tmp_homes(const char *dir, int *ret)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    *ret = 0;
    while (d && (de = readdir(d)))
        if (ks_startswith(de->d_name, "kswap-gpg."))
            (*ret)++;
    if (d)
        closedir(d);
}

static void test_fingerprint_normalize(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"D38D 7D1D A134 9567 ADED  882D 86F7 D09E E734 E623", KS_XANMOD_KEY_FPR},
        {"d38d7d1da1349567aded882d86f7d09ee734e623", KS_XANMOD_KEY_FPR},
        {"D38D7D1DA1349567ADED882D86F7D09EE734E62", NULL},   /* 39 digits */
        {"D38D7D1DA1349567ADED882D86F7D09EE734E6233", NULL}, /* 41 */
        {"0xD38D7D1DA1349567ADED882D86F7D09EE734E623", NULL},
        {"G38D7D1DA1349567ADED882D86F7D09EE734E623", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *out = NULL;
        int r = ks_fingerprint_normalize(cases[i].in, &out);
        CHECK_MSG((r == 0) == (cases[i].out != NULL), "case %zu: %d", i, r);
        CHECK_STREQ(out, cases[i].out);
        free(out);
    }
}

static void test_real_key(time_t now)
{
    _cleanup_free_ char *key = ks_asprintf("%s/keys/xanmod-archive.key", ks_fixture_dir());
    _cleanup_free_ char *kr = path("xanmod.gpg"), *list = path("xanmod.list");
    ks_key_info info;
    void *data = NULL;
    size_t len = 0;

    CHECK_INTEQ(ks_keyring_check(key, NULL, now, &info), 0);
    CHECK(info.status == KS_KEY_OK);
    CHECK_STREQ(info.fingerprint, KS_XANMOD_KEY_FPR);
    CHECK_STREQ(info.uid, "XanMod Kernel <kernel@xanmod.org>");
    CHECK_INTEQ(info.expires, 0);
    CHECK(!info.expires_soon);
    CHECK_INTEQ(info.created, 1483823950); /* 2017-01-07 */
    CHECK(info.reason == NULL);
    ks_key_info_done(&info);

    /* The pin as people write it. */
    CHECK_INTEQ(
        ks_keyring_check(key, "d38d 7d1d a134 9567 aded  882d 86f7 d09e e734 e623", now, &info), 0);
    ks_key_info_done(&info);

    /* Another pin: refused, and the reason names both. */
    CHECK_INTEQ(ks_keyring_check(key, "0123456789ABCDEF0123456789ABCDEF01234567", now, &info),
                -EKEYREJECTED);
    CHECK(info.status == KS_KEY_WRONG_FINGERPRINT);
    CHECK(info.reason && strstr(info.reason, KS_XANMOD_KEY_FPR) &&
          strstr(info.reason, "0123456789ABCDEF0123456789ABCDEF01234567"));
    ks_key_info_done(&info);

    /* A pin that is no fingerprint at all. */
    CHECK_INTEQ(ks_keyring_check(key, "XanMod", now, &info), -EINVAL);
    CHECK(info.status == KS_KEY_ERROR);
    ks_key_info_done(&info);

    CHECK_INTEQ(ks_keyring_check("/nonexistent/key.asc", NULL, now, &info), -ENOENT);
    CHECK(info.status == KS_KEY_ERROR && info.reason);
    ks_key_info_done(&info);

    /* The binary keyring is what gpg sees as exactly this key, and not armored. */
    CHECK_INTEQ(ks_keyring_export_binary(key, NULL, now, &info, &data, &len), 0);
    CHECK(data && len > 256);
    CHECK(data && (((unsigned char *)data)[0] & 0x80)); /* an OpenPGP packet, not "-----" */
    CHECK(write_file("xanmod.gpg", data, len) == 0);
    CHECK(sh("gpg --batch --with-colons --show-keys %s 2>/dev/null | grep -q '^fpr:*%s:$'", kr,
             KS_XANMOD_KEY_FPR) == 0);
    /* Minimal: still one public key, with its encryption subkey. */
    CHECK(sh("test $(gpg --batch --with-colons --show-keys %s 2>/dev/null | grep -c '^pub:') = 1",
             kr) == 0);
    CHECK(sh("gpg --batch --with-colons --show-keys %s 2>/dev/null | grep -q '^sub:'", kr) == 0);
    free(data);
    ks_key_info_done(&info);

    /* Armored input of the binary keyring round-trips too. */
    CHECK_INTEQ(ks_keyring_check(kr, NULL, now, &info), 0);
    ks_key_info_done(&info);
    (void)list;
}

/* The copy in data/ that meson installs is the fixture's key, and it passes. */
static void test_shipped_key(time_t now)
{
    const char *src = getenv("KS_SOURCE_ROOT");
    _cleanup_free_ char *key = NULL;
    ks_key_info info;

    if (!src) {
        fprintf(stderr, "KS_SOURCE_ROOT unset: shipped key not checked\n");
        return;
    }
    key = ks_asprintf("%s/data/" KS_XANMOD_KEY_DATA_NAME, src);
    CHECK(sh("cmp -s %s %s/keys/xanmod-archive.key", key, ks_fixture_dir()) == 0);
    CHECK_INTEQ(ks_keyring_check(key, NULL, now, &info), 0);
    CHECK_STREQ(info.fingerprint, KS_XANMOD_KEY_FPR);
    ks_key_info_done(&info);
}

static void expect_refusal(const char *file, const char *pin, time_t now, int err,
                           ks_key_status status)
{
    _cleanup_free_ char *p = path(file);
    ks_key_info info;
    void *data = (void *)"sentinel";
    size_t len = 4242;

    CHECK_MSG(ks_keyring_check(p, pin, now, &info) == err, "%s: want %d", file, err);
    CHECK_MSG(info.status == status, "%s: status %s, want %s", file,
              ks_key_status_to_string(info.status), ks_key_status_to_string(status));
    CHECK_MSG(info.reason && info.reason[0], "%s: no reason", file);
    ks_key_info_done(&info);
    /* Export refuses in the same way and leaves its outputs alone. */
    CHECK(ks_keyring_export_binary(p, pin, now, &info, &data, &len) == err);
    CHECK(streq(data, "sentinel") && len == 4242);
    ks_key_info_done(&info);
}

static void test_generated_keys(time_t now)
{
    _cleanup_free_ char *good = NULL, *soon = NULL, *old = NULL, *revoked = NULL, *other = NULL;
    _cleanup_free_ char *kr = path("good.gpg"), *okr = path("other.gpg"), *msg = path("msg"),
                        *sig = path("msg.sig"), *revs = NULL;
    ks_key_info info;
    void *data = NULL;
    size_t len = 0;

    good = gen_key("Good Test <good@kswap.test>", "0", NULL);
    soon = gen_key("Soon Test <soon@kswap.test>", "10d", NULL);
    /* Made in 2020, expired the day after: gpg's own clock says expired. */
    old = gen_key("Old Test <old@kswap.test>", "1d", "--faked-system-time 20200101T000000");
    revoked = gen_key("Revoked Test <revoked@kswap.test>", "0", NULL);
    other = gen_key("Other Test <other@kswap.test>", "0", NULL);
    CHECK(good && soon && old && revoked && other);
    if (!good || !soon || !old || !revoked || !other)
        return;

    /* gpg writes a revocation certificate at generation; its first line is defused with ':'. */
    revs = ks_asprintf("%s/openpgp-revocs.d/%s.rev", gnupghome, revoked);
    CHECK(sh("sed 's/^:-----BEGIN/-----BEGIN/' %s | gpg --batch --quiet --import 2>/dev/null",
             revs) == 0);

    /* A third-party certification on the good key: the minimal export must drop it. */
    CHECK(sh("gpg --batch --quiet --yes --passphrase '' --pinentry-mode loopback -u %s "
             "--quick-sign-key %s 2>/dev/null",
             other, good) == 0);
    CHECK(export_key(good, "good.asc", true) == 0);
    CHECK(export_key(good, "good.bin", false) == 0);
    CHECK(export_key(soon, "soon.asc", true) == 0);
    CHECK(export_key(old, "old.asc", true) == 0);
    CHECK(export_key(revoked, "revoked.asc", true) == 0);
    CHECK(sh("gpg --batch --armor --export %s %s > %s/two.asc", good, other, tmpdir) == 0);
    CHECK(sh("cat %s/good.asc %s/good.asc > %s/same-twice.asc", tmpdir, tmpdir, tmpdir) == 0);
    CHECK(sh("gpg --batch --quiet --passphrase '' --pinentry-mode loopback --armor "
             "--export-secret-keys %s > %s/secret.asc 2>/dev/null",
             good, tmpdir) == 0);
    CHECK(write_file("garbage.asc", "this is not a key\n\x01\x02\xff", 21) == 0);
    CHECK(write_file("empty.asc", "", 0) == 0);
    CHECK(sh("printf -- '-----BEGIN PGP PUBLIC KEY BLOCK-----\\n\\nAAAA\\n-----END PGP PUBLIC KEY "
             "BLOCK-----\\n' > %s/broken-armor.asc",
             tmpdir) == 0);

    /* Accepted: armored and binary, with the pin written in lower case. */
    for (size_t i = 0; i < 2; i++) {
        _cleanup_free_ char *p = path(i == 0 ? "good.asc" : "good.bin");
        _cleanup_free_ char *lower = strdup(good);
        for (char *c = lower; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        CHECK_INTEQ(ks_keyring_check(p, lower, now, &info), 0);
        CHECK_STREQ(info.fingerprint, good);
        CHECK_STREQ(info.uid, "Good Test <good@kswap.test>");
        CHECK_INTEQ(info.expires, 0);
        CHECK(!info.expires_soon);
        ks_key_info_done(&info);
    }

    /* Expiring in 10 days: accepted, with the warning flag. */
    {
        _cleanup_free_ char *p = path("soon.asc");
        CHECK_INTEQ(ks_keyring_check(p, soon, now, &info), 0);
        CHECK(info.expires > now + 9 * 86400 && info.expires < now + 11 * 86400);
        CHECK(info.expires_soon);
        ks_key_info_done(&info);
        /* Seen from 60 days earlier it is not "soon"; seen from 11 days later it is expired. */
        CHECK_INTEQ(ks_keyring_check(p, soon, now - 60 * 86400, &info), 0);
        CHECK(!info.expires_soon);
        ks_key_info_done(&info);
        CHECK_INTEQ(ks_keyring_check(p, soon, now + 11 * 86400, &info), -EKEYEXPIRED);
        ks_key_info_done(&info);
    }

    expect_refusal("old.asc", old, now, -EKEYEXPIRED, KS_KEY_EXPIRED);
    expect_refusal("revoked.asc", revoked, now, -EKEYREVOKED, KS_KEY_REVOKED);
    expect_refusal("two.asc", good, now, -ENOTUNIQ, KS_KEY_MULTIPLE);
    expect_refusal("garbage.asc", good, now, -ENOKEY, KS_KEY_NO_KEY);
    expect_refusal("secret.asc", good, now, -EBADMSG, KS_KEY_INVALID);
    expect_refusal("empty.asc", good, now, -ENOKEY, KS_KEY_NO_KEY);
    expect_refusal("good.asc", other, now, -EKEYREJECTED, KS_KEY_WRONG_FINGERPRINT);
    expect_refusal("good.asc", NULL, now, -EKEYREJECTED, KS_KEY_WRONG_FINGERPRINT);
    {
        _cleanup_free_ char *p = path("broken-armor.asc");
        int r = ks_keyring_check(p, good, now, &info);
        CHECK_MSG(r == -ENOKEY || r == -EBADMSG, "broken armor: %d", r);
        ks_key_info_done(&info);
    }
    /* The same key twice in one file is still one key. */
    {
        _cleanup_free_ char *p = path("same-twice.asc");
        CHECK_INTEQ(ks_keyring_check(p, good, now, &info), 0);
        CHECK_INTEQ(info.n_keys, 1);
        ks_key_info_done(&info);
    }

    /* The exported keyring verifies a signature by that key with gpgv, and only by that key. */
    {
        _cleanup_free_ char *p = path("good.asc"), *o = path("two.asc");
        CHECK_INTEQ(ks_keyring_export_binary(p, good, now, &info, &data, &len), 0);
        CHECK(data && write_file("good.gpg", data, len) == 0);
        CHECK(sh("test $(gpg --list-packets %s/good.asc | grep -c '^:signature packet:') = 2",
                 tmpdir) == 0);
        CHECK(sh("test $(gpg --list-packets %s | grep -c '^:signature packet:') = 1", kr) == 0);
        free(data);
        data = NULL;
        ks_key_info_done(&info);
        CHECK(write_file("msg", "Release file\n", 13) == 0);
        CHECK(sh("gpg --batch --quiet --yes -u %s --detach-sign -o %s %s 2>/dev/null", good, sig,
                 msg) == 0);
        CHECK(sh("gpgv --keyring %s %s %s 2>/dev/null", kr, sig, msg) == 0);
        /* Negative control: the other key's keyring does not verify it. */
        CHECK(export_key(other, "other.bin", false) == 0);
        {
            _cleanup_free_ char *ob = path("other.bin");
            CHECK_INTEQ(ks_keyring_export_binary(ob, other, now, &info, &data, &len), 0);
            CHECK(data && write_file("other.gpg", data, len) == 0);
            free(data);
            data = NULL;
            ks_key_info_done(&info);
        }
        CHECK(sh("gpgv --keyring %s %s %s 2>/dev/null", okr, sig, msg) != 0);
        /* And a changed message fails with the right keyring. */
        CHECK(write_file("msg", "Release file!\n", 14) == 0);
        CHECK(sh("gpgv --keyring %s %s %s 2>/dev/null", kr, sig, msg) != 0);
        (void)o;
    }
}

int main(void)
{
    _cleanup_free_ char *tmphomes = NULL, *home = NULL;
    time_t now = time(NULL);
    int before = 0, after = 0;

    if (sh("command -v gpg >/dev/null && command -v gpgv >/dev/null") != 0) {
        fprintf(stderr, "gpg or gpgv missing: skipped\n");
        return 77;
    }
    if (!mkdtemp(tmpdir))
        return 1;
    gnupghome = path("gnupg");
    home = path("home");
    tmphomes = path("tmp");
    if (mkdir(gnupghome, 0700) < 0 || mkdir(home, 0700) < 0 || mkdir(tmphomes, 0700) < 0)
        return 1;
    /* The test's keys live here; the library must use a home of its own, under TMPDIR. */
    setenv("GNUPGHOME", gnupghome, 1);
    setenv("HOME", home, 1);
    setenv("TMPDIR", tmphomes, 1);
    count_tmp_homes(tmphomes, &before);

    test_fingerprint_normalize();
    test_real_key(now);
    test_shipped_key(now);
    test_generated_keys(now);

    /* Every temporary GNUPGHOME is gone, and nothing was written into the user's. */
    count_tmp_homes(tmphomes, &after);
    CHECK_INTEQ(before, 0);
    CHECK_INTEQ(after, 0);
    CHECK(sh("test -z \"$(ls -A %s)\"", home) == 0);
    CHECK(sh("! gpg --batch --list-keys %s 2>/dev/null | grep -q .", KS_XANMOD_KEY_FPR) == 0);

    sh("gpgconf --kill all 2>/dev/null");
    sh("rm -rf %s", tmpdir);
    TEST_DONE();
}
