/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * apt sources: table-driven parser tests, then takeovers of temporary roots that are parsed
 * again, undone (byte-identical), purged, and, when apt is installed, shown to apt offline.
 */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "lib/repo/aptsource.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "test.h"

#define KEYRING_SB "/" KS_APT_KEYRING_PATH

static char tmpdir[] = "/tmp/ks-test-aptsource.XXXXXX";
static bool have_apt;

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

/* One-line format: what each text gives. */
static void test_parse_list(void)
{
    static const struct {
        const char *text;
        size_t n, n_bad;
        const char *uri, *suite, *signed_by;
        size_t n_components;
    } cases[] = {
        {"deb [signed-by=/usr/share/keyrings/xanmod-archive-keyring.gpg] http://deb.xanmod.org "
         "releases main\n",
         1, 0, "http://deb.xanmod.org", "releases",
         "/usr/share/keyrings/xanmod-archive-keyring.gpg", 1},
        {"deb http://deb.debian.org/debian bookworm main contrib non-free-firmware", 1, 0,
         "http://deb.debian.org/debian", "bookworm", NULL, 3},
        {"# deb http://deb.xanmod.org releases main\n", 0, 0, NULL, NULL, NULL, 0},
        {"deb [arch=amd64 signed-by=/k.gpg] https://deb.xanmod.org/ noble main # note\n", 1, 0,
         "https://deb.xanmod.org/", "noble", "/k.gpg", 1},
        {"  deb [ arch=amd64,i386 ] http://x/ y main\n", 1, 0, "http://x/", "y", NULL, 1},
        {"deb [Signed-By=/a#b] http://x noble main\n", 1, 0, "http://x", "noble", "/a#b", 1},
        {"deb-src http://x noble main\r\n", 1, 0, "http://x", "noble", NULL, 1},
        {"deb http://x ./\n", 1, 0, "http://x", "./", NULL, 0},
        {"deb \"http://x/a b\" noble main\n", 1, 0, "http://x/a b", "noble", NULL, 1},
        {"", 0, 0, NULL, NULL, NULL, 0},
        {" \t \n\n#\n", 0, 0, NULL, NULL, NULL, 0},
        /* malformed: apt refuses the file */
        {"deb [arch=amd64 http://x y main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb [arch] http://x y main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb [=x] http://x y main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb [a=] http://x y main\n", 0, 1, NULL, NULL, NULL, 0},
        {"rpm http://x y main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb[arch=amd64] http://x y main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb http://x\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb http://x noble\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb http://x ./ main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb nocolon noble main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb \"http://x noble main\n", 0, 1, NULL, NULL, NULL, 0},
        {"deb [signed-by=/k] \n", 0, 1, NULL, NULL, NULL, 0},
        {"deb http://a n main\nbogus line\ndeb-src http://b n main\n", 2, 1, "http://a", "n", NULL,
         1},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_apt_sources s = {0};
        CHECK_INTEQ(ks_aptsource_parse_list(cases[i].text, strlen(cases[i].text), "t.list", &s), 0);
        CHECK_MSG(s.n == cases[i].n && s.n_bad == cases[i].n_bad, "case %zu: %zu/%zu", i, s.n,
                  s.n_bad);
        if (s.n > 0 && cases[i].uri) {
            CHECK_STREQ(s.v[0].uris[0], cases[i].uri);
            CHECK_STREQ(s.v[0].suites[0], cases[i].suite);
            CHECK_STREQ(s.v[0].signed_by, cases[i].signed_by);
            CHECK_MSG(ks_strv_length(s.v[0].components) == cases[i].n_components, "case %zu", i);
            CHECK(s.v[0].enabled && s.v[0].format == KS_APT_FORMAT_LIST);
            CHECK_STREQ(s.v[0].file, "t.list");
        }
        for (size_t j = 0; j < s.n_bad; j++)
            CHECK(s.bad[j].reason && s.bad[j].line > 0 && streq(s.bad[j].file, "t.list"));
        ks_apt_sources_done(&s);
    }

    /* Line numbers, and a NUL byte inside a line. */
    {
        static const char t[] = "deb http://a n main\n# c\n\ndeb http://b n main\0x\n";
        ks_apt_sources s = {0};
        CHECK_INTEQ(ks_aptsource_parse_list(t, sizeof(t) - 1, NULL, &s), 0);
        CHECK_INTEQ(s.n, 1);
        CHECK_INTEQ(s.n_bad, 1);
        if (s.n == 1 && s.n_bad == 1) {
            CHECK_INTEQ(s.v[0].line_first, 1);
            CHECK_INTEQ(s.bad[0].line, 4);
            CHECK(s.v[0].file == NULL);
        }
        ks_apt_sources_done(&s);
    }
}

static void test_parse_deb822(void)
{
    static const struct {
        const char *text;
        size_t n, n_bad;
        bool enabled;
        const char *uri, *signed_by;
        unsigned first, last;
    } cases[] = {
        {"Types: deb\nURIs: http://deb.xanmod.org\nSuites: noble\nComponents: main\n"
         "Signed-By: /etc/apt/keyrings/x.gpg\n",
         1, 0, true, "http://deb.xanmod.org", "/etc/apt/keyrings/x.gpg", 1, 5},
        {"# head\n\nTypes: deb deb-src\nURIs: http://a\n# inner\nSuites: n n-updates\n"
         "Components: main\n\n\n",
         1, 0, true, "http://a", NULL, 3, 7},
        {"types: deb\nuris: http://a\nsuites: n\ncomponents: main\nenabled: no\n", 1, 0, false,
         "http://a", NULL, 1, 5},
        /* apt skips a disabled stanza before checking it */
        {"Enabled: no\nURIs: http://deb.xanmod.org\n", 1, 0, false, "http://deb.xanmod.org", NULL,
         1, 2},
        {"Types: deb\nURIs: http://a\nSuites: n\nComponents: main\nEnabled: yes\n", 1, 0, true,
         "http://a", NULL, 1, 5},
        {"Types: deb\r\nURIs: http://a\r\nSuites: n\r\nComponents: main\r\n", 1, 0, true,
         "http://a", NULL, 1, 4},
        {"Types: deb\nURIs: http://a\nSuites: ./\n", 1, 0, true, "http://a", NULL, 1, 3},
        {"Types: deb\nURIs: http://a\nSuites: n\nComponents: main\nSigned-By:\n"
         " -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n AAAA\n -----END PGP PUBLIC KEY BLOCK-----\n",
         1, 0, true, "http://a",
         "\n-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP "
         "PUBLIC KEY BLOCK-----",
         1, 9},
        {"", 0, 0, false, NULL, NULL, 0, 0},
        {"\n\n# only comments\n  \n", 0, 0, false, NULL, NULL, 0, 0},
        /* malformed */
        {"URIs: http://a\nSuites: n\nComponents: main\n", 0, 1, false, NULL, NULL, 0, 0},
        {"Types: deb\nSuites: n\nComponents: main\n", 0, 1, false, NULL, NULL, 0, 0},
        {"Types: deb\nURIs: http://a\nComponents: main\n", 0, 1, false, NULL, NULL, 0, 0},
        {"Types: deb\nURIs: http://a\nSuites: n\n", 0, 1, false, NULL, NULL, 0, 0},
        {"Types: deb\nURIs: http://a\nSuites: ./\nComponents: main\n", 0, 1, false, NULL, NULL, 0,
         0},
        {"Types: rpm\nURIs: http://a\nSuites: n\nComponents: main\n", 0, 1, false, NULL, NULL, 0,
         0},
        {"Types: deb\nURIs: nocolon\nSuites: n\nComponents: main\n", 0, 1, false, NULL, NULL, 0, 0},
        {" continued\nTypes: deb\n", 0, 1, false, NULL, NULL, 0, 0},
        {"Types: deb\nthis is no field\nURIs: http://a\nSuites: n\nComponents: main\n", 0, 1, false,
         NULL, NULL, 0, 0},
        {"Types deb: x\n", 0, 1, false, NULL, NULL, 0, 0},
        {": deb\n", 0, 1, false, NULL, NULL, 0, 0},
        /* two stanzas, the second broken: the first still counts */
        {"Types: deb\nURIs: http://a\nSuites: n\nComponents: main\n\nTypes: deb\n", 1, 1, true,
         "http://a", NULL, 1, 4},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_apt_sources s = {0};
        CHECK_INTEQ(
            ks_aptsource_parse_deb822(cases[i].text, strlen(cases[i].text), "t.sources", &s), 0);
        CHECK_MSG(s.n == cases[i].n && s.n_bad == cases[i].n_bad, "case %zu: %zu/%zu", i, s.n,
                  s.n_bad);
        if (s.n > 0 && cases[i].uri) {
            CHECK_MSG(s.v[0].enabled == cases[i].enabled, "case %zu", i);
            CHECK_STREQ(s.v[0].uris[0], cases[i].uri);
            CHECK_STREQ(s.v[0].signed_by, cases[i].signed_by);
            CHECK_MSG(s.v[0].line_first == cases[i].first && s.v[0].line_last == cases[i].last,
                      "case %zu: lines %u-%u", i, s.v[0].line_first, s.v[0].line_last);
            CHECK(s.v[0].format == KS_APT_FORMAT_DEB822);
        }
        ks_apt_sources_done(&s);
    }

    /* Two stanzas: every list, and where each one is. */
    {
        static const char t[] =
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n"
            "Components: main contrib\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
            "\n"
            "Types: deb deb-src\nURIs: http://deb.xanmod.org https://mirror.example/xanmod\n"
            "Suites: releases\nComponents: main\n";
        ks_apt_sources s = {0};
        CHECK_INTEQ(ks_aptsource_parse_deb822(t, sizeof(t) - 1, "two.sources", &s), 0);
        CHECK_INTEQ(s.n, 2);
        if (s.n == 2) {
            CHECK_INTEQ(ks_strv_length(s.v[0].suites), 2);
            CHECK_INTEQ(ks_strv_length(s.v[0].components), 2);
            CHECK_INTEQ(ks_strv_length(s.v[1].types), 2);
            CHECK_INTEQ(ks_strv_length(s.v[1].uris), 2);
            CHECK_INTEQ(s.v[1].line_first, 7);
            CHECK_INTEQ(s.v[1].line_last, 10);
            CHECK(!ks_apt_source_is_archive(&s.v[0], NULL));
            CHECK(ks_apt_source_is_archive(&s.v[1], NULL));
        }
        ks_apt_sources_done(&s);
    }
}

static void test_uri_match(void)
{
    static char *const mirrors[] = {(char *)"http://deb.xanmod.org",
                                    (char *)"http://dl.xanmod.org/deb", NULL};
    static const struct {
        const char *uri;
        bool match;
    } cases[] = {
        {"http://deb.xanmod.org", true},
        {"http://deb.xanmod.org/", true},
        {"https://deb.xanmod.org//", true},
        {"HTTP://DEB.XanMod.org", true},
        {"tor+http://deb.xanmod.org", true},
        {"http://dl.xanmod.org/deb/", true},
        {"https://dl.xanmod.org/deb", true},
        {"http://dl.xanmod.org", false},
        {"http://dl.xanmod.org/DEB", false},
        {"http://deb.xanmod.org/other", false},
        {"http://deb.xanmod.org.evil.example", false},
        {"ftp://deb.xanmod.org", false},
        {"deb.xanmod.org", false},
        {"http://", false},
        {"", false},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        CHECK_MSG(ks_apt_uri_matches(cases[i].uri, mirrors) == cases[i].match, "case %zu: %s", i,
                  cases[i].uri);
    CHECK(ks_apt_uri_matches("https://deb.xanmod.org/", NULL));
    CHECK(!ks_apt_uri_matches("http://dl.xanmod.org/deb", NULL));
    CHECK(!ks_apt_uri_matches(NULL, NULL));
}

/* Temporary roots. */

static char *root_path(const char *name)
{
    char *p = ks_asprintf("%s/%s", tmpdir, name);
    if (!p)
        abort();
    return p;
}

/* What apt needs to run offline, and the keyrings folder apt ships since Debian 12. */
static void base_root(const char *dir)
{
    if (sh("mkdir -p %s/var/lib/dpkg %s/var/lib/apt/lists %s/var/cache/apt %s/etc/apt/keyrings "
           "&& touch %s/var/lib/dpkg/status",
           dir, dir, dir, dir, dir) != 0)
        abort();
}

static void put(const char *root, const char *path, const char *text)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", root, path), *d = NULL;
    FILE *f;

    d = strdup(p);
    *strrchr(d, '/') = '\0';
    if (sh("mkdir -p '%s'", d) != 0)
        abort();
    f = fopen(p, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static char *get(const char *root, const char *path)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", root, path);
    FILE *f = fopen(p, "r");
    char *buf = NULL;
    size_t n = 0;

    if (!f)
        return NULL;
    if (getdelim(&buf, &n, '\0', f) < 0) {
        free(buf);
        buf = strdup("");
    }
    fclose(f);
    return buf;
}

static bool file_exists(const char *root, const char *path)
{
    _cleanup_free_ char *p = ks_asprintf("%s/%s", root, path);
    return access(p, F_OK) == 0;
}

static const char xanmod_release_list[] =
    "deb [signed-by=/usr/share/keyrings/xanmod-archive-keyring.gpg] http://deb.xanmod.org "
    "releases main\n";
static const char keyring_bytes[] = "\x99\x01\x0d"
                                    "fake keyring bytes";

static const ks_apt_takeover takeover_noble = {
    .suite = "noble", .keyring = keyring_bytes, .keyring_len = sizeof(keyring_bytes) - 1};

/* Counts enabled sources of the archive and checks they are ours. */
static size_t archive_sources(const char *dir, char *const *archives, bool *ret_ours)
{
    _cleanup_(ks_root_freep) ks_root *r = NULL;
    ks_apt_sources s = {0};
    size_t n = 0;

    *ret_ours = true;
    if (ks_root_open(dir, &r) < 0 || ks_aptsource_read(r, &s) < 0)
        return (size_t)-1;
    for (size_t i = 0; i < s.n; i++) {
        if (!s.v[i].enabled || !ks_apt_source_is_archive(&s.v[i], archives))
            continue;
        n++;
        if (!streq_ptr(s.v[i].signed_by, KEYRING_SB) || !streq(s.v[i].file, KS_APT_SOURCE_PATH))
            *ret_ours = false;
    }
    ks_apt_sources_done(&s);
    return n;
}

static size_t enabled_sources(const char *dir)
{
    _cleanup_(ks_root_freep) ks_root *r = NULL;
    ks_apt_sources s = {0};
    size_t n = 0;

    if (ks_root_open(dir, &r) < 0 || ks_aptsource_read(r, &s) < 0)
        return (size_t)-1;
    for (size_t i = 0; i < s.n; i++)
        n += s.v[i].enabled;
    ks_apt_sources_done(&s);
    return n;
}

/* apt itself, offline: reads the sources without "Conflicting values set for option Signed-By". */
static int apt_reads(const char *dir)
{
    if (!have_apt)
        return 0;
    base_root(dir);
    return sh("apt-get -o Dir=%s -o Dir::State::status=%s/var/lib/dpkg/status "
              "-o Debug::NoLocking=1 indextargets > %s.apt.out 2>&1 && "
              "! grep -q Conflicting %s.apt.out",
              dir, dir, dir, dir);
}

static void test_takeover_release_list(void)
{
    _cleanup_free_ char *dir = root_path("release"), *orig = root_path("release.orig");
    _cleanup_free_ char *src = NULL, *kr = NULL, *moved = NULL;
    _cleanup_(ks_root_freep) ks_root *r = NULL;
    ks_transaction c = {0}, again = {0};
    bool ours;

    base_root(dir);
    put(dir, "etc/apt/sources.list.d/xanmod-release.list", xanmod_release_list);
    put(dir, "etc/apt/sources.list", "deb http://deb.debian.org/debian bookworm main\n");
    CHECK(sh("cp -a %s %s", dir, orig) == 0);
    CHECK(ks_root_open(dir, &r) == 0);
    CHECK_INTEQ(archive_sources(dir, NULL, &ours), 1);
    CHECK(!ours);

    /* Planning changes nothing. */
    CHECK_INTEQ(ks_aptsource_plan(r, &takeover_noble, &c), 0);
    CHECK_INTEQ(c.n, 3);
    if (c.n == 3) {
        CHECK(c.v[0].kind == KS_FILE_CHANGE_WRITE && streq(c.v[0].path, KS_APT_KEYRING_PATH));
        CHECK(c.v[1].kind == KS_FILE_CHANGE_RENAME &&
              streq(c.v[1].new_path, "etc/apt/sources.list.d/xanmod-release.list.kswap.disabled"));
        CHECK(c.v[2].kind == KS_FILE_CHANGE_WRITE && streq(c.v[2].path, KS_APT_SOURCE_PATH));
        CHECK(!c.v[0].old_exists && !c.v[2].old_exists);
        for (size_t i = 0; i < c.n; i++)
            CHECK(c.v[i].what && ks_file_change_kind_to_string(c.v[i].kind));
    }
    CHECK(sh("diff -r %s %s", orig, dir) == 0);

    CHECK_INTEQ(ks_transaction_apply(r, &c), 0);
    CHECK_INTEQ(archive_sources(dir, NULL, &ours), 1);
    CHECK(ours);
    CHECK_INTEQ(enabled_sources(dir), 2); /* Debian's stays */
    src = get(dir, KS_APT_SOURCE_PATH);
    CHECK(src && strstr(src, "\nTypes: deb\nURIs: http://deb.xanmod.org\nSuites: noble\n"
                             "Components: main\nSigned-By: /etc/apt/keyrings/"
                             "xanmod-archive-keyring.gpg\n"));
    CHECK(src && ks_startswith(src, KS_APT_SOURCE_MARKER));
    kr = get(dir, KS_APT_KEYRING_PATH);
    CHECK(kr && streq(kr, keyring_bytes));
    moved = get(dir, "etc/apt/sources.list.d/xanmod-release.list.kswap.disabled");
    CHECK_STREQ(moved, xanmod_release_list);
    CHECK(!file_exists(dir, "etc/apt/sources.list.d/xanmod-release.list"));
    CHECK(sh("test $(stat -c %%a %s/%s) = 644", dir, KS_APT_KEYRING_PATH) == 0);
    CHECK(apt_reads(dir) == 0);

    /* Everything in place: nothing more to do; applying again is harmless. */
    CHECK_INTEQ(ks_aptsource_plan(r, &takeover_noble, &again), 0);
    CHECK_INTEQ(again.n, 0);
    ks_transaction_done(&again);
    CHECK_INTEQ(ks_transaction_apply(r, &c), 0);

    /* Undo gives back the very bytes, twice over. */
    CHECK_INTEQ(ks_transaction_undo(r, &c), 0);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);
    CHECK_INTEQ(ks_transaction_undo(r, &c), 0);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);
    ks_transaction_done(&c);

    /* takeover + purge (from the root alone) also ends where it started. */
    CHECK_INTEQ(ks_aptsource_takeover(r, &takeover_noble, &c), 0);
    CHECK_INTEQ(c.n, 3);
    ks_transaction_done(&c);
    CHECK_INTEQ(ks_aptsource_remove(r, &c), 0);
    CHECK_INTEQ(c.n, 3); /* source, rename back, keyring */
    ks_transaction_done(&c);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);
    CHECK_INTEQ(ks_aptsource_plan_remove(r, &c), 0);
    CHECK_INTEQ(c.n, 0);
    ks_transaction_done(&c);
}

static void test_takeover_mixed(void)
{
    static char *const archives[] = {(char *)"http://deb.xanmod.org",
                                     (char *)"http://dl.xanmod.org/deb", NULL};
    static const char sources_list[] =
        "# main list\n"
        "deb http://deb.debian.org/debian bookworm main\n"
        "deb [arch=amd64] https://deb.xanmod.org/ bookworm main # added by hand\n"
        "deb http://security.debian.org/debian-security bookworm-security main\n";
    static const char mixed_list[] =
        "deb https://download.docker.com/linux/debian bookworm stable\n"
        "deb http://dl.xanmod.org/deb releases main\r\n"
        "deb-src http://deb.xanmod.org releases main";
    static const char two_sources[] = "# two stanzas\n"
                                      "Types: deb\n"
                                      "URIs: http://deb.debian.org/debian\n"
                                      "Suites: bookworm-updates\n"
                                      "Components: main\n"
                                      "\n"
                                      "Types: deb\n"
                                      "# the kernel\n"
                                      "URIs: https://deb.xanmod.org\n"
                                      "Suites: releases\n"
                                      "Components: main\n"
                                      "Signed-By: /usr/share/keyrings/xanmod-archive-keyring.gpg\n";
    static const char disabled_sources[] =
        "Types: deb\nURIs: http://deb.xanmod.org\nSuites: releases\nComponents: main\n"
        "Enabled: no\n";
    static const char bad_list[] = "deb http://deb.xanmod.org noble\n";
    static const char only_xanmod_sources[] =
        "Types: deb\nURIs: http://deb.xanmod.org/\nSuites: releases\nComponents: main\n\n"
        "Types: deb\nURIs: http://deb.xanmod.org/\nSuites: trixie\nComponents: main\n";
    _cleanup_free_ char *dir = root_path("mixed"), *orig = root_path("mixed.orig");
    _cleanup_free_ char *a = NULL, *b = NULL, *d = NULL;
    _cleanup_(ks_root_freep) ks_root *r = NULL;
    ks_apt_takeover t = takeover_noble;
    ks_transaction c = {0};
    bool ours;

    t.archive_uris = archives;
    t.suite = "bookworm";
    base_root(dir);
    put(dir, "etc/apt/sources.list", sources_list);
    put(dir, "etc/apt/sources.list.d/mixed.list", mixed_list);
    put(dir, "etc/apt/sources.list.d/two.sources", two_sources);
    put(dir, "etc/apt/sources.list.d/off.sources", disabled_sources);
    put(dir, "etc/apt/sources.list.d/only.sources", only_xanmod_sources);
    put(dir, "etc/apt/sources.list.d/zz-bad.list.save", xanmod_release_list); /* apt skips it */
    CHECK(sh("chmod 600 %s/etc/apt/sources.list.d/mixed.list", dir) == 0);
    CHECK(sh("cp -a %s %s", dir, orig) == 0);
    CHECK(ks_root_open(dir, &r) == 0);
    CHECK_INTEQ(archive_sources(dir, archives, &ours), 6);

    CHECK_INTEQ(ks_aptsource_takeover(r, &t, &c), 0);
    /* keyring, sources.list, mixed.list, only.sources (renamed), two.sources, our source */
    CHECK_INTEQ(c.n, 6);
    CHECK_INTEQ(archive_sources(dir, archives, &ours), 1);
    CHECK(ours);
    CHECK_INTEQ(enabled_sources(dir), 5); /* debian, security, docker, updates, ours */
    a = get(dir, "etc/apt/sources.list");
    CHECK_STREQ(a, "# main list\n"
                   "deb http://deb.debian.org/debian bookworm main\n"
                   "# disabled by kswap: deb [arch=amd64] https://deb.xanmod.org/ bookworm main "
                   "# added by hand\n"
                   "deb http://security.debian.org/debian-security bookworm-security main\n");
    b = get(dir, "etc/apt/sources.list.d/mixed.list");
    CHECK_STREQ(b, "deb https://download.docker.com/linux/debian bookworm stable\n"
                   "# disabled by kswap: deb http://dl.xanmod.org/deb releases main\r\n"
                   "# disabled by kswap: deb-src http://deb.xanmod.org releases main");
    CHECK(sh("test $(stat -c %%a %s/etc/apt/sources.list.d/mixed.list) = 600", dir) == 0);
    d = get(dir, "etc/apt/sources.list.d/two.sources");
    CHECK(d && strstr(d, "\n\n# disabled by kswap: Types: deb\n# disabled by kswap: # the kernel\n"
                         "# disabled by kswap: URIs: https://deb.xanmod.org\n"));
    CHECK(d && ks_endswith(d, "# disabled by kswap: Signed-By: /usr/share/keyrings/"
                              "xanmod-archive-keyring.gpg\n"));
    CHECK(file_exists(dir, "etc/apt/sources.list.d/only.sources.kswap.disabled"));
    CHECK(!file_exists(dir, "etc/apt/sources.list.d/only.sources"));
    CHECK(sh("cmp %s/etc/apt/sources.list.d/off.sources %s/etc/apt/sources.list.d/off.sources", dir,
             orig) == 0);
    CHECK(apt_reads(dir) == 0);

    /* Undo: byte-identical, modes too. */
    CHECK_INTEQ(ks_transaction_undo(r, &c), 0);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);
    CHECK(sh("test $(stat -c %%a %s/etc/apt/sources.list.d/mixed.list) = 600", dir) == 0);
    ks_transaction_done(&c);

    /* A malformed file naming the archive: reported by the parser, left alone. */
    put(dir, "etc/apt/sources.list.d/bad.list", bad_list);
    CHECK_INTEQ(ks_aptsource_takeover(r, &t, &c), 0);
    CHECK(sh("cmp -s %s/etc/apt/sources.list.d/bad.list - <<'EOF'\n%sEOF", dir, bad_list) == 0);
    /* Purge from the root alone: everything as it was (bad.list aside). */
    ks_transaction_done(&c);
    CHECK_INTEQ(ks_aptsource_remove(r, &c), 0);
    ks_transaction_done(&c);
    CHECK(sh("rm %s/etc/apt/sources.list.d/bad.list && diff -r %s %s", dir, orig, dir) == 0);
}

/* XanMod's current instructions: their list names our keyring path with the same suite. */
static void test_takeover_same_keyring(void)
{
    _cleanup_free_ char *dir = root_path("same"), *orig = root_path("same.orig");
    _cleanup_free_ char *kr = NULL;
    _cleanup_(ks_root_freep) ks_root *r = NULL;
    ks_transaction c = {0};
    bool ours;

    base_root(dir);
    put(dir, "etc/apt/sources.list.d/xanmod-release.list",
        "deb [signed-by=/etc/apt/keyrings/xanmod-archive-keyring.gpg] http://deb.xanmod.org "
        "noble main\n");
    put(dir, KS_APT_KEYRING_PATH, "their dearmored key");
    /* Our source beside theirs, as a tool that only adds would leave it: apt refuses that. */
    put(dir, "etc/apt/sources.list.d/xanmod-dup.list",
        "deb [signed-by=/usr/share/keyrings/xanmod.gpg] http://deb.xanmod.org noble main\n");
    CHECK(!have_apt || apt_reads(dir) != 0);
    CHECK(sh("rm %s/etc/apt/sources.list.d/xanmod-dup.list && cp -a %s %s", dir, dir, orig) == 0);
    CHECK(ks_root_open(dir, &r) == 0);

    CHECK_INTEQ(ks_aptsource_takeover(r, &takeover_noble, &c), 0);
    CHECK_INTEQ(c.n, 3);
    CHECK(c.n == 3 && c.v[0].old_exists && c.v[0].old_len == strlen("their dearmored key"));
    CHECK_INTEQ(archive_sources(dir, NULL, &ours), 1);
    CHECK(ours);
    CHECK(apt_reads(dir) == 0);
    CHECK_INTEQ(ks_transaction_undo(r, &c), 0);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);
    ks_transaction_done(&c);

    /* Purge keeps the keyring, since the restored list names it. */
    CHECK_INTEQ(ks_aptsource_takeover(r, &takeover_noble, &c), 0);
    ks_transaction_done(&c);
    CHECK_INTEQ(ks_aptsource_remove(r, &c), 0);
    CHECK_INTEQ(c.n, 2);
    ks_transaction_done(&c);
    CHECK(file_exists(dir, KS_APT_KEYRING_PATH));
    CHECK(file_exists(dir, "etc/apt/sources.list.d/xanmod-release.list"));
    CHECK(!file_exists(dir, KS_APT_SOURCE_PATH));
    kr = get(dir, KS_APT_KEYRING_PATH);
    CHECK(kr && streq(kr, keyring_bytes)); /* the same key, as kswap wrote it */
}

static void test_takeover_edges(void)
{
    _cleanup_free_ char *dir = root_path("edges"), *orig = root_path("edges.orig");
    _cleanup_(ks_root_freep) ks_root *r = NULL;
    ks_apt_takeover t = takeover_noble;
    ks_transaction c = {0}, part = {0};
    bool ours;

    /* Our file name, written by someone else with another archive in it: refused. */
    put(dir, KS_APT_SOURCE_PATH,
        "Types: deb\nURIs: http://deb.xanmod.org\nSuites: noble\nComponents: main\n\n"
        "Types: deb\nURIs: http://example.org\nSuites: noble\nComponents: main\n");
    CHECK(sh("cp -a %s %s", dir, orig) == 0);
    CHECK(ks_root_open(dir, &r) == 0);
    CHECK_INTEQ(ks_aptsource_plan(r, &t, &c), -EEXIST);
    CHECK_INTEQ(ks_aptsource_takeover(r, &t, &c), -EEXIST);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);

    /* Only the archive in it: replaced, and undo restores it. */
    put(dir, KS_APT_SOURCE_PATH,
        "Types: deb\nURIs: https://deb.xanmod.org/\nSuites: releases\n"
        "Components: main\n");
    /* A disabled copy exists already: the new list is commented out instead of renamed. */
    put(dir, "etc/apt/sources.list.d/xanmod-release.list", xanmod_release_list);
    put(dir, "etc/apt/sources.list.d/xanmod-release.list.kswap.disabled", "older\n");
    CHECK(sh("rm -r %s && cp -a %s %s", orig, dir, orig) == 0);
    CHECK_INTEQ(ks_aptsource_plan(r, &t, &c), 0);
    CHECK_INTEQ(c.n, 3);
    CHECK(c.n == 3 && c.v[1].kind == KS_FILE_CHANGE_WRITE && c.v[2].old_exists);

    /* Interrupted after the first two changes, then run again: same end. */
    part.v = c.v;
    part.n = 2;
    CHECK_INTEQ(ks_transaction_apply(r, &part), 0);
    CHECK_INTEQ(archive_sources(dir, NULL, &ours), 1); /* never two */
    CHECK_INTEQ(ks_transaction_apply(r, &c), 0);
    CHECK_INTEQ(archive_sources(dir, NULL, &ours), 1);
    CHECK(ours);
    CHECK_INTEQ(ks_transaction_undo(r, &c), 0);
    CHECK(sh("diff -r %s %s", orig, dir) == 0);
    ks_transaction_done(&c);

    /* Bad arguments. */
    t.suite = NULL;
    CHECK_INTEQ(ks_aptsource_plan(r, &t, &c), -EINVAL);
    t.suite = "no ble";
    CHECK_INTEQ(ks_aptsource_plan(r, &t, &c), -EINVAL);
    t.suite = "noble";
    t.keyring_len = 0;
    CHECK_INTEQ(ks_aptsource_plan(r, &t, &c), -EINVAL);

    /* An empty root: the two files, nothing else. */
    {
        _cleanup_free_ char *e = root_path("empty");
        _cleanup_(ks_root_freep) ks_root *er = NULL;
        CHECK(sh("mkdir -p %s", e) == 0);
        CHECK(ks_root_open(e, &er) == 0);
        CHECK_INTEQ(ks_aptsource_takeover(er, &takeover_noble, &c), 0);
        CHECK_INTEQ(c.n, 2);
        CHECK_INTEQ(archive_sources(e, NULL, &ours), 1);
        CHECK(c.n == 2 && streq_ptr(c.v[0].made_dir, "etc") && streq_ptr(c.v[1].made_dir, "etc"));
        CHECK_INTEQ(ks_transaction_undo(er, &c), 0);
        CHECK(sh("test -z \"$(find %s -mindepth 1)\"", e) == 0); /* folders too */
        ks_transaction_done(&c);
        CHECK_INTEQ(ks_aptsource_takeover(er, &takeover_noble, &c), 0);
        ks_transaction_done(&c);
        CHECK_INTEQ(ks_aptsource_remove(er, &c), 0);
        CHECK_INTEQ(c.n, 2);
        ks_transaction_done(&c);
        CHECK(sh("test -z \"$(find %s -type f)\"", e) == 0);
    }
}

/* [repository] uri, suite and components: a mirror, an apt cache, a flat file: repository. */
static void test_takeover_mirror(void)
{
    static char *const two[] = {(char *)"main", (char *)"non-free", NULL};
    static char *const none[] = {NULL};
    static const struct {
        const char *name, *uri, *suite;
        char *const *components;
        const char *existing; /* a .list the admin wrote, or NULL */
        int result;
        const char *uris_line, *suites_line, *components_line; /* NULL: no such line */
        bool existing_disabled; /* the admin's list was renamed away */
        const char *apt_index;  /* a URI apt's indextargets lists for the source, or NULL */
    } cases[] = {
        {"mirror", "http://mirror.example/xanmod", "bookworm", two,
         "deb [signed-by=/usr/share/keyrings/x.gpg] http://mirror.example/xanmod/ bookworm main\n",
         0, "URIs: http://mirror.example/xanmod\n", "Suites: bookworm\n",
         "Components: main non-free\n", true,
         "URI: http://mirror.example/xanmod/dists/bookworm/non-free/binary-amd64/Packages"},
        {"cache", "http://10.0.0.1:3142/deb.xanmod.org", "trixie", NULL,
         "deb http://deb.xanmod.org trixie main\n", 0,
         "URIs: http://10.0.0.1:3142/deb.xanmod.org\n", "Suites: trixie\n", "Components: main\n",
         true, "URI: http://10.0.0.1:3142/deb.xanmod.org/dists/trixie/main/binary-amd64/Packages"},
        {"file", "file:/srv/kswap-repo", "./", NULL, "deb file:/srv/kswap-repo/ ./\n", 0,
         "URIs: file:/srv/kswap-repo\n", "Suites: ./\n", NULL, true,
         "URI: file:/srv/kswap-repo/./Packages"},
        {"file-other", "file:/srv/kswap-repo", "./", NULL, "deb file:/srv/other ./\n", 0,
         "URIs: file:/srv/kswap-repo\n", "Suites: ./\n", NULL, false,
         "URI: file:/srv/kswap-repo/./Packages"},
        {"flat-with-components", "file:/srv/r", "./", two, NULL, -EINVAL, NULL, NULL, NULL, false,
         NULL},
        {"no-components", "http://m.example", "bookworm", none, NULL, -EINVAL, NULL, NULL, NULL,
         false, NULL},
        {"bad-uri", "http://m.example/ x", "bookworm", NULL, NULL, -EINVAL, NULL, NULL, NULL, false,
         NULL},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *dir = root_path(cases[i].name), *src = NULL;
        _cleanup_(ks_root_freep) ks_root *r = NULL;
        char *const archives[] = {(char *)KS_APT_XANMOD_URI, (char *)cases[i].uri, NULL};
        ks_apt_takeover t = takeover_noble;
        ks_transaction c = {0};
        bool ours;
        size_t len;

        t.archive_uris = archives;
        t.uri = cases[i].uri;
        t.suite = cases[i].suite;
        t.components = cases[i].components;
        base_root(dir);
        if (cases[i].existing)
            put(dir, "etc/apt/sources.list.d/admin.list", cases[i].existing);
        CHECK(ks_root_open(dir, &r) == 0);
        CHECK_MSG(ks_aptsource_takeover(r, &t, &c) == cases[i].result, "%s", cases[i].name);
        if (cases[i].result < 0) {
            ks_transaction_done(&c);
            continue;
        }
        CHECK(ks_root_read_file(r, KS_APT_SOURCE_PATH, 65536, &src, &len) == 0);
        CHECK_MSG(src && strstr(src, cases[i].uris_line), "%s: %s", cases[i].name, strempty(src));
        CHECK_MSG(src && strstr(src, cases[i].suites_line), "%s", cases[i].name);
        CHECK_MSG(src && (cases[i].components_line ? strstr(src, cases[i].components_line) != NULL
                                                   : strstr(src, "Components:") == NULL),
                  "%s: %s", cases[i].name, strempty(src));
        CHECK_MSG(ks_root_exists(r, "etc/apt/sources.list.d/admin.list") ==
                      (cases[i].existing && !cases[i].existing_disabled),
                  "%s", cases[i].name);
        CHECK_MSG(archive_sources(dir, archives, &ours) == 1 && ours, "%s", cases[i].name);
        /* apt itself reads the source kswap wrote without complaint. */
        CHECK_MSG(apt_reads(dir) == 0, "%s", cases[i].name);
        CHECK_MSG(!have_apt || sh("apt-get -o Dir=%s -o Dir::State::status=%s/var/lib/dpkg/status "
                                  "-o Debug::NoLocking=1 indextargets --no-release-info 2>&1 | "
                                  "grep -qxF '%s'",
                                  dir, dir, cases[i].apt_index) == 0,
                  "%s: apt does not list %s", cases[i].name, cases[i].apt_index);
        CHECK_INTEQ(ks_transaction_undo(r, &c), 0);
        ks_transaction_done(&c);
    }
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        return 1;
    have_apt = sh("command -v apt-get >/dev/null && command -v apt-config >/dev/null") == 0;
    if (!have_apt)
        fprintf(stderr, "apt-get missing: apt's own reading of the results is skipped\n");

    test_parse_list();
    test_parse_deb822();
    test_uri_match();
    test_takeover_release_list();
    test_takeover_mixed();
    test_takeover_same_keyring();
    test_takeover_edges();
    test_takeover_mirror();

    sh("rm -rf %s", tmpdir);
    TEST_DONE();
}
