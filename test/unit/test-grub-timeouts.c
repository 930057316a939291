/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <limits.h>

#include "grub/cfg.h"
#include "grub/timeouts.h"
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

/* What plan reads of a grub.cfg: GRUB's parser, its marker, the evaluated countdowns. */
typedef struct facts {
    int parsed; /* ks_grub_cfg_parse's return */
    char *lacks;
    ks_grub_timeouts t;
} facts;

static void facts_of(const char *text, size_t len, facts *ret)
{
    _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
    ks_grub_error err;

    *ret = (facts){.t = {NONE, NONE, NONE}};
    ret->parsed = ks_grub_cfg_parse(text, len, &cfg, &err);
    if (ret->parsed < 0)
        return;
    ret->lacks = cfg->lacks_write_support ? strdup(cfg->lacks_write_support) : NULL;
    CHECK(ks_grub_timeouts_run(cfg, &ret->t) == 0);
}

static const struct {
    const char *file;
    int parsed;
    int after_failure, efi, normal;
} fixtures[] = {
    {"ubuntu-24.04-two-kernels.cfg", 0, 30, NONE, 0},
    {"ubuntu-24.04-server-efi-lvm-root-separate-boot.cfg", 0, 30, NONE, 0},
    /* Cloud images: GRUB_RECORDFAIL_TIMEOUT=0 as GRUB_TIMEOUT, so a failed boot changes nothing. */
    {"ubuntu-22.04-cloud.cfg", 0, NONE, NONE, 0},
    {"ubuntu-22.04-aws-force-partuuid-two-kernels.cfg", 0, NONE, NONE, 0},
    {"ubuntu-22.04-hwe-aws-three-kernels-force-partuuid.cfg", 0, NONE, NONE, 0},
    {"ubuntu-20.04-cloud-efi.cfg", 0, NONE, NONE, 0},
    {"debian-lvm.cfg", 0, 30, NONE, 5},
    {"efi-stub-EFI-ubuntu-grub.ubuntu-22.04-cloud.cfg", 0, NONE, NONE, -1},
    /* etc/default/grub.d drop-ins share the suffix: nothing of grub.cfg in them */
    {"40-force-partuuid.ubuntu-24.04-aws.cfg", 0, NONE, NONE, -1},
    {"50-cloudimg-settings.ubuntu-22.04-ec2.cfg", 0, NONE, NONE, -1},
    {"50-cloudimg-settings.ubuntu-22.04-generic.cfg", 0, NONE, NONE, -1},
    {"50-cloudimg-settings.ubuntu-24.04-aws.cfg", 0, NONE, NONE, -1},
    {"init-select.ubuntu-22.04-cloud.cfg", 0, NONE, NONE, -1},
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
        facts f;
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
        facts_of(text, len, &f);
        for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
            if (!streq(fixtures[i].file, de->d_name))
                continue;
            known = true;
            CHECK_MSG(f.parsed == fixtures[i].parsed, "%s: %d", de->d_name, f.parsed);
            CHECK_MSG(f.t.after_failure == fixtures[i].after_failure, "%s: %d", de->d_name,
                      f.t.after_failure);
            CHECK_MSG(f.t.efi == fixtures[i].efi, "%s: %d", de->d_name, f.t.efi);
            CHECK_MSG(f.t.normal == fixtures[i].normal, "%s: %d", de->d_name, f.t.normal);
        }
        /* None of the real files comes from a system without write support. */
        CHECK_MSG(!f.lacks, "%s", de->d_name);
        CHECK_MSG(known, "fixture %s has no expectation in the table", de->d_name);
        free(f.lacks);
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
    const char *lacks; /* the marker's reason; NULL: no marker */
    int after_failure, efi, normal;
} mutations[] = {
    {"unchanged", {}, {}, NULL, 30, NONE, 0},
    {"/boot on LVM, EFI",
     {SAVE_LINE, RF_END},
     {"  # GRUB lacks write support for lvm, so recordfail support is disabled.\n",
      "    set timeout=0\n  fi\nfi\n" EFI_BLOCK "### END /etc/grub.d/00_header ###"},
     "lvm",
     30,
     30,
     0},
    {"/boot on zfs, older lsefi form",
     {SAVE_LINE, RF_END},
     {"  # GRUB lacks write support for zfs, so recordfail support is disabled.\n",
      "    set timeout=0\n  fi\nfi\nif lsefi; then\n  set timeout=-1\nfi\n"
      "### END /etc/grub.d/00_header ###"},
     "zfs",
     30,
     -1,
     0},
    {"diskfilter marker without the EFI block",
     {SAVE_LINE},
     {"  # GRUB lacks write support for diskfilter, so recordfail support is disabled.\n"},
     "diskfilter",
     30,
     NONE,
     0},
    {"GRUB_RECORDFAIL_TIMEOUT=-1",
     {"  set timeout=30\n"},
     {"  set timeout=-1\n"},
     NULL,
     -1,
     NONE,
     0},
    {"GRUB_TIMEOUT=5 menu style",
     {"    set timeout_style=hidden\n    set timeout=0\n"},
     {"    set timeout_style=menu\n    set timeout=5\n"},
     NULL,
     30,
     NONE,
     5},
    {"quoted and without set",
     {"  set timeout=30\n", "    set timeout=0\n"},
     {"  timeout=\"45\"\n", "    set timeout='7'\n"},
     NULL,
     45,
     NONE,
     7},
    /* An empty timeout is not a number: grub_menu_get_timeout() waits. */
    {"empty value",
     {"  set timeout=30\n"},
     {"  set timeout=${GRUB_RECORDFAIL_TIMEOUT}\n"},
     NULL,
     -1,
     NONE,
     0},
    /* The branches swap: after a failed boot the hidden menu, otherwise 30 s. */
    {"negated condition",
     {"if [ \"${recordfail}\" = 1 ] ; then"},
     {"if [ \"${recordfail}\" != 1 ] ; then"},
     NULL,
     0,
     NONE,
     30},
    {"timeouts inside a menu entry do not count",
     {"\trecordfail\n\tload_video\n"},
     {"\tset timeout=99\n\tload_video\n"},
     NULL,
     30,
     NONE,
     0},
    {"one-line recordfail block",
     {"if [ \"${recordfail}\" = 1 ] ; then\n  set timeout=30\nelse"},
     {"if [ \"${recordfail}\" = 1 ] ; then set timeout=12; else"},
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
        facts f;

        for (size_t j = 0; j < 3 && mutations[i].from[j]; j++) {
            char *t = replace(text, mutations[i].from[j], mutations[i].to[j]);
            CHECK_MSG(t != NULL, "%s: '%s' not in the fixture", mutations[i].name,
                      mutations[i].from[j]);
            if (t) {
                free(text);
                text = t;
            }
        }
        facts_of(text, strlen(text), &f);
        CHECK_MSG(f.parsed == 0, "%s: %d", mutations[i].name, f.parsed);
        CHECK_STREQ(f.lacks, mutations[i].lacks);
        CHECK_MSG(f.t.after_failure == mutations[i].after_failure, "%s: %d", mutations[i].name,
                  f.t.after_failure);
        CHECK_MSG(f.t.efi == mutations[i].efi, "%s: %d", mutations[i].name, f.t.efi);
        CHECK_MSG(f.t.normal == mutations[i].normal, "%s: %d", mutations[i].name, f.t.normal);
        free(f.lacks);
    }
}

/* Small scripts: what GRUB's parser and evaluator make of them. */
static const struct {
    const char *text;
    int parsed;
    const char *lacks;
    int after_failure, efi, normal;
} small[] = {
    {"", 0, NULL, NONE, NONE, -1},
    {"set timeout=5\n", 0, NULL, NONE, NONE, 5},
    /* The last assignment that runs is the one the menu counts down. */
    {"set timeout=5\nset timeout=10\n", 0, NULL, NONE, NONE, 10},
    {"fi\n}\nfi\nset timeout=3\n", -EBADMSG, NULL, NONE, NONE, NONE},
    {"menuentry 'x' {\nset timeout=1\n}\nset timeout=2\n", 0, NULL, NONE, NONE, 2},
    {"function f {\n  set timeout=1\n}\n", 0, NULL, NONE, NONE, -1},
    {"function f {\n  set timeout=1\n}\nf\n", 0, NULL, NONE, NONE, 1},
    {"load_env\nif [ \"${recordfail}\" = 1 ]; then\nset timeout=4\nelif true; then\nset "
     "timeout=6\nfi\n",
     0, NULL, 4, NONE, 6},
    /* GRUB reads grubenv only when the script says load_env. */
    {"if [ \"${recordfail}\" = 1 ]; then\nset timeout=4\nelse\nset timeout=6\nfi\n", 0, NULL, NONE,
     NONE, 6},
    /* The recordfail test written another way is still the recordfail test. */
    {"load_env\nif [ x$recordfail = x1 ]; then set timeout=-1; else set timeout=2; fi\n", 0, NULL,
     -1, NONE, 2},
    {"load_env\nif [ \"${recordfail}\" = 1 ]; then\nset timeout=4\nfi\nset timeout=9\n", 0, NULL,
     NONE, NONE, 9},
    {"if [ $grub_platform = efi ]; then set timeout=-1; fi\nset timeout=3\n", 0, NULL, NONE, NONE,
     3},
    {"set timeout=3\nif [ $grub_platform = efi ]; then set timeout=-1; fi\n", 0, NULL, NONE, -1, 3},
    {"set timeout=3\nif lsefi; then set timeout=20; fi\n", 0, NULL, NONE, 20, 3},
    {"set timeout_style=hidden\nset timeoutx=3\n", 0, NULL, NONE, NONE, -1},
    {"set timeout=5 # comment\n", 0, NULL, NONE, NONE, 5},
    {"set timeout=' 7'\n", 0, NULL, NONE, NONE, 7},
    {"set timeout=abc\n", 0, NULL, NONE, NONE, -1},
    {"echo 'a;b' ; set timeout=8\n", 0, NULL, NONE, NONE, 8},
    {"echo '\n# GRUB lacks write support for zfs\n'\n", 0, NULL, NONE, NONE, -1},
    {"# GRUB lacks write support for btrfs, so recordfail support is disabled.\n", 0, "btrfs", NONE,
     NONE, -1},
    {"  # GRUB lacks write support for lvm\n", 0, "lvm", NONE, NONE, -1},
    {"# GRUB lacks write support for lvm\n# GRUB lacks write support for zfs\n", 0, "lvm", NONE,
     NONE, -1},
    {"# GRUB lacks write support for \n", 0, "", NONE, NONE, -1},
    {"# GRUB lacks write support for\n", 0, "", NONE, NONE, -1},
    {"# GRUB lacks write support forever\n", 0, NULL, NONE, NONE, -1},
    {"set timeout=1 # GRUB lacks write support for md\r\n", 0, "md", NONE, NONE, 1},
    /* GRUB's loops end for the model after 1000 rounds; past its step limit, -ELOOP. */
    {"while true; do set timeout=1; done\n", 0, NULL, NONE, NONE, 1},
    {"while true; do while true; do set timeout=1; done; done\n", 0, NULL, NONE, NONE, NONE},
};

static void test_small(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(small); i++) {
        _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
        ks_grub_timeouts t = {NONE, NONE, NONE};
        ks_grub_error err;
        int r;

        r = ks_grub_cfg_parse(small[i].text, strlen(small[i].text), &cfg, &err);
        CHECK_MSG(r == small[i].parsed, "case %zu: %d", i, r);
        if (r < 0)
            continue;
        CHECK_STREQ(cfg->lacks_write_support, small[i].lacks);
        r = ks_grub_timeouts_run(cfg, &t);
        CHECK_MSG(r == 0 || (r == -ELOOP && small[i].normal == NONE), "case %zu: %d", i, r);
        if (r < 0)
            continue;
        CHECK_MSG(t.after_failure == small[i].after_failure, "case %zu: %d", i, t.after_failure);
        CHECK_MSG(t.efi == small[i].efi, "case %zu: %d", i, t.efi);
        CHECK_MSG(t.normal == small[i].normal, "case %zu: %d", i, t.normal);
    }
}

int main(void)
{
    test_fixtures();
    test_mutations();
    test_small();
    TEST_DONE();
}
