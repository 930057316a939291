/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/stat.h>

#include "lib/host/osrelease.h"
#include "lib/basic/util.h"
#include "test.h"

/* Every real file in test/fixtures/os-release, with what it must give. */
static const struct {
    const char *file;
    const char *id, *id_like, *version_id, *codename, *ubuntu_codename, *name;
} fixtures[] = {
    {"ubuntu-24.04-noble.os-release", "ubuntu", "debian", "24.04", "noble", "noble", "Ubuntu"},
    {"ubuntu-22.04-jammy.os-release", "ubuntu", "debian", "22.04", "jammy", "jammy", "Ubuntu"},
    {"debian-12-bookworm.os-release", "debian", NULL, "12", "bookworm", NULL, "Debian GNU/Linux"},
    {"debian-13-trixie.os-release", "debian", NULL, "13", "trixie", NULL, "Debian GNU/Linux"},
    {"debian-trixie-testing-dec2024-no-version-id.os-release", "debian", NULL, NULL, "trixie", NULL,
     "Debian GNU/Linux"},
    {"rocky-9.3.os-release", "rocky", "rhel centos fedora", "9.3", NULL, NULL, "Rocky Linux"},
    {"almalinux-9.os-release", "almalinux", "rhel centos fedora", "9.1", NULL, NULL, "AlmaLinux"},
};

/* Hand-made texts: quoting, escapes, line endings and garbage. */
static const struct {
    const char *name;
    const char *text;
    size_t len; /* 0: strlen(text) */
    int ret;
    const char *id, *version_id, *codename, *pretty;
} cases[] = {
    {"plain", "ID=ubuntu\nVERSION_ID=24.04\n", 0, 0, "ubuntu", "24.04", NULL, NULL},
    {"no final newline", "ID=debian\nVERSION_CODENAME=bookworm", 0, 0, "debian", NULL, "bookworm",
     NULL},
    {"CRLF", "ID=debian\r\nVERSION_ID=\"12\"\r\nVERSION_CODENAME=bookworm\r\n", 0, 0, "debian",
     "12", "bookworm", NULL},
    {"single quotes", "ID='ubuntu'\nPRETTY_NAME='It''s \"x\"'\n", 0, 0, "ubuntu", NULL, NULL,
     "Its \"x\""},
    {"escapes in double quotes", "ID=x\nPRETTY_NAME=\"a \\\"b\\\" \\$c \\\\ \\n\"\n", 0, 0, "x",
     NULL, NULL, "a \"b\" $c \\ \\n"},
    {"bare backslash escape", "ID=x\nPRETTY_NAME=a\\ b\n", 0, 0, "x", NULL, NULL, "a b"},
    {"comment and blank lines", "# comment\n\n   \nID=x\n  # ID=y\n", 0, 0, "x", NULL, NULL, NULL},
    {"last assignment wins", "ID=a\nID=b\n", 0, 0, "b", NULL, NULL, NULL},
    {"leading white space", "  ID=lead\n", 0, 0, "lead", NULL, NULL, NULL},
    {"trailing white space", "ID=trail  \t\nVERSION_ID=\"1\"  \n", 0, 0, "trail", "1", NULL, NULL},
    {"unterminated quote", "ID=\"ubuntu\nVERSION_ID=1\n", 0, 0, "ubuntu", "1", NULL, NULL},
    {"empty value", "ID=x\nVERSION_ID=\n", 0, 0, "x", "", NULL, NULL},
    {"key prefix is not the key", "IDENT=x\nID_LIKE=debian\nXID=y\n", 0, -EBADMSG},
    {"space before =", "ID =ubuntu\n", 0, -EBADMSG},
    {"lower-case key", "id=ubuntu\n", 0, -EBADMSG},
    {"no ID", "NAME=x\nVERSION_ID=1\n", 0, -EBADMSG},
    {"empty ID", "ID=\n", 0, -EBADMSG},
    {"empty quoted ID", "ID=\"\"\n", 0, -EBADMSG},
    {"empty text", "", 0, -EBADMSG},
    {"only newlines", "\n\n\n", 0, -EBADMSG},
    {"NUL byte", "ID=ubuntu\n\0garbage", 19, -EBADMSG},
    {"binary garbage",
     "\x7f"
     "ELF\x02\x01\x01\xff\xfe",
     0, -EBADMSG},
    {"truncated mid-key", "NAME=\"Ubuntu\"\nI", 0, -EBADMSG},
    {"truncated mid-value", "ID=ubu", 0, 0, "ubu", NULL, NULL, NULL},
    {"garbage around", "%%%\n=x\nID=ok\n\x01\x02=3\n", 0, 0, "ok", NULL, NULL, NULL},
};

static void put(const char *base, const char *rel, const char *content)
{
    char path[4096], *slash;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", base, rel);
    for (slash = strchr(path + strlen(base) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
    f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot create %s", path);
    if (f) {
        fputs(content, f);
        fclose(f);
    }
}

static void test_fixtures(void)
{
    _cleanup_strv_free_ char **seen = NULL;
    _cleanup_free_ char *dir = ks_asprintf("%s/os-release", ks_fixture_dir());
    _cleanup_closedir_ DIR *d = NULL;
    struct dirent *de;

    for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
        _cleanup_free_ char *path = ks_asprintf("%s/%s", dir, fixtures[i].file);
        _cleanup_free_ char *text = NULL;
        ks_os_release o = {};
        size_t len = 0;

        text = ks_test_slurp(path, &len);
        CHECK_MSG(text != NULL, "cannot read %s", path);
        if (!text)
            continue;
        CHECK_INTEQ(ks_os_release_parse(text, len, &o), 0);
        CHECK_STREQ(o.id, fixtures[i].id);
        CHECK_STREQ(o.id_like, fixtures[i].id_like);
        CHECK_STREQ(o.version_id, fixtures[i].version_id);
        CHECK_STREQ(o.version_codename, fixtures[i].codename);
        CHECK_STREQ(o.ubuntu_codename, fixtures[i].ubuntu_codename);
        CHECK_STREQ(o.name, fixtures[i].name);
        CHECK(o.pretty_name != NULL);
        ks_os_release_done(&o);
        ks_strv_extend(&seen, fixtures[i].file);
    }

    /* A new fixture file must get a row above. */
    d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    while (d && (de = readdir(d))) {
        if (!ks_endswith(de->d_name, ".os-release"))
            continue;
        CHECK_MSG(ks_strv_contains(seen, de->d_name), "fixture %s has no expectation", de->d_name);
    }
    CHECK_INTEQ(ks_strv_length(seen), ARRAY_SIZE(fixtures));
}

static void test_cases(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
        ks_os_release o = {.id = NULL};
        int r;

        r = ks_os_release_parse(cases[i].text, len, &o);
        CHECK_MSG(r == cases[i].ret, "%s: got %d, want %d", cases[i].name, r, cases[i].ret);
        if (r == 0) {
            CHECK_STREQ(o.id, cases[i].id);
            CHECK_STREQ(o.version_id, cases[i].version_id);
            CHECK_STREQ(o.version_codename, cases[i].codename);
            if (cases[i].pretty)
                CHECK_STREQ(o.pretty_name, cases[i].pretty);
            ks_os_release_done(&o);
        } else {
            /* Failure leaves the output alone. */
            CHECK(o.id == NULL);
        }
    }
    /* The parser reads exactly len bytes: text after len does not count. */
    {
        ks_os_release o = {};
        CHECK_INTEQ(ks_os_release_parse("ID=abcdef", 6, &o), 0);
        CHECK_STREQ(o.id, "abc");
        ks_os_release_done(&o);
        ks_os_release_done(NULL);
    }
}

static void test_load(void)
{
    char base[] = "/tmp/kswap-test-osrelease.XXXXXX";
    _cleanup_free_ char *cmd = NULL, *p = NULL;
    ks_root *r = NULL;
    ks_os_release o = {};
    const char *path = "untouched";

    CHECK(mkdtemp(base) != NULL);
    CHECK(ks_root_open(base, &r) == 0);
    if (!r)
        return;

    /* Neither file: -ENOENT and nothing set. */
    CHECK_INTEQ(ks_os_release_load(r, &o, &path), -ENOENT);
    CHECK_STREQ(path, "untouched");

    /* Only the vendor file. */
    put(base, "usr/lib/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
    CHECK_INTEQ(ks_os_release_load(r, &o, &path), 0);
    CHECK_STREQ(path, "usr/lib/os-release");
    CHECK_STREQ(o.id, "debian");
    ks_os_release_done(&o);

    /* etc/os-release wins, also as Debian's relative symlink. */
    p = ks_asprintf("%s/etc", base);
    mkdir(p, 0755);
    free(p);
    p = ks_asprintf("%s/etc/os-release", base);
    CHECK(symlink("../usr/lib/os-release", p) == 0);
    CHECK_INTEQ(ks_os_release_load(r, &o, &path), 0);
    CHECK_STREQ(path, "etc/os-release");
    CHECK_STREQ(o.version_id, "12");
    ks_os_release_done(&o);
    unlink(p);

    /* An absolute symlink resolves inside the root, not on this machine. */
    CHECK(symlink("/usr/lib/os-release", p) == 0);
    CHECK_INTEQ(ks_os_release_load(r, &o, &path), 0);
    CHECK_STREQ(o.id, "debian");
    ks_os_release_done(&o);
    unlink(p);

    /* A garbled etc/os-release is an error, not a reason to read the fallback. */
    put(base, "etc/os-release", "garbage\n");
    path = "untouched";
    CHECK_INTEQ(ks_os_release_load(r, &o, &path), -EBADMSG);
    CHECK_STREQ(path, "untouched");
    CHECK(o.id == NULL);

    /* An unreadable etc/os-release is an error too (here: a directory). */
    unlink(p);
    CHECK(mkdir(p, 0755) == 0);
    CHECK_INTEQ(ks_os_release_load(r, &o, &path), -EISDIR);
    CHECK(o.id == NULL);
    rmdir(p);

    /* A path argument is optional. */
    put(base, "etc/os-release", "ID=ubuntu\n");
    CHECK_INTEQ(ks_os_release_load(r, &o, NULL), 0);
    CHECK_STREQ(o.id, "ubuntu");
    ks_os_release_done(&o);

    ks_root_free(r);
    cmd = ks_asprintf("rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_fixtures();
    test_cases();
    test_load();
    TEST_DONE();
}
