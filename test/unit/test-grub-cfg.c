/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/cfg.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "test.h"

static char *read_fixture(const char *name, size_t *len)
{
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_free_ char *p = ks_asprintf("grub/%s", name);
    char *buf = NULL;

    if (ks_root_open(ks_fixture_dir(), &r) < 0 || ks_root_read_file(r, p, 1 << 20, &buf, len) < 0)
        return NULL;
    return buf;
}

static void dump(const ks_grub_entry *v, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, "%*s%s '%s' id=%s release=%s%s\n", depth * 2, "",
                v[i].submenu ? "submenu" : "entry", v[i].title, strempty(v[i].id),
                strempty(v[i].release), v[i].recovery ? " (recovery)" : "");
        dump(v[i].children, v[i].n_children, depth + 1);
    }
}

static const ks_grub_entry *find_release(const ks_grub_entry *v, size_t n, const char *rel,
                                         bool recovery)
{
    for (size_t i = 0; i < n; i++) {
        const ks_grub_entry *e = find_release(v[i].children, v[i].n_children, rel, recovery);
        if (e)
            return e;
        if (v[i].release && streq(v[i].release, rel) && v[i].recovery == recovery)
            return &v[i];
    }
    return NULL;
}

static void test_fixtures(void)
{
    static const struct {
        const char *file;
        size_t n_top;
        const char *top0_id;
        size_t n_sub; /* entries in the "Advanced options" submenu (index 1) */
        const char *release;
        const char *initrd;
    } cases[] = {
        {"ubuntu-24.04-two-kernels.cfg", 6, "gnulinux-simple-f93ca2dd-74af-4ee8-b478-970b29be5ca3",
         4, "6.8.0-45-generic", "/boot/initrd.img-6.8.0-45-generic"},
        {"ubuntu-24.04-server-efi-lvm-root-separate-boot.cfg", 0, NULL, 4, "6.8.0-47-generic",
         NULL},
        {"ubuntu-22.04-cloud.cfg", 0, NULL, 2, "5.15.0-100-generic", NULL},
        {"ubuntu-22.04-aws-force-partuuid-two-kernels.cfg", 0, NULL, 4, "5.15.0-1026-aws", NULL},
        {"ubuntu-22.04-hwe-aws-three-kernels-force-partuuid.cfg", 0, NULL, 6, "6.2.0-1012-aws",
         NULL},
        {"ubuntu-20.04-cloud-efi.cfg", 0, NULL, 2, "5.4.0-99-generic", NULL},
        {"debian-lvm.cfg", 0, NULL, 2, "4.9.0-3-amd64", "/initrd.img-4.9.0-3-amd64"},
        {"efi-stub-EFI-ubuntu-grub.ubuntu-22.04-cloud.cfg", 0, NULL, 0, NULL, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *text = NULL;
        _cleanup_grub_cfg_ ks_grub_cfg *c = NULL;
        ks_grub_error err = {0};
        size_t len = 0;

        text = read_fixture(cases[i].file, &len);
        CHECK_MSG(text != NULL, "%s", cases[i].file);
        if (!text)
            continue;
        CHECK_MSG(ks_grub_cfg_parse(text, len, &c, &err) == 0, "%s:%u:%u: %s", cases[i].file,
                  err.line, err.column, err.message);
        if (!c)
            continue;
        if (getenv("KS_DUMP"))
            dump(c->entries, c->n_entries, 0);
        if (cases[i].n_top)
            CHECK_INTEQ(c->n_entries, cases[i].n_top);
        if (cases[i].top0_id)
            CHECK_STREQ(c->entries[0].id, cases[i].top0_id);
        if (cases[i].n_sub) {
            CHECK(c->n_entries >= 2 && c->entries[1].submenu);
            if (c->n_entries >= 2)
                CHECK_INTEQ(c->entries[1].n_children, cases[i].n_sub);
        }
        if (cases[i].release) {
            const ks_grub_entry *e =
                find_release(c->entries, c->n_entries, cases[i].release, false);
            const ks_grub_entry *r = find_release(c->entries, c->n_entries, cases[i].release, true);
            CHECK_MSG(e != NULL, "%s: %s", cases[i].file, cases[i].release);
            CHECK_MSG(r != NULL, "%s: %s recovery", cases[i].file, cases[i].release);
            if (e && cases[i].initrd)
                CHECK_STREQ(e->initrd, cases[i].initrd);
        }
    }
}

static const char *lookup(const char *name, void *u)
{
    return streq(name, "v") ? "1 2" : NULL;
}

static void test_words(void)
{
    static const struct {
        const char *in;
        const char *out; /* argv joined with '|' */
    } cases[] = {
        {"echo a b", "echo|a|b"},
        {"echo 'a b' \"c d\"", "echo|a b|c d"},
        {"echo a\\ b", "echo|a b"},
        {"echo \"a\\\"b\\$c\\\\d\\e\"", "echo|a\"b$c\\d\\e"},
        {"echo $v x$v \"$v\"", "echo|1|2|x1|2|1 2"},
        {"echo ${v}y", "echo|1|2y"},
        {"echo $unset \"$unset\" ''", "echo||"},
        {"echo a\\\nb", "echo|ab"},
        {"echo a \\\n b", "echo|a|b"},
        {"echo a#b # comment", "echo|a#b"},
        {"echo 'multi\nline'", "echo|multi\nline"},
        {"echo $\"gettext $x\"", "echo|gettext $x"},
        {"echo if then fi", "echo|if|then|fi"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_grub_cfg_ ks_grub_cfg *c = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        ks_grub_error err = {0};
        char joined[256] = "";

        CHECK_MSG(ks_grub_cfg_parse(cases[i].in, strlen(cases[i].in), &c, &err) == 0,
                  "'%s': %u:%u %s", cases[i].in, err.line, err.column, err.message);
        if (!c)
            continue;
        CHECK_INTEQ(c->script.n, 1);
        CHECK(ks_grub_words_expand(c->script.v[0]->words, c->script.v[0]->n_words, lookup, NULL,
                                   &argv) == 0);
        for (size_t j = 0; argv && argv[j]; j++) {
            if (j)
                strcat(joined, "|");
            strncat(joined, argv[j], sizeof(joined) - strlen(joined) - 1);
        }
        CHECK_STREQ(joined, cases[i].out);
    }
}

static void test_errors(void)
{
    static const struct {
        const char *in;
        unsigned line, column;
    } cases[] = {
        {"echo 'abc", 1, 6},
        {"echo \"abc\nx", 1, 6},
        {"menuentry 'x' {\n  linux /vmlinuz\n", 1, 15},
        {"if true; then\n echo\n", 3, 1},
        {"if true then echo; fi", 1, 20}, /* "then" is an argument of true */
        {"fi", 1, 1},
        {"echo a | b", 1, 8},
        {"echo a && b", 1, 8},
        {"}", 1, 1},
        {"echo $", 1, 6},
        {"echo ${a", 1, 6},
        {"menuentry x { }", 1, 15},
        {"if true; then function f { echo; }; fi", 1, 15},
        {"function f { echo }", 1, 19},
        {"echo \\", 1, 6},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_grub_cfg *c = (ks_grub_cfg *)0x1;
        ks_grub_error err = {0};
        int r = ks_grub_cfg_parse(cases[i].in, strlen(cases[i].in), &c, &err);

        CHECK_MSG(r == -EBADMSG, "'%s' gave %d", cases[i].in, r);
        CHECK(c == (ks_grub_cfg *)0x1);
        CHECK_MSG(err.line == cases[i].line && err.column == cases[i].column,
                  "'%s': %u:%u (%s), want %u:%u", cases[i].in, err.line, err.column, err.message,
                  cases[i].line, cases[i].column);
        CHECK(err.message[0] != '\0');
    }
}

static void test_garbage(void)
{
    /* Binary garbage and a 50 MB config: an answer, no crash (10 MB under the sanitizers,
     * whose shadow memory makes the big one slow). */
#if defined(__SANITIZE_ADDRESS__)
    size_t n = 10u << 20;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    size_t n = 10u << 20;
#else
    size_t n = 50u << 20;
#endif
#else
    size_t n = 50u << 20;
#endif
    char *big = malloc(n + 1);
    /* Entries of about 4 KiB (long comments and arguments), as a generated file with many
     * kernels and verbose templates would have. */
    _cleanup_free_ char *pad = malloc(2049), *args = malloc(2049);
    memset(pad, '#', 2048);
    pad[2048] = '\0';
    memset(args, 'a', 2048);
    args[2048] = '\0';
    _cleanup_free_ char *entry = ks_asprintf(
        "menuentry 'Linux' --id lin {\n  %s\n  linux /vmlinuz-1.0 ro %s\n}\n", pad, args);
    size_t el = strlen(entry), pos = 0;
    ks_grub_cfg *c = NULL;
    ks_grub_error err;

    CHECK(big != NULL);
    if (!big)
        return;
    while (pos + el <= n) {
        memcpy(big + pos, entry, el);
        pos += el;
    }
    CHECK_INTEQ(ks_grub_cfg_parse(big, pos, &c, &err), 0);
    if (c)
        CHECK_INTEQ(c->n_entries, pos / el);
    c = ks_grub_cfg_free(c);
    memset(big, 'x', n);
    big[n] = '\0';
    CHECK_INTEQ(ks_grub_cfg_parse(big, 65u << 20, &c, &err), -EFBIG);
    for (size_t i = 0; i < 1 << 16; i++)
        big[i] = (char)(i * 131 + 7);
    int r = ks_grub_cfg_parse(big, 1 << 16, &c, &err);
    CHECK(r == 0 || r == -EBADMSG);
    c = ks_grub_cfg_free(c);
    free(big);
}

/* Long quoted words, plain and full of escapes: linear (4 MiB took minutes when each
 * character cost a strlen() and a realloc()); alarm() turns a regression into a failure. */
static void test_long_words(void)
{
    static const struct {
        const char *name;
        const char *unit; /* repeated inside "..." */
        const char *expect_unit;
    } cases[] = {
        {"plain", "a", "a"},
        {"escaped quotes", "\\\"", "\""},
        {"escaped backslashes", "\\\\", "\\"},
        {"single-quoted run", "b", "b"},
    };
    const size_t reps = 4u << 20;

    alarm(60);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t ul = strlen(cases[i].unit), el = strlen(cases[i].expect_unit), p = 0;
        char *t = malloc(reps * ul + 32);
        ks_grub_cfg *c = NULL;
        ks_grub_error e = {0};
        bool sq = i == 3;
        CHECK(t != NULL);
        if (!t)
            return;
        p += (size_t)sprintf(t, "set x=%c", sq ? '\'' : '"');
        for (size_t k = 0; k < reps; k++, p += ul)
            memcpy(t + p, cases[i].unit, ul);
        p += (size_t)sprintf(t + p, "%c\n", sq ? '\'' : '"');
        CHECK_MSG(ks_grub_cfg_parse(t, p, &c, &e) == 0, "%s", cases[i].name);
        if (c) {
            char **argv = NULL;
            const ks_grub_node *n = c->script.n > 0 ? c->script.v[0] : NULL;
            CHECK(n && n->n_words == 2);
            if (n && n->n_words == 2 &&
                ks_grub_words_expand(&n->words[1], 1, NULL, NULL, &argv) >= 0 && argv) {
                CHECK_MSG(argv[0] && strlen(argv[0]) == strlen("x=") + reps * el, "%s: length",
                          cases[i].name);
                CHECK(argv[0] && strncmp(argv[0] + 2, cases[i].expect_unit, el) == 0);
                ks_strv_free(argv);
            }
            ks_grub_cfg_free(c);
        }
        free(t);
    }
    alarm(0);
}

int main(void)
{
    test_fixtures();
    test_words();
    test_errors();
    test_garbage();
    test_long_words();
    TEST_DONE();
}
