/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/stat.h>

#include "grub/defaults.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "test.h"

typedef struct kv {
    const char *key, *value; /* value NULL: not set */
} kv;

#define MAX_KV 10

/* Each real file parsed on its own. */
static const struct {
    const char *file;
    size_t n, skipped;
    kv want[MAX_KV];
} fixtures[] = {
    {"default-grub.ubuntu-24.04-aws",
     5,
     1,
     {{"GRUB_DEFAULT", "0"},
      {"GRUB_TIMEOUT_STYLE", "hidden"},
      {"GRUB_TIMEOUT", "0"},
      {"GRUB_DISTRIBUTOR", NULL}, /* `( . /etc/os-release; ... )`: not evaluated */
      {"GRUB_CMDLINE_LINUX_DEFAULT", "quiet splash"},
      {"GRUB_CMDLINE_LINUX", ""},
      {"GRUB_TERMINAL", NULL}}},
    {"default-grub.ubuntu-22.04-aws",
     6,
     1,
     {{"GRUB_DEFAULT", "0"}, {"GRUB_TERMINAL", "console"}, {"GRUB_DISTRIBUTOR", NULL}}},
    {"default-grub.ubuntu-22.04-cloudimg-stock",
     5,
     1,
     {{"GRUB_CMDLINE_LINUX_DEFAULT", "quiet splash"}, {"GRUB_TIMEOUT_STYLE", "hidden"}}},
    {"default-grub.ubuntu-22.04-ovh-serial",
     7,
     1,
     {{"GRUB_CMDLINE_LINUX", "nomodeset iommu=pt console=tty0 console=ttyS1,115200n8"},
      {"GRUB_TERMINAL", "console serial"},
      {"GRUB_SERIAL_COMMAND", "serial --unit=1 --speed=115200 --parity=no --word=8"},
      {"GRUB_CMDLINE_LINUX_DEFAULT", ""}}},
    {"50-cloudimg-settings.ubuntu-22.04-generic.cfg",
     4,
     0,
     {{"GRUB_RECORDFAIL_TIMEOUT", "0"},
      {"GRUB_CMDLINE_LINUX_DEFAULT", "console=tty1 console=ttyS0"}}},
    {"50-cloudimg-settings.ubuntu-22.04-ec2.cfg",
     5,
     0,
     {{"GRUB_HIDDEN_TIMEOUT", "0.1"},
      {"GRUB_CMDLINE_LINUX_DEFAULT",
       "console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295"}}},
    {"50-cloudimg-settings.ubuntu-24.04-aws.cfg",
     5,
     0,
     {{"GRUB_RECORDFAIL_TIMEOUT", "0"}, {"GRUB_TERMINAL", "console"}}},
    {"40-force-partuuid.ubuntu-24.04-aws.cfg",
     1,
     0,
     {{"GRUB_FORCE_PARTUUID", "ede263c9-faae-4d70-b586-306f8f26c5d3"}}},
    {"init-select.ubuntu-22.04-cloud.cfg", 0, 0, {{"GRUB_DEFAULT", NULL}}},
};

static void check_kv(const ks_grub_defaults *d, const kv *want, const char *what)
{
    for (size_t i = 0; i < MAX_KV && want[i].key; i++)
        CHECK_MSG(streq_ptr(ks_grub_defaults_get(d, want[i].key), want[i].value),
                  "%s: %s='%s', want '%s'", what, want[i].key,
                  strempty(ks_grub_defaults_get(d, want[i].key)), strempty(want[i].value));
}

static void test_fixtures(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
        _cleanup_free_ char *path = ks_asprintf("%s/grub/%s", ks_fixture_dir(), fixtures[i].file);
        _cleanup_free_ char *text = NULL;
        ks_grub_defaults d = {};
        size_t len;

        text = ks_test_slurp(path, &len);
        CHECK_MSG(text != NULL, "%s", path);
        if (!text)
            continue;
        CHECK(ks_grub_defaults_parse(&d, text, len, fixtures[i].file) == 0);
        CHECK_MSG(d.n == fixtures[i].n, "%s: n=%zu", fixtures[i].file, d.n);
        CHECK_MSG(d.n_skipped == fixtures[i].skipped, "%s: skipped=%zu", fixtures[i].file,
                  d.n_skipped);
        check_kv(&d, fixtures[i].want, fixtures[i].file);
        if (d.n > 0)
            CHECK_STREQ(ks_grub_defaults_file(&d, d.keys[0]), fixtures[i].file);
        ks_grub_defaults_done(&d);
    }
}

/* Shell syntax, each text parsed after "B=1" and "C='quiet'". */
static const struct {
    const char *text;
    size_t skipped;
    kv want[4];
    size_t len; /* 0: strlen(text) */
} syntax[] = {
    {"A='x y'", 0, {{"A", "x y"}}},
    {"A=\"x $B\"", 0, {{"A", "x 1"}}},
    {"A=\"x ${B}y\"", 0, {{"A", "x 1y"}}},
    {"A=pre$B", 0, {{"A", "pre1"}}},
    {"A=a\\ b", 0, {{"A", "a b"}}},
    {"A=\"q\\\"q\\\\\\$\\x\"", 0, {{"A", "q\"q\\$\\x"}}},
    {"A='it'\\''s'", 0, {{"A", "it's"}}},
    {"A='$B \\ \"'", 0, {{"A", "$B \\ \""}}},
    {"A=x D=y", 0, {{"A", "x"}, {"D", "y"}}},
    {"A=1; D=2;", 0, {{"A", "1"}, {"D", "2"}}},
    {"A=1 # comment", 0, {{"A", "1"}}},
    {"A=x#y", 0, {{"A", "x#y"}}},
    {"  \tA=1  ", 0, {{"A", "1"}}},
    {"export A=1", 0, {{"A", "1"}}},
    {"export A", 0, {{"A", NULL}}},
    {"export A=1 D", 0, {{"A", "1"}, {"D", NULL}}},
    {"export $A", 1, {{"A", NULL}}},
    {"A=", 0, {{"A", ""}}},
    {"A=$UNSET", 0, {{"A", ""}}},
    {"C=\"$C panic=10\"", 0, {{"C", "quiet panic=10"}}},
    {"A=\"a\nb\"", 0, {{"A", "a\nb"}}},
    {"A=a\\\nb", 0, {{"A", "ab"}}},
    {"A=1\r\nD=2\r\n", 0, {{"A", "1"}, {"D", "2"}}},
    {"A==x", 0, {{"A", "=x"}}},
    {"A=1 true", 1, {{"A", NULL}}},
    {"A=$(uname -r)", 1, {{"A", NULL}}},
    {"A=`uname -r`", 1, {{"A", NULL}}},
    {"A=\"`uname -r`\"", 1, {{"A", NULL}}},
    {"A=${B:-x}", 1, {{"A", NULL}}},
    {"A=$1", 1, {{"A", NULL}}},
    {"A=1 | cat", 1, {{"A", NULL}}},
    {"A=1 && D=2", 1, {{"A", NULL}, {"D", NULL}}},
    {"[ -e /x ] && A=1", 1, {{"A", NULL}}},
    {"if [ -e /x ]; then A=1; fi\nD=2", 2, {{"A", NULL}, {"D", "2"}}},
    {"if true\nthen\n  A=1\nelse\n  A=2\nfi", 3, {{"A", NULL}}},
    {"case $x in\n a) A=1 ;;\nesac", 2, {{"A", NULL}}},
    {"1A=2", 1, {{"1A", NULL}}},
    {"A =1", 1, {{"A", NULL}}},
    {"'A'=1", 1, {{"A", NULL}}},
    {"$B=1", 1, {{"1", NULL}}},
    {"A=\"abc", 1, {{"A", NULL}}},
    {"D=1\nA='abc", 1, {{"D", "1"}, {"A", NULL}}},
    {". /etc/default/other", 1, {{"A", NULL}}},
    {"", 0, {{"A", NULL}}},
    /* Doubling expansions stop at 64 KiB a word: A is 32 KiB, "D=$A$A" would pass 64. */
    {"A=xxxx\nA=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\n"
     "A=$A$A\nA=$A$A\nA=$A$A\nA=$A$A\nD=$A$A\nE=\"$A$A\"",
     2,
     {{"D", NULL}, {"E", NULL}}},
    {"A=1\0D=2", 0, {{"A", "1"}, {"D", "2"}}, 7},
};

static void test_syntax(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(syntax); i++) {
        static const char pre[] = "B=1\nC='quiet'\n";
        ks_grub_defaults d = {};
        size_t len = syntax[i].len ? syntax[i].len : strlen(syntax[i].text);

        CHECK(ks_grub_defaults_parse(&d, pre, strlen(pre), "pre") == 0);
        CHECK(ks_grub_defaults_parse(&d, syntax[i].text, len, "t") == 0);
        CHECK_MSG(d.n_skipped == syntax[i].skipped, "case %zu '%s': skipped %zu", i, syntax[i].text,
                  d.n_skipped);
        check_kv(&d, syntax[i].want, syntax[i].text);
        CHECK_STREQ(ks_grub_defaults_get(&d, "B"), "1");
        ks_grub_defaults_done(&d);
    }
}

static void put(const ks_root *root, const char *path, const char *text)
{
    CHECK_MSG(ks_write_atomic(root, path, text, strlen(text), 0644) == 0, "%s", path);
}

static void put_fixture(const ks_root *root, const char *path, const char *fixture)
{
    _cleanup_free_ char *p = ks_asprintf("%s/grub/%s", ks_fixture_dir(), fixture);
    _cleanup_free_ char *text = NULL;
    size_t len;

    text = ks_test_slurp(p, &len);
    CHECK_MSG(text != NULL, "%s", p);
    if (text)
        put(root, path, text);
}

static void test_load(const char *base)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/load", base);
    _cleanup_root_ ks_root *root = NULL;
    ks_grub_defaults d = {.n = 42};
    static const kv want[] = {
        {"GRUB_DEFAULT", "0"},
        {"GRUB_TIMEOUT", "5"},
        {"GRUB_RECORDFAIL_TIMEOUT", "0"},
        {"GRUB_CMDLINE_LINUX_DEFAULT",
         "console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295 panic=10"},
        {"GRUB_FORCE_PARTUUID", "ede263c9-faae-4d70-b586-306f8f26c5d3"},
        {"GRUB_TERMINAL", "console"},
        {"IGNORED", NULL},
        {},
    };

    CHECK(mkdir(dir, 0755) == 0);
    CHECK(ks_root_open(dir, &root) == 0);
    /* Nothing there: no settings, not an error. */
    CHECK(ks_grub_defaults_load(root, &d) == 0);
    CHECK_INTEQ(d.n, 0);
    ks_grub_defaults_done(&d);

    put_fixture(root, "etc/default/grub", "default-grub.ubuntu-24.04-aws");
    put_fixture(root, "etc/default/grub.d/40-force-partuuid.cfg",
                "40-force-partuuid.ubuntu-24.04-aws.cfg");
    put_fixture(root, "etc/default/grub.d/50-cloudimg-settings.cfg",
                "50-cloudimg-settings.ubuntu-24.04-aws.cfg");
    put_fixture(root, "etc/default/grub.d/init-select.cfg", "init-select.ubuntu-22.04-cloud.cfg");
    put(root, "etc/default/grub.d/10-early.cfg", "GRUB_TIMEOUT=3\nGRUB_TERMINAL=serial\n");
    put(root, "etc/default/grub.d/99-late.cfg",
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT panic=10\"\n");
    put(root, "etc/default/grub.d/60-not-cfg.conf", "IGNORED=1\n");
    put(root, "etc/default/grub.d/.hidden.cfg", "IGNORED=1\n");
    put(root, "etc/default/grub.d/70-dpkg.cfg.dpkg-dist", "IGNORED=1\n");

    CHECK(ks_grub_defaults_load(root, &d) == 0);
    check_kv(&d, want, "load");
    CHECK_STREQ(d.keys[0], "GRUB_DEFAULT");
    CHECK_STREQ(ks_grub_defaults_file(&d, "GRUB_DEFAULT"), "/etc/default/grub");
    CHECK_STREQ(ks_grub_defaults_file(&d, "GRUB_TIMEOUT"), "/etc/default/grub.d/99-late.cfg");
    CHECK_STREQ(ks_grub_defaults_file(&d, "GRUB_TERMINAL"),
                "/etc/default/grub.d/50-cloudimg-settings.cfg");
    CHECK_STREQ(ks_grub_defaults_file(&d, "GRUB_FORCE_PARTUUID"),
                "/etc/default/grub.d/40-force-partuuid.cfg");
    CHECK_STREQ(ks_grub_defaults_file(&d, "nothing"), NULL);
    CHECK_INTEQ(d.n_skipped, 1);
    ks_grub_defaults_done(&d);
    CHECK(d.keys == NULL && d.n == 0);
}

static void test_dropin(const char *base)
{
    static const char *const keys[] = {"GRUB_DEFAULT", "GRUB_CMDLINE_LINUX", "GRUB_EMPTY",
                                       "GRUB_RECORDFAIL_TIMEOUT"};
    static const char *const values[] = {
        "gnulinux-advanced-f93ca2dd>gnulinux-6.8.0-48-generic-advanced-f93ca2dd",
        "quiet panic=10 it's \"x\" $HOME `id` \\ end\nsecond line",
        "",
        "30",
    };
    _cleanup_free_ char *dir = ks_asprintf("%s/dropin", base), *cmd = NULL, *out = NULL;
    _cleanup_free_ char *text = NULL, *file = NULL;
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_strv_free_ char **names = NULL;
    ks_grub_defaults d = {};
    struct stat st;
    size_t len;

    CHECK(mkdir(dir, 0755) == 0);
    CHECK(ks_root_open(dir, &root) == 0);
    CHECK(ks_grub_defaults_write_dropin(root, keys, values, ARRAY_SIZE(keys)) == 0);
    CHECK(ks_root_stat(root, "etc/default/grub.d/90-kswap.cfg", &st) == 0);
    CHECK_INTEQ(st.st_mode & 0777, 0644);
    CHECK(ks_root_list_dir(root, "etc/default/grub.d", &names) == 0);
    CHECK_INTEQ(ks_strv_length(names), 1); /* no temporary file left */

    /* kswap's parser reads back exactly what was written. */
    CHECK(ks_grub_defaults_load(root, &d) == 0);
    CHECK_INTEQ(d.n, ARRAY_SIZE(keys));
    CHECK_INTEQ(d.n_skipped, 0);
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
        CHECK_STREQ(ks_grub_defaults_get(&d, keys[i]), values[i]);
    ks_grub_defaults_done(&d);

    /* So does the shell that update-grub uses. */
    file = ks_asprintf("%s/etc/default/grub.d/90-kswap.cfg", dir);
    out = ks_asprintf("%s/out", base);
    cmd = ks_asprintf("sh -c '. \"$1\"; printf %%s \"$GRUB_CMDLINE_LINUX\"' sh %s > %s", file, out);
    CHECK(system(cmd) == 0);
    text = ks_test_slurp(out, &len);
    CHECK_STREQ(text, values[1]);

    /* Bad keys write nothing. */
    {
        static const char *const bad_keys[] = {"GRUB_OK", "1BAD"};
        static const char *const bad_values[] = {"x", "y"};
        static const char *const bad_keys2[] = {"A;rm"};
        CHECK(ks_grub_defaults_write_dropin(root, bad_keys, bad_values, 2) == -EINVAL);
        CHECK(ks_grub_defaults_write_dropin(root, bad_keys2, bad_values, 1) == -EINVAL);
        CHECK(ks_grub_defaults_load(root, &d) == 0);
        CHECK_STREQ(ks_grub_defaults_get(&d, "GRUB_OK"), NULL);
        CHECK_STREQ(ks_grub_defaults_get(&d, "GRUB_RECORDFAIL_TIMEOUT"), "30");
        ks_grub_defaults_done(&d);
    }
    /* Writing again replaces the whole file. */
    CHECK(ks_grub_defaults_write_dropin(root, keys + 3, values + 3, 1) == 0);
    CHECK(ks_grub_defaults_load(root, &d) == 0);
    CHECK_INTEQ(d.n, 1);
    ks_grub_defaults_done(&d);
}

int main(void)
{
    char base[] = "/tmp/kswap-test-grub-defaults.XXXXXX";
    _cleanup_free_ char *rm = NULL;

    CHECK(mkdtemp(base) != NULL);
    test_fixtures();
    test_syntax();
    test_load(base);
    test_dropin(base);
    rm = ks_asprintf("rm -rf %s", base);
    CHECK(system(rm) == 0);
    TEST_DONE();
}
