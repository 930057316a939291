/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <sys/stat.h>

#include "grub/grubenv.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "test.h"

static int read_fixture(const char *name, char **ret, size_t *ret_len)
{
    _cleanup_root_ ks_root *root = NULL;
    int r = ks_root_open(ks_fixture_dir(), &root);
    if (r < 0)
        return r;
    _cleanup_free_ char *p = ks_asprintf("grub/%s", name);
    return ks_root_read_file(root, p, 1 << 20, ret, ret_len);
}

static void test_fixtures(void)
{
    static const struct {
        const char *file;
        size_t n;
        const char *name, *value;
    } cases[] = {
        {"grubenv.ubuntu-22.04-cloudimg-empty", 0, NULL, NULL},
        {"grubenv.saved_entry-simple-id", 1, "saved_entry", NULL},
        {"grubenv.saved_entry-numeric-2", 1, "saved_entry", "2"},
        {"grubenv.fedora-style-multi-var", 0, "saved_entry", NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *data = NULL;
        _cleanup_grubenv_ ks_grubenv *e = NULL;
        size_t len = 0;

        CHECK(read_fixture(cases[i].file, &data, &len) == 0);
        CHECK_INTEQ(len, 1024);
        CHECK_INTEQ(ks_grubenv_parse(data, len, &e), 0);
        if (!e)
            continue;
        if (cases[i].n)
            CHECK_INTEQ(ks_grubenv_count(e), cases[i].n);
        if (cases[i].name)
            CHECK(ks_grubenv_get(e, cases[i].name) != NULL);
        if (cases[i].value)
            CHECK_STREQ(ks_grubenv_get(e, cases[i].name), cases[i].value);
        /* Serialising what was parsed gives the same bytes. */
        CHECK(memcmp(ks_grubenv_data(e), data, 1024) == 0);
    }
}

static void test_bad_input(void)
{
    char buf[2048];
    ks_grubenv *e = (ks_grubenv *)0x1;

    memset(buf, '#', sizeof(buf));
    memcpy(buf, KS_GRUBENV_SIGNATURE, strlen(KS_GRUBENV_SIGNATURE));
    CHECK_INTEQ(ks_grubenv_parse(buf, 1023, &e), -EMSGSIZE);
    CHECK_INTEQ(ks_grubenv_parse(buf, 2048, &e), -EMSGSIZE);
    CHECK_INTEQ(ks_grubenv_parse(buf, 0, &e), -EMSGSIZE);
    CHECK(e == (ks_grubenv *)0x1); /* untouched on failure */
    buf[2] = 'X';
    CHECK_INTEQ(ks_grubenv_parse(buf, 1024, &e), -EBADMSG);
    buf[2] = 'G';
    /* A variable line running into the padding: GRUB stops reading there. */
    memcpy(buf + strlen(KS_GRUBENV_SIGNATURE), "a=b", 3);
    memset(buf + strlen(KS_GRUBENV_SIGNATURE) + 3, 'x', 1024 - 3 - strlen(KS_GRUBENV_SIGNATURE));
    CHECK_INTEQ(ks_grubenv_parse(buf, 1024, &e), -EBADMSG);
    /* Binary garbage. */
    for (size_t i = 0; i < 1024; i++)
        buf[i] = (char)(i * 7 + 3);
    CHECK_INTEQ(ks_grubenv_parse(buf, 1024, &e), -EBADMSG);
    CHECK(e == (ks_grubenv *)0x1);
}

static void test_edit(void)
{
    _cleanup_grubenv_ ks_grubenv *e = NULL;
    char big[1100];

    CHECK_INTEQ(ks_grubenv_new(&e), 0);
    CHECK_INTEQ(ks_grubenv_count(e), 0);
    CHECK_INTEQ(ks_grubenv_set(e, "saved_entry", "gnulinux-advanced-x>gnulinux-6.8-advanced-x"), 0);
    CHECK_INTEQ(ks_grubenv_set(e, "next_entry", "a\\b\nc"), 0);
    CHECK_INTEQ(ks_grubenv_set(e, "zz", "1"), 0);
    CHECK_STREQ(ks_grubenv_get(e, "next_entry"), "a\\b\nc");
    CHECK(strstr(ks_grubenv_data(e), "next_entry=a\\\\b\\\nc\nzz=1\n") != NULL);
    /* Shrinking and growing in place keeps the order. */
    CHECK_INTEQ(ks_grubenv_set(e, "next_entry", ""), 0);
    CHECK_STREQ(ks_grubenv_name(e, 1), "next_entry");
    CHECK_STREQ(ks_grubenv_value(e, 1), "");
    CHECK_INTEQ(ks_grubenv_set(e, "next_entry", "longer value than before"), 0);
    CHECK_STREQ(ks_grubenv_name(e, 2), "zz");
    CHECK_INTEQ(ks_grubenv_unset(e, "next_entry"), 0);
    CHECK_INTEQ(ks_grubenv_count(e), 2);
    CHECK(ks_grubenv_get(e, "next_entry") == NULL);
    CHECK_INTEQ(ks_grubenv_unset(e, "missing"), 0);
    CHECK_INTEQ(ks_grubenv_set(e, "a=b", "x"), -EINVAL);
    CHECK_INTEQ(ks_grubenv_set(e, "", "x"), -EINVAL);
    /* Too big: refused, block unchanged. */
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    _cleanup_grubenv_ ks_grubenv *before = NULL;
    CHECK_INTEQ(ks_grubenv_dup(e, &before), 0);
    CHECK_INTEQ(ks_grubenv_set(e, "big", big), -ENOSPC);
    CHECK(ks_grubenv_equal(e, before));
    /* Exactly filling the block works; one more byte does not. */
    _cleanup_grubenv_ ks_grubenv *f = NULL;
    CHECK_INTEQ(ks_grubenv_new(&f), 0);
    size_t room = 1024 - 25 - 69 - strlen("k=\n");
    big[room] = '\0';
    CHECK_INTEQ(ks_grubenv_set(f, "k", big), 0);
    CHECK_INTEQ(ks_grubenv_set(f, "j", ""), -ENOSPC);
    CHECK_INTEQ(ks_grubenv_set(f, "k", ""), 0);
    CHECK_INTEQ(ks_grubenv_set(f, "j", "x"), 0);
}

static void test_save_load(void)
{
    char tmpl[] = "/tmp/ks-grubenv-XXXXXX";
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_grubenv_ ks_grubenv *e = NULL, *g = NULL;
    struct stat st;

    CHECK(mkdtemp(tmpl) != NULL);
    CHECK_INTEQ(ks_root_open(tmpl, &r), 0);
    CHECK_INTEQ(ks_grubenv_load(r, "boot/grub/grubenv", &g), -ENOENT);
    CHECK_INTEQ(ks_grubenv_new(&e), 0);
    CHECK_INTEQ(ks_grubenv_set(e, "saved_entry", "0"), 0);
    CHECK_INTEQ(ks_grubenv_save(e, r, "boot/grub/grubenv"), 0);
    CHECK_INTEQ(ks_root_stat(r, "boot/grub/grubenv", &st), 0);
    CHECK_INTEQ(st.st_size, 1024);
    CHECK_INTEQ(ks_grubenv_load(r, "boot/grub/grubenv", &g), 0);
    CHECK(g && ks_grubenv_equal(e, g));
    _cleanup_free_ char *cmd = ks_asprintf("rm -rf '%s'", tmpl);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_fixtures();
    test_bad_input();
    test_edit();
    test_save_load();
    TEST_DONE();
}
