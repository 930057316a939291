/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/host/dpkg.h"
#include "lib/engine/plan.h"
#include "test.h"

static void test_suite(void)
{
    static const struct {
        const char *id, *version, *codename, *suite;
        bool supported;
    } cases[] = {
        {"ubuntu", "24.04", "noble", "noble", true},
        {"ubuntu", "24.10", "oracular", "oracular", true},
        {"ubuntu", "26.04", "resolute", "resolute", true},
        {"ubuntu", "22.04", "jammy", NULL, true}, /* local package only */
        {"ubuntu", "20.04", "focal", NULL, false},
        {"ubuntu", "24.04", NULL, NULL, false}, /* no codename: no suite to name */
        {"ubuntu", "24.04x", "noble", NULL, false},
        {"debian", "12", "bookworm", "bookworm", true},
        {"debian", "13", "trixie", "trixie", true},
        {"debian", NULL, "trixie", "trixie", true}, /* testing has no VERSION_ID */
        {"debian", "11", "bullseye", NULL, false},
        {"debian", "14", "forky", NULL, false},
        {"rocky", "9.3", NULL, NULL, false},
        {"linuxmint", "22", "wilma", NULL, false},
        {NULL, NULL, NULL, NULL, false},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        bool supported = !cases[i].supported;
        const char *s =
            ks_xanmod_suite(cases[i].id, cases[i].version, cases[i].codename, &supported);
        CHECK_STREQ(s, cases[i].suite);
        CHECK_MSG(supported == cases[i].supported, "case %zu", i);
    }
}

static void test_package(void)
{
    static const struct {
        int level;
        ks_branch branch;
        const char *pkg;
    } cases[] = {
        {0, KS_BRANCH_LTS, NULL},
        {1, KS_BRANCH_LTS, NULL},
        {2, KS_BRANCH_LTS, "linux-xanmod-lts-x64v2"},
        {3, KS_BRANCH_LTS, "linux-xanmod-lts-x64v3"},
        {4, KS_BRANCH_LTS, "linux-xanmod-lts-x64v3"},
        {2, KS_BRANCH_MAIN, "linux-xanmod-x64v2"},
        {4, KS_BRANCH_MAIN, "linux-xanmod-x64v3"},
        {3, _KS_BRANCH_INVALID, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        CHECK_STREQ(ks_xanmod_package(cases[i].level, cases[i].branch), cases[i].pkg);
    CHECK(ks_branch_from_string("lts") == KS_BRANCH_LTS);
    CHECK(ks_branch_from_string("main") == KS_BRANCH_MAIN);
    CHECK(ks_branch_from_string("edge") == _KS_BRANCH_INVALID);
    CHECK(ks_branch_from_string("LTS") == _KS_BRANCH_INVALID);
}

static void test_space(void)
{
    ks_kernel v[2] = {
        {.release = (char *)"a", .vmlinuz_size = 15 << 20, .initrd_size = 70 << 20},
        {.release = (char *)"b", .vmlinuz_size = 14 << 20, .initrd_size = 200 << 20},
    };
    ks_kernels none = {0}, some = {.v = v, .n = 2};
    /* The floor covers placeholder-sized or missing kernels. */
    CHECK_INTEQ(ks_boot_space_needed(&none), (96ULL << 20) + (24ULL << 20));
    CHECK_INTEQ(ks_boot_space_needed(&some), (214ULL << 20) + (214ULL << 20) / 4);
}

static void test_dpkg(void)
{
    static const char status[] =
        "Package: linux-xanmod-lts-x64v3\nStatus: deinstall ok config-files\nVersion: 1\n\n"
        "Package: linux-image-6.8.0-48-generic\nStatus: install ok installed\n\n"
        "Package: grub-pc\r\nStatus: install ok installed\r\n\n"
        "Package:linux-generic\nVersion: 2\nStatus:  install ok installed\n"
        "Package: half\nStatus: install ok half-installed\n";
    static const struct {
        const char *pkg;
        bool installed;
    } cases[] = {
        {"linux-xanmod-lts-x64v3", false},
        {"linux-image-6.8.0-48-generic", true},
        {"linux-image-6.8.0-48", false},
        {"grub-pc", true},
        {"linux-generic", true},
        {"half", false},
        {"missing", false},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        bool r = !cases[i].installed;
        CHECK(ks_dpkg_status_has(status, sizeof(status) - 1, cases[i].pkg, &r) == 0);
        CHECK_MSG(r == cases[i].installed, "%s", cases[i].pkg);
    }
}

int main(void)
{
    test_suite();
    test_package();
    test_space();
    test_dpkg();
    TEST_DONE();
}
