/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/paths.h"
#include "grub/resolve.h"
#include "grub-test-util.h"

/* A menu with the shapes that matter: ids, an entry without --id, '>' in a title, a submenu. */
static const char menu_cfg[] =
    "menuentry 'Ubuntu' --id simple { linux /boot/vmlinuz-6.8.0-48-generic ro }\n"
    "submenu 'Advanced options for Ubuntu' --id adv {\n"
    "  menuentry 'Ubuntu, with Linux 6.8.0-48-generic' --id k48 { linux "
    "/boot/vmlinuz-6.8.0-48-generic ro }\n"
    "  menuentry 'Ubuntu, with Linux 6.8.0-48-generic (recovery mode)' --id k48r { linux "
    "/boot/vmlinuz-6.8.0-48-generic ro recovery }\n"
    "  menuentry 'Ubuntu, with Linux 6.18.45-x64v3-xanmod1' --id x { linux "
    "/boot/vmlinuz-6.18.45-x64v3-xanmod1 ro }\n"
    "}\n"
    "menuentry 'a>b' { linux /boot/vmlinuz-1.0 }\n"
    "menuentry '10' --id ten { linux /boot/vmlinuz-2.0 }\n";

static void test_resolve(void)
{
    static const struct {
        const char *value;
        const char *title; /* of the entry that boots */
        bool fell_back;
    } cases[] = {
        {NULL, "Ubuntu", false},
        {"0", "Ubuntu", false},
        {"1", "Ubuntu, with Linux 6.8.0-48-generic", false}, /* submenu, then its entry 0 */
        {"1>2", "Ubuntu, with Linux 6.18.45-x64v3-xanmod1", false},
        {"1>1", "Ubuntu, with Linux 6.8.0-48-generic (recovery mode)", false},
        {"  2", "a>b", false},   /* white space skipped */
        {"2junk", "a>b", false}, /* leading digits, no end check */
        {"0x3", "10", false},
        {"03", "10", false},    /* octal */
        {"08", "Ubuntu", true}, /* not octal (8 is no octal digit): decimal 8 */
        {"02", "a>b", false},   /* octal */
        {"0x", "Ubuntu", true}, /* "0x" without digits: a title that matches nothing */
        {"4", "Ubuntu", true},  /* out of range */
        {"99999999999999999999999", "Ubuntu", true}, /* overflow */
        {"-1", "Ubuntu", true},
        {"", "Ubuntu", true},
        {"adv>x", "Ubuntu, with Linux 6.18.45-x64v3-xanmod1", false},
        {"Advanced options for Ubuntu>Ubuntu, with Linux 6.18.45-x64v3-xanmod1",
         "Ubuntu, with Linux 6.18.45-x64v3-xanmod1", false},
        {"adv>Ubuntu, with Linux 6.18.45-x64v3-xanmod1", "Ubuntu, with Linux 6.18.45-x64v3-xanmod1",
         false},
        {"Ubuntu, with Linux 6.18.45-x64v3-xanmod1", "Ubuntu",
         true}, /* bare title: newest kernel */
        {"adv>nothing", "Ubuntu, with Linux 6.8.0-48-generic", true},
        {"adv", "Ubuntu, with Linux 6.8.0-48-generic", false},
        {"adv>", "Ubuntu, with Linux 6.8.0-48-generic", false},
        {"a>>b", "a>b", false},
        {"a>b", "Ubuntu", true}, /* unescaped: matches title "a" only */
        {"ten", "10", false},
        {"10", "Ubuntu", true},          /* a number first: index 10, out of range */
        {"simple>k48", "Ubuntu", false}, /* rest after a plain entry is ignored */
    };
    _cleanup_grub_cfg_ ks_grub_cfg *c = gt_parse(menu_cfg);

    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_INTEQ(c->n_entries, 4);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_grub_resolution r;
        CHECK_MSG(ks_grub_resolve(c->entries, c->n_entries, cases[i].value, &r) == 0, "%s",
                  strempty(cases[i].value));
        CHECK_MSG(streq(r.entry->title, cases[i].title), "'%s' -> '%s', want '%s'",
                  strempty(cases[i].value), r.entry->title, cases[i].title);
        CHECK_MSG(r.fell_back == cases[i].fell_back, "'%s': fell_back %d", strempty(cases[i].value),
                  r.fell_back);
    }
    ks_grub_resolution r;
    CHECK_INTEQ(ks_grub_resolve(NULL, 0, "0", &r), -ENOENT);
    /* The paths of what a numeric value chose, ids and titles, '>' escaped. */
    _cleanup_free_ char *tp = NULL, *ip = NULL;
    CHECK_INTEQ(ks_grub_resolve(c->entries, c->n_entries, "1>2", &r), 0);
    CHECK_INTEQ(ks_grub_resolution_paths(c->entries, &r, &tp, &ip), 0);
    CHECK_STREQ(ip, "adv>x");
    CHECK_STREQ(tp, "Advanced options for Ubuntu>Ubuntu, with Linux 6.18.45-x64v3-xanmod1");
    _cleanup_free_ char *tp2 = NULL, *ip2 = NULL;
    CHECK_INTEQ(ks_grub_resolve(c->entries, c->n_entries, "2", &r), 0);
    CHECK_INTEQ(ks_grub_resolution_paths(c->entries, &r, &tp2, &ip2), 0);
    CHECK_STREQ(ip2, "a>>b");
    _cleanup_free_ char *rest = ks_grub_default_rest("a>>b>c>d");
    CHECK_STREQ(rest, "c>d");
    CHECK(ks_grub_default_rest("a>") == NULL);
    CHECK(ks_grub_default_rest("a") == NULL);
}

static void test_paths(void)
{
    _cleanup_grub_cfg_ ks_grub_cfg *c = gt_parse(menu_cfg);
    ks_grub_entry_path p = {0};
    const ks_grub_entry *e = NULL;

    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_INTEQ(ks_grub_entry_path_find(c->entries, c->n_entries, "6.18.45-x64v3-xanmod1", &p), 0);
    CHECK_STREQ(p.id_path, "adv>x");
    CHECK_STREQ(p.title_path,
                "Advanced options for Ubuntu>Ubuntu, with Linux 6.18.45-x64v3-xanmod1");
    CHECK(p.title_path_ok);
    ks_grub_entry_path_done(&p);
    /* Not the top "simple" entry, which follows the newest kernel, but not the recovery one. */
    CHECK_INTEQ(ks_grub_entry_path_find(c->entries, c->n_entries, "6.8.0-48-generic", &p), 0);
    CHECK_STREQ(p.id_path, "adv>k48");
    ks_grub_entry_path_done(&p);
    CHECK_INTEQ(ks_grub_entry_path_find(c->entries, c->n_entries, "1.0", &p), 0);
    CHECK_STREQ(p.id_path, "a>>b"); /* no --id: the title is the id, '>' escaped */
    ks_grub_entry_path_done(&p);
    CHECK_INTEQ(ks_grub_entry_path_find(c->entries, c->n_entries, "9.9", &p), -ENOENT);

    CHECK_INTEQ(ks_grub_path_check(c->entries, c->n_entries, "adv>x", "6.18.45-x64v3-xanmod1", &e),
                KS_GRUB_PATH_OK);
    CHECK_INTEQ(ks_grub_path_check(c->entries, c->n_entries, "adv>k48r", "6.8.0-48-generic", &e),
                KS_GRUB_PATH_RECOVERY);
    CHECK_INTEQ(ks_grub_path_check(c->entries, c->n_entries,
                                   "Ubuntu, with Linux 6.18.45-x64v3-xanmod1",
                                   "6.18.45-x64v3-xanmod1", &e),
                KS_GRUB_PATH_FALLS_BACK);
    CHECK_INTEQ(
        ks_grub_path_check(c->entries, c->n_entries, "adv>k48", "6.18.45-x64v3-xanmod1", &e),
        KS_GRUB_PATH_OTHER_KERNEL);

    /* A duplicate title earlier in the menu shadows the title path, not the id path. */
    _cleanup_grub_cfg_ ks_grub_cfg *d =
        gt_parse("menuentry 'Advanced options for Ubuntu' --id decoy { linux /boot/vmlinuz-0 }\n"
                 "submenu 'Advanced options for Ubuntu' --id adv {\n"
                 "  menuentry 'K' --id k { linux /boot/vmlinuz-5.0 }\n}\n");
    CHECK(d != NULL);
    if (d) {
        CHECK_INTEQ(ks_grub_entry_path_find(d->entries, d->n_entries, "5.0", &p), 0);
        CHECK_STREQ(p.id_path, "adv>k");
        CHECK(!p.title_path_ok);
        ks_grub_entry_path_done(&p);
    }
    /* An id that equals an earlier entry's title makes the id path resolve elsewhere. */
    _cleanup_grub_cfg_ ks_grub_cfg *x =
        gt_parse("menuentry 'adv' --id other { linux /boot/vmlinuz-0 }\n"
                 "submenu 'Advanced' --id adv {\n"
                 "  menuentry 'K' --id k { linux /boot/vmlinuz-5.0 }\n}\n");
    CHECK(x != NULL);
    if (x)
        CHECK_INTEQ(ks_grub_entry_path_find(x->entries, x->n_entries, "5.0", &p), -EADDRNOTAVAIL);
}

static void test_fixture_paths(void)
{
    static const struct {
        const char *file, *release, *id_path;
    } cases[] = {
        {"ubuntu-24.04-two-kernels.cfg", "6.8.0-45-generic",
         "gnulinux-advanced-f93ca2dd-74af-4ee8-b478-970b29be5ca3>gnulinux-6.8.0-45-generic-"
         "advanced-f93ca2dd-74af-4ee8-b478-970b29be5ca3"},
        {"debian-lvm.cfg", "4.9.0-3-amd64",
         "gnulinux-advanced-3378f75a-e05c-4372-88dd-b98c02822c90>gnulinux-4.9.0-3-amd64-advanced-"
         "3378f75a-e05c-4372-88dd-b98c02822c90"},
        {"ubuntu-22.04-hwe-aws-three-kernels-force-partuuid.cfg", "6.2.0-1012-aws",
         "gnulinux-advanced-4f575094-453e-450d-aeed-215d8cbcbf58>gnulinux-6.2.0-1012-aws-advanced-"
         "4f575094-453e-450d-aeed-215d8cbcbf58"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *text = gt_read_fixture(cases[i].file, NULL);
        _cleanup_grub_cfg_ ks_grub_cfg *c = text ? gt_parse(text) : NULL;
        ks_grub_entry_path p = {0};
        CHECK(c != NULL);
        if (!c)
            continue;
        CHECK_INTEQ(ks_grub_entry_path_find(c->entries, c->n_entries, cases[i].release, &p), 0);
        CHECK_STREQ(p.id_path, cases[i].id_path);
        CHECK(p.title_path_ok);
        ks_grub_entry_path_done(&p);
    }
}

static void test_path_append(void)
{
    static const struct {
        const char *start; /* NULL: no path yet */
        const char *comp;
        const char *want;
    } cases[] = {
        {NULL, "gnulinux-advanced-x", "gnulinux-advanced-x"},
        {"", "a", "a"}, /* an empty path takes no '>' */
        {"a", "b", "a>b"},
        {"a>b", "c", "a>b>c"},
        {NULL, "x>y", "x>>y"}, /* a '>' in a title is doubled */
        {"Advanced options", "Ubuntu, with Linux >6", "Advanced options>Ubuntu, with Linux >>6"},
        {"a", "", "a>"},
        {NULL, "", ""},
        {"p", ">>", "p>>>>>"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *s = cases[i].start ? strdup(cases[i].start) : NULL;
        CHECK(!cases[i].start || s);
        CHECK_INTEQ(ks_grub_path_append(&s, cases[i].comp), 0);
        CHECK_STREQ(s, cases[i].want);
        free(s);
    }
}

static void test_strtoull(void)
{
    static const struct {
        const char *s;
        int r;
        unsigned long long v; /* when r == 0 */
    } cases[] = {
        {"0", 0, 0},
        {"2", 0, 2},
        {"  12", 0, 12}, /* leading white space */
        {"1>2", 0, 1},   /* no end check: the rest is the submenu's default */
        {"3abc", 0, 3},
        {"0x1f", 0, 31},    /* lower-case 0x: hex */
        {"0X1f", 0, 0},     /* upper-case X is not a prefix: "0", then stop */
        {"0x", -EINVAL, 0}, /* no hex digit: a title, not a number */
        {"0xg", -EINVAL, 0},
        {"010", 0, 8}, /* 0 and an octal digit: octal */
        {"08", 0, 8},  /* 0 and 8: decimal */
        {"017>1", 0, 15},
        {"", -EINVAL, 0},
        {"Ubuntu", -EINVAL, 0},
        {"-1", -EINVAL, 0}, /* no sign */
        {"18446744073709551615", 0, 18446744073709551615ULL},
        {"18446744073709551616", -ERANGE, 0},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        unsigned long long v = 4242;
        int r = ks_grub_strtoull(cases[i].s, &v);
        CHECK_MSG(r == cases[i].r, "'%s': %d", cases[i].s, r);
        if (cases[i].r == 0)
            CHECK_MSG(v == cases[i].v, "'%s': %llu", cases[i].s, v);
        else
            CHECK_MSG(v == 4242, "'%s': output touched on error", cases[i].s);
    }
}

int main(void)
{
    test_strtoull();
    test_path_append();
    test_resolve();
    test_paths();
    test_fixture_paths();
    TEST_DONE();
}
