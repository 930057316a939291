/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Boot identity: the boot_id and btime parsers, and the readers through a root. */
#include <stdint.h>

#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/host/boot-identity.h"
#include "test.h"

static void test_parsers(void)
{
    static const struct {
        const char *text;
        int ret;
        const char *id;
    } ids[] = {
        {"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f\n", 0, "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f"},
        {"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f", 0, "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f"},
        {"4F1C1B2E-9A7D-4C3B-8E5F-0A1B2C3D4E5F\n", 0, "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f"},
        {"", -EBADMSG, NULL},
        {"\n", -EBADMSG, NULL},
        {"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5\n", -EBADMSG, NULL},   /* short */
        {"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f0\n", -EBADMSG, NULL}, /* long */
        {"4f1c1b2e99a7d-4c3b-8e5f-0a1b2c3d4e5f\n", -EBADMSG, NULL},  /* dash missing */
        {"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5g\n", -EBADMSG, NULL},  /* not hex */
        {"4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f\n\n", -EBADMSG, NULL},
        {" 4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5\n", -EBADMSG, NULL},
    };
    static const struct {
        const char *text;
        int ret;
        uint64_t btime;
    } stats[] = {
        {"cpu  1 2 3\ncpu0 1 2 3\nintr 5\nctxt 9\nbtime 1795996800\nprocesses 42\n", 0, 1795996800},
        {"btime 1\n", 0, 1},
        {"btime 1795996800", 0, 1795996800}, /* no final newline */
        {"btime\t 77 \n", 0, 77},
        {"btimex 5\nbtime 6\n", 0, 6},
        {"", -EBADMSG, 0},
        {"cpu 1\nprocesses 2\n", -EBADMSG, 0},
        {"btime \n", -EBADMSG, 0},
        {"btime -5\n", -EBADMSG, 0},
        {"btime 12x\n", -EBADMSG, 0},
        {"btime 99999999999999999999999\n", -EBADMSG, 0},
        {"btime", -EBADMSG, 0},
    };

    for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
        char *id = (char *)"untouched";
        int r = ks_boot_id_parse(ids[i].text, strlen(ids[i].text), &id);
        CHECK_MSG(r == ids[i].ret, "boot id case %zu: %d", i, r);
        if (ids[i].id) {
            CHECK_STREQ(id, ids[i].id);
            free(id);
        } else {
            CHECK_STREQ(id, "untouched");
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(stats); i++) {
        uint64_t b = 12345;
        int r = ks_btime_parse(stats[i].text, strlen(stats[i].text), &b);
        CHECK_MSG(r == stats[i].ret, "btime case %zu: %d", i, r);
        CHECK_INTEQ(b, stats[i].ret == 0 ? stats[i].btime : 12345);
    }
}

static void put(const ks_root *r, const char *path, const char *text)
{
    CHECK_INTEQ(ks_write_atomic(r, path, text, strlen(text), 0644), 0);
}

static void test_readers(void)
{
    char tmpl[] = "/tmp/kswap-bootid-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_free_ char *cmd = NULL;

    CHECK(dir && ks_root_open(dir, &r) == 0);
    if (!r)
        return;
    {
        /* Missing files: the read error, and the results untouched. */
        char *id = (char *)"untouched";
        uint64_t b = 12345;
        CHECK_INTEQ(ks_read_boot_id(r, &id), -ENOENT);
        CHECK_STREQ(id, "untouched");
        CHECK_INTEQ(ks_read_btime(r, &b), -ENOENT);
        CHECK_INTEQ(b, 12345);
    }
    put(r, "proc/sys/kernel/random/boot_id", "4F1C1B2E-9a7d-4c3b-8e5f-0a1b2c3d4e5f\n");
    put(r, "proc/stat", "cpu 1 2\nbtime 1795996800\nprocesses 1\n");
    {
        _cleanup_free_ char *id = NULL;
        uint64_t b = 0;
        CHECK_INTEQ(ks_read_boot_id(r, &id), 0);
        CHECK_STREQ(id, "4f1c1b2e-9a7d-4c3b-8e5f-0a1b2c3d4e5f");
        CHECK_INTEQ(ks_read_btime(r, &b), 0);
        CHECK_INTEQ(b, 1795996800);
    }
    /* Present but malformed: -EBADMSG, not a made-up identity. */
    put(r, "proc/sys/kernel/random/boot_id", "not-a-uuid\n");
    put(r, "proc/stat", "cpu 1 2\nbtime garbage\n");
    {
        char *id = NULL;
        uint64_t b = 0;
        CHECK_INTEQ(ks_read_boot_id(r, &id), -EBADMSG);
        CHECK(id == NULL);
        CHECK_INTEQ(ks_read_btime(r, &b), -EBADMSG);
    }
    cmd = ks_asprintf("rm -rf '%s'", dir);
    CHECK(cmd && system(cmd) == 0);
}

int main(void)
{
    test_parsers();
    test_readers();
    TEST_DONE();
}
