/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/util.h"
#include "lib/repo/packages-index.h"
#include "lib/repo/probe.h"
#include "test.h"

/* What apt-get update prints, as apt 2.6 and 2.9 word it (the words are the contract). */
static void test_apt_complaint(void)
{
    static const struct {
        const char *name, *output;
        ks_repo_verdict verdict;
        const char *lines; /* the complaint kswap quotes; NULL: none */
    } cases[] = {
        {"clean", "Get:1 file:/r bookworm InRelease [2,345 B]\nReading package lists...\n",
         KS_REPO_OK, NULL},
        {"unsigned",
         "Ign:1 file:/r bookworm InRelease\nGet:2 file:/r bookworm Release [1,234 B]\n"
         "Ign:3 file:/r bookworm Release.gpg\nReading package lists...\n"
         "E: The repository 'file:/r bookworm Release' is not signed.\n"
         "N: Updating from such a repository can't be done securely, and is therefore disabled "
         "by default.\n",
         KS_REPO_UNTRUSTED, "E: The repository 'file:/r bookworm Release' is not signed."},
        {"no-pubkey",
         "Err:1 file:/r bookworm InRelease\n  The following signatures couldn't be verified "
         "because the public key is not available: NO_PUBKEY 711CABDE329E566E\n"
         "W: GPG error: file:/r bookworm InRelease: NO_PUBKEY 711CABDE329E566E\n",
         KS_REPO_UNTRUSTED,
         "Err:1 file:/r bookworm InRelease; The following signatures couldn't be verified "
         "because the public key is not available: NO_PUBKEY 711CABDE329E566E; W: GPG error: "
         "file:/r bookworm InRelease: NO_PUBKEY 711CABDE329E566E"},
        {"badsig", "W: GPG error: http://m.example bookworm InRelease: BADSIG 86F7D09EE734E623\n",
         KS_REPO_UNTRUSTED,
         "W: GPG error: http://m.example bookworm InRelease: BADSIG "
         "86F7D09EE734E623"},
        {"expired",
         "W: GPG error: http://m.example bookworm InRelease: The following signatures were "
         "invalid: EXPKEYSIG 86F7D09EE734E623\n",
         KS_REPO_UNTRUSTED,
         "W: GPG error: http://m.example bookworm InRelease: The following signatures were "
         "invalid: EXPKEYSIG 86F7D09EE734E623"},
        {"no-suite",
         "Err:2 file:/r trixie Release\n  File not found - /r/dists/trixie/Release (2: No such "
         "file or directory)\nE: The repository 'file:/r trixie Release' does not have a "
         "Release file.\n",
         KS_REPO_UNREACHABLE,
         "Err:2 file:/r trixie Release; File not found - /r/dists/trixie/Release (2: No such "
         "file or directory); E: The repository 'file:/r trixie Release' does not have a Release "
         "file."},
        {"dns",
         "Err:1 http://deb.xanmod.org bookworm InRelease\n  Could not resolve "
         "'deb.xanmod.org'\nW: Failed to fetch http://deb.xanmod.org/dists/bookworm/InRelease  "
         "Could not resolve 'deb.xanmod.org'\n",
         KS_REPO_UNREACHABLE,
         "Err:1 http://deb.xanmod.org bookworm InRelease; Could not resolve 'deb.xanmod.org'; W: "
         "Failed to fetch http://deb.xanmod.org/dists/bookworm/InRelease  Could not resolve "
         "'deb.xanmod.org'"},
        {"progress-cr", "0% [Working]\r\rE: The repository 'x' is not signed.\r\n",
         KS_REPO_UNTRUSTED, "E: The repository 'x' is not signed."},
        {"indented-not-after-err", "Hit:1 x\n  some detail\n", KS_REPO_OK, NULL},
        {"empty", "", KS_REPO_OK, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *lines = NULL;
        ks_repo_verdict v = _KS_REPO_VERDICT_INVALID;
        CHECK_MSG(ks_repo_apt_complaint(cases[i].output, &v, &lines) == 0, "%s", cases[i].name);
        CHECK_MSG(v == cases[i].verdict, "%s: verdict %s", cases[i].name,
                  strempty(ks_repo_verdict_to_string(v)));
        CHECK_MSG(streq_ptr(lines, cases[i].lines), "%s: lines '%s'", cases[i].name,
                  strempty(lines));
    }
}

static void test_index_scan(void)
{
    static const struct {
        const char *name, *text, *package;
        size_t n_packages;
        bool found;
        const char *version;
    } cases[] = {
        {"one", "Package: linux-xanmod-lts-x64v3\nVersion: 6.12.9-1\nArchitecture: amd64\n",
         "linux-xanmod-lts-x64v3", 1, true, "6.12.9-1"},
        {"version-first", "Version: 2\nPackage: p\n\nPackage: q\nVersion: 3\n", "p", 2, true, "2"},
        {"last-wins", "Package: p\nVersion: 1\n\nPackage: p\nVersion: 2\n", "p", 2, true, "2"},
        {"prefix-only", "Package: linux-xanmod-lts-x64v3-dbg\nVersion: 1\n",
         "linux-xanmod-lts-x64v3", 1, false, NULL},
        {"case-and-blanks", "package:\t p \r\nVERSION:  7 \r\n\r\n", "p", 1, true, "7"},
        {"continuation", "Package: q\nDescription: x\n Package: p\n", "p", 1, false, NULL},
        {"no-version", "Package: p\n", "p", 1, true, NULL},
        {"empty", "", "p", 0, false, NULL},
        {"garbage", "\x01\xff:\n:\nPackage\n:Package: p\n", "p", 0, false, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_packages_index_info info = {0};
        CHECK_MSG(ks_packages_index_scan(cases[i].text, strlen(cases[i].text), cases[i].package,
                                         &info) == 0,
                  "%s", cases[i].name);
        CHECK_MSG(info.n_packages == cases[i].n_packages, "%s: %zu packages", cases[i].name,
                  info.n_packages);
        CHECK_MSG(info.found == cases[i].found, "%s: found", cases[i].name);
        CHECK_MSG(streq_ptr(info.version, cases[i].version), "%s: version %s", cases[i].name,
                  strempty(info.version));
        ks_packages_index_info_done(&info);
    }
}

static void test_index_find(void)
{
    static const struct {
        const char *name, *text;
        size_t n;
        const char *version[3], *depends[3];
    } cases[] = {
        {"two-versions",
         "Package: m\nVersion: 1\nDepends: linux-image-A\n\nPackage: x\nVersion: 9\n\n"
         "Package: m\nDepends: linux-image-B (= 2), h\nVersion: 2\n",
         2,
         {"1", "2"},
         {"linux-image-A", "linux-image-B (= 2), h"}},
        {"no-depends", "Package: m\nVersion: 1\n", 1, {"1"}, {NULL}},
        {"no-version-left-out", "Package: m\nDepends: linux-image-A\n\n", 0, {NULL}, {NULL}},
        {"crlf-and-continuation",
         "Package: m\r\nVersion: 3\r\nDescription: d\r\n Depends: linux-image-Z\r\n",
         1,
         {"3"},
         {NULL}},
        {"garbage", "\xff\x01Package m\n:\n", 0, {NULL}, {NULL}},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_packages_stanzas l = {0};
        CHECK_MSG(ks_packages_index_find(cases[i].text, strlen(cases[i].text), "m", &l) == 0, "%s",
                  cases[i].name);
        CHECK_MSG(l.n == cases[i].n, "%s: %zu stanzas", cases[i].name, l.n);
        for (size_t k = 0; k < l.n && k < 3; k++) {
            CHECK_MSG(streq_ptr(l.v[k].version, cases[i].version[k]), "%s: version %zu '%s'",
                      cases[i].name, k, strempty(l.v[k].version));
            CHECK_MSG(streq_ptr(l.v[k].depends, cases[i].depends[k]), "%s: depends %zu '%s'",
                      cases[i].name, k, strempty(l.v[k].depends));
        }
        ks_packages_stanzas_done(&l);
    }
}

static void test_depends_image(void)
{
    static const struct {
        const char *depends, *release; /* NULL: none */
    } cases[] = {
        {"linux-image-6.18.50-x64v3-xanmod1, linux-headers-6.18.50-x64v3-xanmod1",
         "6.18.50-x64v3-xanmod1"},
        {"linux-image-6.18.50-x64v3-xanmod1 (= 6.18.50-x64v3-xanmod1-0~20250601.g1)",
         "6.18.50-x64v3-xanmod1"},
        {"linux-headers-6.1.0-29-amd64, linux-image-6.1.0-29-amd64", "6.1.0-29-amd64"},
        {"foo | linux-image-6.1.0-30-amd64:amd64 (>= 1)", "6.1.0-30-amd64"},
        {"linux-image-amd64", "amd64"},
        {"linux-image-", NULL},
        {"linux-image-:amd64", NULL},
        {"linux-imag", NULL},
        {"", NULL},
        {" , | ,", NULL},
        {"libc6 (>= 2.36)", NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *rel = NULL;
        int r = ks_packages_depends_image(cases[i].depends, &rel);
        CHECK_MSG(r == (cases[i].release ? 1 : 0), "'%s': %d", cases[i].depends, r);
        CHECK_MSG(streq_ptr(rel, cases[i].release), "'%s': '%s'", cases[i].depends, strempty(rel));
    }
}

/* apt's own names for its lists (URItoFileName), as apt-get update leaves them. */
static void test_lists_prefix(void)
{
    static const struct {
        const char *uri, *suite, *prefix;
    } cases[] = {
        {"http://deb.xanmod.org", "bookworm", "deb.xanmod.org_dists_bookworm_"},
        {"http://deb.xanmod.org/", "noble", "deb.xanmod.org_dists_noble_"},
        {"https://user:secret@mirror.example:8080/xanmod", "trixie",
         "mirror.example:8080_xanmod_dists_trixie_"},
        {"file:/srv/kswap-repo", "bookworm", "_srv_kswap-repo_dists_bookworm_"},
        {"file:///srv/r", "bookworm", "_srv_r_dists_bookworm_"},
        {"http://m.example/a_b~c", "s", "m.example_a%5fb%7ec_dists_s_"},
        {"http://m.example/flat", "repo/", "m.example_flat_repo_"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *p = ks_apt_lists_prefix(cases[i].uri, cases[i].suite);
        CHECK_MSG(streq_ptr(p, cases[i].prefix), "%s %s: '%s'", cases[i].uri, cases[i].suite,
                  strempty(p));
    }
}

int main(void)
{
    test_apt_complaint();
    test_index_scan();
    test_index_find();
    test_depends_image();
    test_lists_prefix();
    TEST_DONE();
}
