/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * depmod.d as kmod's depmod reads it (lib/kernel/depmodconf.c): the parser on text, depmod's
 * choice between two files of one name, the rank for packages, and the root's directories with
 * hostile files (FIFO, huge, links out of the root, binary junk, thousands of files).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "lib/kernel/depmodconf.h"
#include "test.h"

#define REL "6.8.0-41-generic"

typedef struct parse_case {
    const char *name;
    const char *text;
    size_t len; /* 0: strlen */
    int expect;
    const char *describe; /* for REL; NULL when it fails */
    const char *error;    /* part of the error */
} parse_case;

static const parse_case parse_cases[] = {
    {"empty", "", 0, 0, "updates", NULL},
    {"Ubuntu's", "search updates ubuntu built-in\n", 0, 0, "updates ubuntu built-in", NULL},
    {"two search lines add up", "search updates\nsearch extra built-in\n", 0, 0,
     "updates extra built-in", NULL},
    {"tabs separate", "search\tupdates\t ubuntu\n", 0, 0, "updates ubuntu", NULL},
    {"comments and blank lines", "# search ubuntu\n\n   \n#x\n", 0, 0, "updates", NULL},
    {"a comment after blanks is a bad line", "   # search ubuntu\n", 0, 0, "updates", NULL},
    {"no newline at the end", "search ubuntu", 0, 0, "ubuntu", NULL},
    {"continuation", "search updates \\\n  ubuntu\n", 0, 0, "updates ubuntu", NULL},
    {"a backslash before a letter is dropped", "search up\\dates\n", 0, 0, "updates", NULL},
    {"override for every kernel", "override tcp_bbr * updates/dkms\n", 0, 0,
     "updates override:updates/dkms/tcp_bbr", NULL},
    {"override for another kernel", "override tcp_bbr ^5\\. extra\n", 0, 0, "updates", NULL},
    {"override for this kernel", "override tcp_bbr ^6\\.8 extra\n", 0, 0,
     "updates override:extra/tcp_bbr", NULL},
    {"override, a bad pattern matches nothing", "override a ( extra\n", 0, 0, "updates", NULL},
    {"override without its subdir", "override tcp_bbr *\n", 0, 0, "updates", NULL},
    {"exclude", "exclude foo bar\n", 0, 0, "updates exclude:foo exclude:bar", NULL},
    {"external", "external * /opt/mods\nsearch external built-in\n", 0, 0,
     "external built-in external:/opt/mods", NULL},
    {"externals in depmod's order", "external * /a\nexternal * /b\n", 0, 0,
     "updates external:/b external:/a", NULL},
    {"ignored directives", "include /etc/x\nmake_map_files\nbogus words\n", 0, 0, "updates", NULL},
    {"a NUL byte", "search a\0b\n", 11, -EBADMSG, NULL, "x.conf:1: a NUL byte"},
    {"a carriage return", "search updates\r\n", 0, -EBADMSG, NULL, "control character 0x0d"},
    {"junk on line 3", "search a\nsearch b\n\001\002", 0, -EBADMSG, NULL, "x.conf:3:"},
    {"junk after a continuation", "search a \\\nb\n\033[2J", 0, -EBADMSG, NULL, "x.conf:3:"},
    /* regcomp copies the tree per "+" and "{n}": chained ones are refused before compiling. */
    {"ten chained + are fine", "override a ^6\\.8\\.0-4+1+-+g+e+n+e+r+i+c+ extra\n", 0, 0,
     "updates override:extra/a", NULL},
    {"thirteen chained +", "override a b+++++++++++++ extra\n", 0, -EBADMSG, NULL,
     "x.conf:1: the kernel pattern \"b+++++++++++++\" nests too many repetitions"},
    {"a long pattern affords fewer",
     "override a ^6.8.0-41-generic-with-a-long-local-suffix-for-"
     "this-site-and-its-build-number-000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "+++++++++ extra\n",
     0, -EBADMSG, NULL, "nests too many repetitions"},
    {"nested groups", "external (((((((((((a+)+)+)+)+)+)+)+)+)+)+)+ /opt\n", 0, -EBADMSG, NULL,
     "nests too many repetitions"},
    {"bounds multiply", "override a 6{99}{99} extra\n", 0, -EBADMSG, NULL, "too many repetitions"},
    {"an open bound counts its minimum", "override a x{9000,} extra\n", 0, -EBADMSG, NULL,
     "too many repetitions"},
    {"a bound strtoul cannot hold does not wrap to zero",
     "override a b{99999999999999999999999}b+++++++++++++ extra\n", 0, -EBADMSG, NULL,
     "too many repetitions"},
    {"a small bound", "override a ^6{1,3}\\.8 extra\n", 0, 0, "updates override:extra/a", NULL},
    {"bracketed + repeat nothing", "override a ^6[+][+][+][+][+][+][+][+][+][+][+]+ extra\n", 0, 0,
     "updates", NULL},
    {"{ without a digit is literal", "override a ^6{x}{y}{z}{w}{v}{u}{t}{s}{r}{q}{p} extra\n", 0, 0,
     "updates", NULL},
};

static void test_parse(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(parse_cases); i++) {
        const parse_case *c = &parse_cases[i];
        _cleanup_depmod_conf_ ks_depmod_conf *conf = ks_depmod_conf_new();
        _cleanup_free_ char *err = NULL, *d = NULL;
        int r;

        CHECK(conf);
        r = ks_depmod_conf_parse(conf, "/etc/depmod.d/x.conf", c->text,
                                 c->len ? c->len : strlen(c->text), &err);
        CHECK_MSG(r == c->expect, "%s: %d (%s)", c->name, r, strempty(err));
        d = ks_depmod_conf_describe(conf, REL);
        /* A failed file leaves nothing behind. */
        CHECK_STREQ(d, c->describe ? c->describe : "updates");
        if (c->error)
            CHECK_MSG(err && strstr(err, c->error), "%s: '%s' lacks '%s'", c->name, strempty(err),
                      c->error);
        else
            CHECK_MSG(!err, "%s: error '%s'", c->name, err);
    }
}

/* Sizes a hostile file can have: a word, or directives, beyond the bounds. */
static void test_bounds(void)
{
    _cleanup_depmod_conf_ ks_depmod_conf *conf = ks_depmod_conf_new();
    _cleanup_free_ char *text = malloc(64 * 1024), *err = NULL, *d = NULL;
    size_t n;

    CHECK(conf && text);
    n = (size_t)sprintf(text, "search ");
    memset(text + n, 'a', KS_DEPMOD_WORD_MAX + 1);
    n += KS_DEPMOD_WORD_MAX + 1;
    CHECK_INTEQ(ks_depmod_conf_parse(conf, "w.conf", text, n, &err), -E2BIG);
    CHECK(err && strstr(err, "w.conf:1: a word of 4097 bytes"));
    free(TAKE_PTR(err));

    n = (size_t)sprintf(text, "search");
    for (int i = 0; i < KS_DEPMOD_DIRECTIVES_MAX; i++)
        n += (size_t)sprintf(text + n, " d%d", i);
    text[n++] = '\n';
    CHECK_INTEQ(ks_depmod_conf_parse(conf, "many.conf", text, n, &err), 0);
    CHECK_INTEQ(ks_depmod_conf_parse(conf, "more.conf", "exclude x\n", 10, &err), -E2BIG);
    CHECK(err && strstr(err, "more.conf:1: more than 4096 depmod.d directives"));
    d = ks_depmod_conf_describe(conf, REL);
    CHECK(d && !strstr(d, "exclude:x"));
}

typedef struct prefer_case {
    const char *name;
    const char *conf; /* NULL: no depmod.d at all */
    const char *old, *new;
    bool keeps_old;
} prefer_case;

#define UBUNTU "search updates ubuntu built-in\n"

static const prefer_case prefer_cases[] = {
    {"default: updates beats kernel", NULL, "kernel/net/x.ko", "updates/x.ko", false},
    {"default: kernel does not beat updates", NULL, "updates/x.ko", "kernel/x.ko", true},
    {"default: two outside updates, the first stays", NULL, "kernel/a/x.ko", "extra/x.ko", true},
    {"default: two in updates, the later one wins (depmod's else-if)", NULL, "updates/a/x.ko",
     "updates/b/x.ko", false},
    {"ubuntu beats kernel", UBUNTU, "kernel/x.ko", "ubuntu/x.ko", false},
    {"updates beats ubuntu", UBUNTU, "ubuntu/x.ko", "updates/x.ko", false},
    {"ubuntu does not beat updates", UBUNTU, "updates/x.ko", "ubuntu/x.ko", true},
    {"two built-in ones: the first stays", UBUNTU, "kernel/x.ko", "extra/x.ko", true},
    {"a prefix is no directory", UBUNTU, "kernel/x.ko", "ubuntu2/x.ko", true},
    {"built-in first", "search built-in updates\n", "updates/x.ko", "kernel/x.ko", false},
    {"override wins", "override x * extra\n", "updates/x.ko", "extra/x.ko", false},
    {"override stays", "override x * extra\n", "extra/x.ko", "updates/x.ko", true},
    {"override, compressed", "override x * extra\n", "updates/x.ko", "extra/x.ko.zst", false},
    {"override only directly in its subdir", "override x * extra\n", "updates/x.ko",
     "extra/sub/x.ko", true},
    {"override of another kernel", "override x ^5 extra\n", "updates/x.ko", "extra/x.ko", true},
    {"override matches the name as written", "override a_b * extra\n", "updates/a-b.ko",
     "extra/a-b.ko", true},
    {"external after built-in", "external * /opt/m\nsearch built-in external\n", "kernel/x.ko",
     "/opt/m/x.ko", true},
    {"external before built-in", "external * /opt/m\nsearch external built-in\n", "kernel/x.ko",
     "/opt/m/x.ko", false},
};

static void test_prefer(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(prefer_cases); i++) {
        const prefer_case *c = &prefer_cases[i];
        _cleanup_depmod_conf_ ks_depmod_conf *conf = NULL;

        if (c->conf) {
            conf = ks_depmod_conf_new();
            CHECK(conf &&
                  ks_depmod_conf_parse(conf, "t.conf", c->conf, strlen(c->conf), NULL) == 0);
        }
        CHECK_MSG(ks_depmod_conf_keeps_old(conf, REL, c->old, c->new) == c->keeps_old, "%s",
                  c->name);
    }
}

typedef struct rank_case {
    const char *conf;
    const char *file;
    int rank;
} rank_case;

static const rank_case rank_cases[] = {
    {NULL, "updates/x.ko", 0},        {NULL, "kernel/x.ko", -1},
    {UBUNTU, "updates/dkms/x.ko", 2}, {UBUNTU, "ubuntu/x.ko", 1},
    {UBUNTU, "kernel/x.ko", 0},       {UBUNTU "override x * kernel\n", "kernel/x.ko", INT_MAX},
};

static void test_rank(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(rank_cases); i++) {
        const rank_case *c = &rank_cases[i];
        _cleanup_depmod_conf_ ks_depmod_conf *conf = NULL;
        if (c->conf) {
            conf = ks_depmod_conf_new();
            CHECK(conf &&
                  ks_depmod_conf_parse(conf, "t.conf", c->conf, strlen(c->conf), NULL) == 0);
        }
        CHECK_MSG(ks_depmod_conf_rank(conf, REL, c->file) == c->rank, "%s %s: %d", c->file,
                  strempty(c->conf), ks_depmod_conf_rank(conf, REL, c->file));
    }
    CHECK(ks_depmod_conf_excludes(NULL, "build") && ks_depmod_conf_excludes(NULL, "source"));
    CHECK(!ks_depmod_conf_excludes(NULL, ".hidden.ko"));
    CHECK(ks_depmod_conf_excludes_path(NULL, "kernel/build/x.ko"));
    CHECK(!ks_depmod_conf_excludes_path(NULL, "kernel/net/x.ko"));
}

/* The root's directories. Each file: "DIR/NAME" and its content; "->T" a link, "|" a FIFO,
 * "/" a directory, "+N" N KiB of comments. */
typedef struct load_case {
    const char *name;
    const char *files[6][2];
    int expect;
    const char *describe;
    const char *error;
} load_case;

static char base[] = "/tmp/test-depmodconf-XXXXXX";

static const load_case load_cases[] = {
    {"none", {{0}}, 0, "updates", NULL},
    {"Ubuntu's", {{"lib/depmod.d/ubuntu.conf", UBUNTU}}, 0, "updates ubuntu built-in", NULL},
    {"etc hides lib's file of one name",
     {{"lib/depmod.d/u.conf", "search ubuntu\n"}, {"etc/depmod.d/u.conf", "search extra\n"}},
     0,
     "extra",
     NULL},
    {"names sort across directories",
     {{"etc/depmod.d/20-b.conf", "search b\n"},
      {"run/depmod.d/10-a.conf", "search a\n"},
      {"usr/local/lib/depmod.d/30-c.conf", "search c\n"},
      {"usr/lib/depmod.d/40-d.conf", "search d\n"}},
     0,
     "a b c d",
     NULL},
    {"only *.conf, no dot files, no directories",
     {{"etc/depmod.d/x.txt", "search no\n"},
      {"etc/depmod.d/.h.conf", "search no\n"},
      {"etc/depmod.d/.conf", "search no\n"},
      {"etc/depmod.d/d.conf/", NULL},
      {"etc/depmod.d/y.conf", "search yes\n"}},
     0,
     "yes",
     NULL},
    {"masked by /dev/null",
     {{"etc/depmod.d/u.conf", "->/dev/null"}, {"lib/depmod.d/u.conf", UBUNTU}},
     0,
     "updates",
     NULL},
    {"an absolute link stays in the root",
     {{"etc/depmod.d/l.conf", "->/srv/x.conf"}, {"srv/x.conf", "search inroot\n"}},
     0,
     "inroot",
     NULL},
    {"a ../ link stays in the root",
     {{"etc/depmod.d/l.conf", "->../../../../../../../../srv/x.conf"},
      {"srv/x.conf", "search inroot\n"}},
     0,
     "inroot",
     NULL},
    {"a dangling link is skipped",
     {{"etc/depmod.d/l.conf", "->/nowhere.conf"}},
     0,
     "updates",
     NULL},
    {"a FIFO",
     {{"etc/depmod.d/f.conf", "|"}},
     -ESPIPE,
     NULL,
     "cannot read '/etc/depmod.d/f.conf': is a FIFO"},
    {"a huge file",
     {{"etc/depmod.d/h.conf", "+300"}},
     -EFBIG,
     NULL,
     "'/etc/depmod.d/h.conf' is larger than 256 KiB"},
    {"binary junk",
     {{"lib/depmod.d/j.conf", "\177ELF\002\001"}},
     -EBADMSG,
     NULL,
     "/lib/depmod.d/j.conf:1: control character 0x7f"},
};

static void put(const char *root, const char *rel, const char *content)
{
    char p[2 * PATH_MAX], cmd[5 * PATH_MAX];
    bool dir = ks_endswith(rel, "/");

    snprintf(p, sizeof(p), "%s/%s", root, rel);
    if (dir)
        p[strlen(p) - 1] = '\0';
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
    if (system(cmd) != 0)
        abort();
    if (dir) {
        mkdir(p, 0755);
    } else if (content[0] == '-' && content[1] == '>') {
        if (symlink(content + 2, p) < 0)
            abort();
    } else if (streq(content, "|")) {
        if (mkfifo(p, 0644) < 0)
            abort();
    } else {
        FILE *f = fopen(p, "we");
        if (!f)
            abort();
        if (content[0] == '+')
            for (int r = atoi(content + 1) * 16; r > 0; r--)
                fprintf(f, "# %061d\n", r);
        else
            fputs(content, f);
        fclose(f);
    }
}

static void test_load(void)
{
    char cmd[4 * PATH_MAX], dir[PATH_MAX];

    for (size_t i = 0; i < ARRAY_SIZE(load_cases); i++) {
        const load_case *c = &load_cases[i];
        _cleanup_root_ ks_root *root = NULL;
        _cleanup_depmod_conf_ ks_depmod_conf *conf = NULL;
        _cleanup_free_ char *err = NULL, *d = NULL;
        int r;

        snprintf(dir, sizeof(dir), "%s/%zu", base, i);
        mkdir(dir, 0755);
        for (size_t k = 0; k < ARRAY_SIZE(c->files) && c->files[k][0]; k++)
            put(dir, c->files[k][0], c->files[k][1]);
        CHECK(ks_root_open(dir, &root) == 0);
        alarm(20); /* a FIFO must not block */
        r = ks_depmod_conf_load(root, &conf, &err);
        alarm(0);
        CHECK_MSG(r == c->expect, "%s: %d (%s)", c->name, r, strempty(err));
        if (r == 0) {
            d = ks_depmod_conf_describe(conf, REL);
            CHECK_MSG(streq_ptr(d, c->describe), "%s: '%s' not '%s'", c->name, strempty(d),
                      c->describe);
        }
        if (c->error)
            CHECK_MSG(err && strstr(err, c->error), "%s: '%s' lacks '%s'", c->name, strempty(err),
                      c->error);
    }

    /* Thousands of files: bounded, and the error names where it stopped. */
    {
        _cleanup_root_ ks_root *root = NULL;
        _cleanup_depmod_conf_ ks_depmod_conf *conf = NULL;
        _cleanup_free_ char *err = NULL;
        snprintf(dir, sizeof(dir), "%s/many/etc/depmod.d", base);
        snprintf(cmd, sizeof(cmd),
                 "mkdir -p %s && cd %s && for i in $(seq 1 1100); do : > f$i.conf; done", dir, dir);
        CHECK(system(cmd) == 0);
        snprintf(dir, sizeof(dir), "%s/many", base);
        CHECK(ks_root_open(dir, &root) == 0);
        CHECK_INTEQ(ks_depmod_conf_load(root, &conf, &err), -E2BIG);
        CHECK(err && strstr(err, "more than 1024 depmod.d files"));
    }
}

int main(void)
{
    char cmd[PATH_MAX];

    if (!mkdtemp(base))
        return 1;
    test_parse();
    test_bounds();
    test_prefer();
    test_rank();
    test_load();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    if (system(cmd) != 0)
        return 1;
    TEST_DONE();
}
