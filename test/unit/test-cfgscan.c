/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <limits.h>

#include "grub/cfgscan.h"
#include "lib/basic/util.h"
#include "test.h"

#define NONE INT_MIN

/* text with the first occurrence of from replaced by to; NULL when from is not there. */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *p = strstr(text, from);

    if (!p)
        return NULL;
    return ks_asprintf("%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
}

static const struct {
    const char *file;
    int recordfail, efi, timeout;
} fixtures[] = {
    {"ubuntu-24.04-two-kernels.cfg", 30, NONE, 0},
    {"ubuntu-24.04-server-efi-lvm-root-separate-boot.cfg", 30, NONE, 0},
    {"ubuntu-22.04-cloud.cfg", 0, NONE, 0},
    {"ubuntu-22.04-aws-force-partuuid-two-kernels.cfg", 0, NONE, 0},
    {"ubuntu-22.04-hwe-aws-three-kernels-force-partuuid.cfg", 0, NONE, 0},
    {"ubuntu-20.04-cloud-efi.cfg", 0, NONE, 0},
    {"debian-lvm.cfg", 30, NONE, 5},
    {"efi-stub-EFI-ubuntu-grub.ubuntu-22.04-cloud.cfg", NONE, NONE, NONE},
    /* etc/default/grub.d drop-ins share the suffix: nothing of grub.cfg in them */
    {"40-force-partuuid.ubuntu-24.04-aws.cfg", NONE, NONE, NONE},
    {"50-cloudimg-settings.ubuntu-22.04-ec2.cfg", NONE, NONE, NONE},
    {"50-cloudimg-settings.ubuntu-22.04-generic.cfg", NONE, NONE, NONE},
    {"50-cloudimg-settings.ubuntu-24.04-aws.cfg", NONE, NONE, NONE},
    {"init-select.ubuntu-22.04-cloud.cfg", NONE, NONE, NONE},
};

static void test_fixtures(void)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/grub", ks_fixture_dir());
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t seen = 0;

    CHECK_MSG(d != NULL, "%s", dir);
    while (d && (de = readdir(d))) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        ks_grub_cfg_facts f = {};
        bool known = false;
        size_t len;

        if (!ks_endswith(de->d_name, ".cfg"))
            continue;
        seen++;
        path = ks_asprintf("%s/%s", dir, de->d_name);
        text = ks_test_slurp(path, &len);
        CHECK_MSG(text != NULL, "%s", path);
        if (!text)
            continue;
        CHECK(ks_grub_cfg_scan(text, len, &f) == 0);
        for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
            if (!streq(fixtures[i].file, de->d_name))
                continue;
            known = true;
            CHECK_MSG(f.recordfail_timeout == fixtures[i].recordfail, "%s: %d", de->d_name,
                      f.recordfail_timeout);
            CHECK_MSG(f.efi_recordfail_timeout == fixtures[i].efi, "%s: %d", de->d_name,
                      f.efi_recordfail_timeout);
            CHECK_MSG(f.timeout == fixtures[i].timeout, "%s: %d", de->d_name, f.timeout);
        }
        /* None of the real files comes from a system without write support. */
        CHECK_MSG(!f.lacks_write_support && !f.lacks_write_reason, "%s", de->d_name);
        CHECK_MSG(known, "fixture %s has no expectation in the table", de->d_name);
        ks_grub_cfg_facts_done(&f);
    }
    if (d)
        closedir(d);
    CHECK_INTEQ(seen, ARRAY_SIZE(fixtures));
}

#define SAVE_LINE                                                                                  \
    "  if [ -n \"${have_grubenv}\" ]; then if [ -z \"${boot_once}\" ]; then save_env recordfail; " \
    "fi; fi\n"
#define RF_END "    set timeout=0\n  fi\nfi\n### END /etc/grub.d/00_header ###"
#define EFI_BLOCK                                                                                  \
    "if [ $grub_platform = efi ]; then\n  set timeout=30\n  if [ x$feature_timeout_style = xy ] "  \
    "; "                                                                                           \
    "then\n    set timeout_style=menu\n  fi\nfi\n"

/* Real Ubuntu 24.04 grub.cfg with the changes grub-mkconfig makes on other systems. */
static const struct {
    const char *name;
    const char *from[3], *to[3];
    bool lacks;
    const char *reason;
    int recordfail, efi, timeout;
} mutations[] = {
    {"unchanged", {}, {}, false, NULL, 30, NONE, 0},
    {"/boot on LVM, EFI",
     {SAVE_LINE, RF_END},
     {"  # GRUB lacks write support for lvm, so recordfail support is disabled.\n",
      "    set timeout=0\n  fi\nfi\n" EFI_BLOCK "### END /etc/grub.d/00_header ###"},
     true,
     "lvm",
     30,
     30,
     0},
    {"/boot on zfs, older lsefi form",
     {SAVE_LINE, RF_END},
     {"  # GRUB lacks write support for zfs, so recordfail support is disabled.\n",
      "    set timeout=0\n  fi\nfi\nif lsefi; then\n  set timeout=-1\nfi\n"
      "### END /etc/grub.d/00_header ###"},
     true,
     "zfs",
     30,
     -1,
     0},
    {"diskfilter marker without the EFI block",
     {SAVE_LINE},
     {"  # GRUB lacks write support for diskfilter, so recordfail support is disabled.\n"},
     true,
     "diskfilter",
     30,
     NONE,
     0},
    {"GRUB_RECORDFAIL_TIMEOUT=-1",
     {"  set timeout=30\n"},
     {"  set timeout=-1\n"},
     false,
     NULL,
     -1,
     NONE,
     0},
    {"GRUB_TIMEOUT=5 menu style",
     {"    set timeout_style=hidden\n    set timeout=0\n"},
     {"    set timeout_style=menu\n    set timeout=5\n"},
     false,
     NULL,
     30,
     NONE,
     5},
    {"quoted and without set",
     {"  set timeout=30\n", "    set timeout=0\n"},
     {"  timeout=\"45\"\n", "    set timeout='7'\n"},
     false,
     NULL,
     45,
     NONE,
     7},
    {"not a number",
     {"  set timeout=30\n"},
     {"  set timeout=${GRUB_RECORDFAIL_TIMEOUT}\n"},
     false,
     NULL,
     NONE,
     NONE,
     0},
    {"negated condition is not the recordfail block",
     {"if [ \"${recordfail}\" = 1 ] ; then"},
     {"if [ \"${recordfail}\" != 1 ] ; then"},
     false,
     NULL,
     NONE,
     NONE,
     30},
    {"timeouts inside a menu entry do not count",
     {"\trecordfail\n\tload_video\n"},
     {"\tset timeout=99\n\tload_video\n"},
     false,
     NULL,
     30,
     NONE,
     0},
    {"one-line recordfail block",
     {"if [ \"${recordfail}\" = 1 ] ; then\n  set timeout=30\nelse"},
     {"if [ \"${recordfail}\" = 1 ] ; then set timeout=12; else"},
     false,
     NULL,
     12,
     NONE,
     0},
};

static void test_mutations(void)
{
    _cleanup_free_ char *path =
        ks_asprintf("%s/grub/ubuntu-24.04-two-kernels.cfg", ks_fixture_dir());
    _cleanup_free_ char *orig = NULL;
    size_t len;

    orig = ks_test_slurp(path, &len);
    CHECK_MSG(orig != NULL, "%s", path);
    if (!orig)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(mutations); i++) {
        _cleanup_free_ char *text = strdup(orig);
        ks_grub_cfg_facts f = {};

        for (size_t j = 0; j < 3 && mutations[i].from[j]; j++) {
            char *t = replace(text, mutations[i].from[j], mutations[i].to[j]);
            CHECK_MSG(t != NULL, "%s: '%s' not in the fixture", mutations[i].name,
                      mutations[i].from[j]);
            if (t) {
                free(text);
                text = t;
            }
        }
        CHECK(ks_grub_cfg_scan(text, strlen(text), &f) == 0);
        CHECK_MSG(f.lacks_write_support == mutations[i].lacks, "%s", mutations[i].name);
        CHECK_STREQ(f.lacks_write_reason, mutations[i].reason);
        CHECK_MSG(f.recordfail_timeout == mutations[i].recordfail, "%s: %d", mutations[i].name,
                  f.recordfail_timeout);
        CHECK_MSG(f.efi_recordfail_timeout == mutations[i].efi, "%s: %d", mutations[i].name,
                  f.efi_recordfail_timeout);
        CHECK_MSG(f.timeout == mutations[i].timeout, "%s: %d", mutations[i].name, f.timeout);
        ks_grub_cfg_facts_done(&f);
    }
}

static const struct {
    const char *text;
    int recordfail, timeout;
    const char *reason;
} small[] = {
    {"", NONE, NONE, NULL},
    {"set timeout=5\n", NONE, 5, NULL},
    {"set timeout=5\nset timeout=10\n", NONE, 5, NULL},
    {"fi\n}\nfi\nset timeout=3\n", NONE, 3, NULL},
    {"menuentry 'x' {\nset timeout=1\n}\nset timeout=2\n", NONE, 2, NULL},
    {"function f {\n  set timeout=1\n}\n", NONE, NONE, NULL},
    {"if [ \"${recordfail}\" = 1 ]; then\nset timeout=4\nelif true; then\nset timeout=6\nfi\n", 4,
     6, NULL},
    {"set timeout_style=hidden\nset timeoutx=3\n", NONE, NONE, NULL},
    {"set timeout=5 # comment\n", NONE, NONE, NULL},
    {"echo 'a;b' ; set timeout=8\n", NONE, 8, NULL},
    {"# GRUB lacks write support for btrfs, so recordfail support is disabled.\n", NONE, NONE,
     "btrfs"},
    {"  # GRUB lacks write support for lvm\n", NONE, NONE, "lvm"},
    {"# GRUB lacks write support for \n", NONE, NONE, ""},
    {"# GRUB lacks write support forever\n", NONE, NONE, NULL},
};

static void test_small(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(small); i++) {
        ks_grub_cfg_facts f = {};
        CHECK(ks_grub_cfg_scan(small[i].text, strlen(small[i].text), &f) == 0);
        CHECK_MSG(f.recordfail_timeout == small[i].recordfail, "case %zu: %d", i,
                  f.recordfail_timeout);
        CHECK_MSG(f.timeout == small[i].timeout, "case %zu: %d", i, f.timeout);
        CHECK_MSG(f.lacks_write_support == (small[i].reason != NULL), "case %zu", i);
        CHECK_STREQ(f.lacks_write_reason, small[i].reason);
        ks_grub_cfg_facts_done(&f);
    }
}

/* Deeper nesting than the scanner tracks, and more closings than openings. */
static void test_nesting(void)
{
    _cleanup_free_ char *text = NULL;
    ks_grub_cfg_facts f = {};
    size_t n = 0;

    text = malloc(200 * 16 + 64);
    CHECK(text != NULL);
    if (!text)
        return;
    for (int i = 0; i < 100; i++)
        n += (size_t)sprintf(text + n, "if true; then\n");
    n += (size_t)sprintf(text + n, "set timeout=1\n");
    for (int i = 0; i < 100; i++)
        n += (size_t)sprintf(text + n, "fi\n");
    n += (size_t)sprintf(text + n, "set timeout=2\n");
    CHECK(ks_grub_cfg_scan(text, n, &f) == 0);
    /* Deeper than tracked is ignored; the closings still balance, so the last one counts. */
    CHECK_INTEQ(f.timeout, 2);
    ks_grub_cfg_facts_done(&f);
}

int main(void)
{
    test_fixtures();
    test_mutations();
    test_small();
    test_nesting();
    TEST_DONE();
}
