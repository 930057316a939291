/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The file-change transaction: the reader of old contents, apply and undo byte for byte. */
#include <sys/stat.h>

#include "lib/basic/fileio.h"
#include "lib/basic/transaction.h"
#include "lib/basic/util.h"
#include "test.h"

static char dir[] = "/tmp/kswap-transaction-XXXXXX";

static void put(const ks_root *r, const char *path, const char *text, mode_t mode)
{
    CHECK_INTEQ(ks_write_atomic(r, path, text, strlen(text), mode), 0);
}

static void test_read_old(const ks_root *root)
{
    static const struct {
        const char *path;
        size_t max;
        bool nofollow;
        int ret;
        bool exists;
        const char *data;
        mode_t mode;
    } cases[] = {
        {"etc/missing", 100, false, 0, false, NULL, 0},
        {"etc/a", 100, false, 0, true, "alpha\n", 0640},
        {"etc/a", 100, true, 0, true, "alpha\n", 0640},
        {"etc/a", 5, false, -EFBIG, false, NULL, 0},
        {"etc/a", 6, false, 0, true, "alpha\n", 0640},
        {"etc/empty", 0, false, 0, true, "", 0600},
        {"etc", 100, false, -EISDIR, false, NULL, 0},
        {"etc/link", 100, false, 0, true, "alpha\n", 0640},
        {"etc/link", 100, true, -ELOOP, false, NULL, 0},
    };

    put(root, "etc/a", "alpha\n", 0640);
    put(root, "etc/empty", "", 0600);
    {
        _cleanup_free_ char *link = ks_asprintf("%s/etc/link", dir);
        CHECK(link && symlink("a", link) == 0);
    }
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        bool exists = true;
        char *data = (char *)"untouched";
        size_t len = 99;
        mode_t mode = 077;
        int r = ks_file_read_old(root, cases[i].path, cases[i].max, cases[i].nofollow, &exists,
                                 &data, &len, &mode);

        CHECK_MSG(r == cases[i].ret, "case %zu: %d", i, r);
        if (r < 0) {
            CHECK_MSG(exists && len == 99 && mode == 077 && streq(data, "untouched"),
                      "case %zu: outputs touched on failure", i);
            continue;
        }
        CHECK_MSG(exists == cases[i].exists && mode == cases[i].mode, "case %zu", i);
        CHECK_STREQ(data, cases[i].data);
        CHECK_INTEQ(len, cases[i].data ? strlen(cases[i].data) : 0);
        free(data);
    }
}

static int add(ks_transaction *t, const ks_root *r, ks_file_change_kind kind, const char *path,
               const char *new_path, const char *data, const char *made_dir)
{
    _cleanup_file_change_ ks_file_change c = {.kind = kind, .mode = 0644};

    c.path = strdup(path);
    c.new_path = new_path ? strdup(new_path) : NULL;
    c.data = data ? strdup(data) : NULL;
    c.len = data ? strlen(data) : 0;
    c.made_dir = made_dir ? strdup(made_dir) : NULL;
    if (ks_file_change_keep_old(r, &c, 1 << 20) < 0)
        return -1;
    return ks_transaction_add(t, &c);
}

static void test_apply_undo(const ks_root *r)
{
    _cleanup_transaction_ ks_transaction t = {0};
    char *text = NULL;

    put(r, "srv/keep", "old keep\n", 0600);
    put(r, "srv/gone", "old gone\n", 0644);
    put(r, "srv/moved", "old moved\n", 0644);
    CHECK_INTEQ(add(&t, r, KS_FILE_CHANGE_WRITE, "srv/keep", NULL, "new keep\n", NULL), 0);
    CHECK_INTEQ(add(&t, r, KS_FILE_CHANGE_WRITE, "srv/new/deep/file", NULL, "fresh\n", "srv/new"),
                0);
    CHECK_INTEQ(add(&t, r, KS_FILE_CHANGE_REMOVE, "srv/gone", NULL, NULL, NULL), 0);
    CHECK_INTEQ(add(&t, r, KS_FILE_CHANGE_RENAME, "srv/moved", "srv/moved.off", NULL, NULL), 0);
    CHECK_INTEQ(t.n, 4);
    CHECK_STREQ(ks_file_change_kind_to_string(KS_FILE_CHANGE_RENAME), "rename");
    CHECK(ks_file_change_kind_to_string(_KS_FILE_CHANGE_KIND_MAX) == NULL);

    /* Applied twice (an interrupted run resumed): the same end state. */
    for (int round = 0; round < 2; round++) {
        CHECK_INTEQ(ks_transaction_apply(r, &t), 0);
        CHECK(ks_root_read_file(r, "srv/keep", 100, &text, NULL) == 0 && streq(text, "new keep\n"));
        free(text);
        CHECK(ks_root_exists(r, "srv/new/deep/file") && !ks_root_exists(r, "srv/gone") &&
              !ks_root_exists(r, "srv/moved") && ks_root_exists(r, "srv/moved.off"));
    }
    /* Undone twice: byte for byte as before, the folders it made gone. */
    for (int round = 0; round < 2; round++) {
        struct stat st;
        CHECK_INTEQ(ks_transaction_undo(r, &t), 0);
        CHECK(ks_root_read_file(r, "srv/keep", 100, &text, NULL) == 0 && streq(text, "old keep\n"));
        free(text);
        CHECK(ks_root_stat(r, "srv/keep", &st) == 0 && (st.st_mode & 07777) == 0600);
        CHECK(ks_root_read_file(r, "srv/gone", 100, &text, NULL) == 0 && streq(text, "old gone\n"));
        free(text);
        CHECK(ks_root_exists(r, "srv/moved") && !ks_root_exists(r, "srv/moved.off"));
        CHECK(!ks_root_exists(r, "srv/new"));
    }
}

int main(void)
{
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_free_ char *cmd = NULL;

    CHECK(mkdtemp(dir) && ks_root_open(dir, &r) == 0);
    if (!r)
        TEST_DONE();
    test_read_old(r);
    test_apply_undo(r);
    cmd = ks_asprintf("rm -rf '%s'", dir);
    CHECK(cmd && system(cmd) == 0);
    TEST_DONE();
}
