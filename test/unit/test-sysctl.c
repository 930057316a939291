/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>

#include "lib/basic/fileio.h"
#include "lib/host/sysctl.h"
#include "lib/basic/util.h"
#include "test.h"

typedef struct file {
    const char *path;
    const char *content; /* NULL: a symlink to link */
    const char *link;
} file;

typedef struct expect {
    const char *key, *value, *file;
} expect;

#define MAX_FILES 8
#define MAX_EXPECT 8

static const struct scenario {
    const char *name;
    file files[MAX_FILES];
    expect want[MAX_EXPECT];
    const char *keys; /* ks_sysctl_configured_keys(), space-separated; NULL: not asked */
} scenarios[] = {
    {"etc sorts after usr/lib by file name",
     {{"usr/lib/sysctl.d/50-default.conf", "net.core.default_qdisc = fq_codel\n"},
      {"etc/sysctl.d/99-bbr.conf", "net.core.default_qdisc = fq\n"}},
     {{"net.core.default_qdisc", "fq", "/etc/sysctl.d/99-bbr.conf"}}},
    {"file name order beats directory order",
     {{"etc/sysctl.d/10-a.conf", "x.y = 1\n"}, {"usr/lib/sysctl.d/50-b.conf", "x.y = 2\n"}},
     {{"x.y", "2", "/usr/lib/sysctl.d/50-b.conf"}}},
    {"same name in an earlier directory hides the later one",
     {{"etc/sysctl.d/10-a.conf", "x.y = 1\n"},
      {"usr/lib/sysctl.d/50-b.conf", "x.y = 2\n"},
      {"run/sysctl.d/50-b.conf", "x.y = 4\n"},
      {"etc/sysctl.d/50-b.conf", "x.y = 3\n"},
      {"lib/sysctl.d/50-b.conf", "x.y = 5\n"},
      {"usr/local/lib/sysctl.d/50-b.conf", "x.y = 6\n"}},
     {{"x.y", "3", "/etc/sysctl.d/50-b.conf"}}},
    {"run hides usr/local/lib, usr/lib and lib",
     {{"usr/lib/sysctl.d/50-b.conf", "x.y = 2\n"},
      {"usr/local/lib/sysctl.d/50-b.conf", "x.y = 6\n"},
      {"run/sysctl.d/50-b.conf", "x.y = 4\n"}},
     {{"x.y", "4", "/run/sysctl.d/50-b.conf"}}},
    {"usr/local/lib hides usr/lib",
     {{"usr/lib/sysctl.d/50-b.conf", "x.y = 2\n"},
      {"usr/local/lib/sysctl.d/50-b.conf", "x.y = 6\n"},
      {"lib/sysctl.d/60-c.conf", "a.b = 7\n"}},
     {{"x.y", "6", "/usr/local/lib/sysctl.d/50-b.conf"}, {"a.b", "7", "/lib/sysctl.d/60-c.conf"}},
     "x.y a.b"},
    {"a symlink to /dev/null masks the name",
     {{"etc/sysctl.d/10-a.conf", "x.y = 1\n"},
      {"usr/lib/sysctl.d/50-b.conf", "x.y = 2\n"},
      {"etc/sysctl.d/50-b.conf", NULL, "/dev/null"}},
     {{"x.y", "1", "/etc/sysctl.d/10-a.conf"}},
     "x.y"},
    {"etc/sysctl.conf counts through Debian's 99-sysctl.conf link",
     {{"usr/lib/sysctl.d/50-default.conf", "net.ipv4.tcp_congestion_control = cubic\n"},
      {"etc/sysctl.conf", "net.ipv4.tcp_congestion_control=bbr\n"},
      {"etc/sysctl.d/99-sysctl.conf", NULL, "../sysctl.conf"}},
     {{"net.ipv4.tcp_congestion_control", "bbr", "/etc/sysctl.d/99-sysctl.conf"}}},
    {"etc/sysctl.conf without the link is not read by systemd-sysctl",
     {{"usr/lib/sysctl.d/50-default.conf", "net.ipv4.tcp_congestion_control = cubic\n"},
      {"etc/sysctl.conf", "net.ipv4.tcp_congestion_control=bbr\n"}},
     {{"net.ipv4.tcp_congestion_control", "cubic", "/usr/lib/sysctl.d/50-default.conf"}}},
    {"syntax",
     {{"etc/sysctl.d/30-syntax.conf",
       "# comment = 1\n"
       "; comment = 2\n"
       "   # indented comment\n"
       "not an assignment\n"
       "-net.core.default_qdisc = fq   \n"
       "net/ipv4/tcp_congestion_control\t=\tbbr\n"
       "net.ipv4.tcp_allowed_congestion_control =  reno \t cubic  bbr \n"
       "a.b = 1\n"
       "a.b = 2\n"
       "= 5\n"
       "c.d =\n"
       "net.ipv4.conf.eth0/100.rp_filter = 0\n"},
      {"etc/sysctl.d/40-other.txt", "a.b = 9\n"},
      {"etc/sysctl.d/.hidden.conf", "a.b = 8\n"}},
     {{"net.core.default_qdisc", "fq", "/etc/sysctl.d/30-syntax.conf"},
      {"net.ipv4.tcp_congestion_control", "bbr", "/etc/sysctl.d/30-syntax.conf"},
      {"net/ipv4/tcp_congestion_control", "bbr", "/etc/sysctl.d/30-syntax.conf"},
      {"net.ipv4.tcp_allowed_congestion_control", "reno cubic bbr", "/etc/sysctl.d/30-syntax.conf"},
      {"a.b", "2", "/etc/sysctl.d/30-syntax.conf"},
      {"c.d", "", "/etc/sysctl.d/30-syntax.conf"},
      {"net/ipv4/conf/eth0.100/rp_filter", "0", "/etc/sysctl.d/30-syntax.conf"},
      {"comment", NULL, NULL}},
     "net.core.default_qdisc net.ipv4.tcp_congestion_control "
     "net.ipv4.tcp_allowed_congestion_control a.b c.d net.ipv4.conf.eth0/100.rp_filter"},
    {"globs, explicit assignments win over them, '-' excludes",
     {{"usr/lib/sysctl.d/10-explicit.conf", "net.ipv4.conf.all.rp_filter = 1\n"},
      {"usr/lib/sysctl.d/50-glob.conf",
       "net.ipv4.conf.*.rp_filter = 2\n-net.ipv4.conf.lo.rp_filter\n"}},
     {{"net.ipv4.conf.all.rp_filter", "1", "/usr/lib/sysctl.d/10-explicit.conf"},
      {"net.ipv4.conf.eth0.rp_filter", "2", "/usr/lib/sysctl.d/50-glob.conf"},
      {"net.ipv4.conf.lo.rp_filter", NULL, NULL}},
     "net.ipv4.conf.all.rp_filter"},
    {"nothing configured", {{"etc/hostname", "x\n"}}, {{"x.y", NULL, NULL}}, ""},
};

static void make_files(const char *dir, const file *files)
{
    _cleanup_root_ ks_root *root = NULL;

    CHECK(ks_root_open(dir, &root) == 0);
    for (size_t i = 0; i < MAX_FILES && files[i].path; i++) {
        if (files[i].content)
            CHECK(ks_write_atomic(root, files[i].path, files[i].content, strlen(files[i].content),
                                  0644) == 0);
        else {
            _cleanup_free_ char *cmd =
                ks_asprintf("cd %s && mkdir -p \"$(dirname %s)\" && "
                            "ln -s %s %s",
                            dir, files[i].path, files[i].link, files[i].path);
            CHECK(system(cmd) == 0);
        }
    }
}

static void test_configured(const char *base)
{
    for (size_t s = 0; s < ARRAY_SIZE(scenarios); s++) {
        _cleanup_free_ char *dir = ks_asprintf("%s/c%zu", base, s), *cmd = NULL;
        _cleanup_root_ ks_root *root = NULL;

        cmd = ks_asprintf("mkdir -p %s", dir);
        CHECK(system(cmd) == 0);
        make_files(dir, scenarios[s].files);
        CHECK(ks_root_open(dir, &root) == 0);
        for (size_t i = 0; i < MAX_EXPECT && scenarios[s].want[i].key; i++) {
            const expect *e = &scenarios[s].want[i];
            char *value = (char *)"unset", *f = (char *)"unset";
            int r = ks_sysctl_configured(root, e->key, &value, &f);

            CHECK_MSG(r == 0, "%s: %s: %d", scenarios[s].name, e->key, r);
            if (r < 0)
                continue;
            CHECK_MSG(streq_ptr(value, e->value), "%s: %s = '%s', want '%s'", scenarios[s].name,
                      e->key, strempty(value), strempty(e->value));
            CHECK_MSG(streq_ptr(f, e->file), "%s: %s from '%s', want '%s'", scenarios[s].name,
                      e->key, strempty(f), strempty(e->file));
            free(value);
            free(f);
        }
        if (scenarios[s].keys) {
            _cleanup_strv_free_ char **keys = NULL;
            _cleanup_free_ char *joined = NULL;

            CHECK(ks_sysctl_configured_keys(root, &keys) == 0);
            joined = ks_strv_join(keys, " ");
            CHECK_MSG(streq_ptr(joined, scenarios[s].keys), "%s: keys '%s', want '%s'",
                      scenarios[s].name, strempty(joined), scenarios[s].keys);
        }
    }
}

static void test_live(const char *base)
{
    static const file files[] = {
        {"proc/sys/net/ipv4/tcp_available_congestion_control", "reno\tcubic\n"},
        {"proc/sys/net/core/default_qdisc", "fq\n"},
        {"proc/sys/net/ipv4/conf/eth0.100/rp_filter", "2\n"},
        {},
    };
    static const expect want[] = {
        {"net.ipv4.tcp_available_congestion_control", "reno cubic"},
        {"net/core/default_qdisc", "fq"},
        {"net.core.default_qdisc", "fq"},
        {"net.ipv4.conf.eth0/100.rp_filter", "2"},
    };
    _cleanup_free_ char *dir = ks_asprintf("%s/live", base), *cmd = NULL;
    _cleanup_root_ ks_root *root = NULL;
    char *v = NULL;

    cmd = ks_asprintf("mkdir -p %s", dir);
    CHECK(system(cmd) == 0);
    make_files(dir, files);
    CHECK(ks_root_open(dir, &root) == 0);
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        v = NULL;
        CHECK_MSG(ks_sysctl_live(root, want[i].key, &v) == 0, "%s", want[i].key);
        CHECK_STREQ(v, want[i].value);
        free(v);
    }
    v = (char *)"unset";
    CHECK(ks_sysctl_live(root, "net.ipv4.tcp_congestion_control", &v) == -ENOENT);
    CHECK_STREQ(v, "unset");
    CHECK(ks_sysctl_live(root, "../../etc/passwd", &v) == -EINVAL);
}

static void test_modules_load(const char *base)
{
    static const struct {
        const char *name;
        file files[MAX_FILES];
        const char *module;
        bool listed;
        const char *file;
    } t[] = {
        {"modules-load.d",
         {{"etc/modules-load.d/bbr.conf", "# BBR\ntcp_bbr\n"}},
         "tcp_bbr",
         true,
         "/etc/modules-load.d/bbr.conf"},
        {"usr/lib, with white space and a comment",
         {{"usr/lib/modules-load.d/net.conf", "; x\n  sch_fq  \n\ttcp_bbr\n"}},
         "tcp_bbr",
         true,
         "/usr/lib/modules-load.d/net.conf"},
        {"masked in etc",
         {{"usr/lib/modules-load.d/bbr.conf", "tcp_bbr\n"},
          {"etc/modules-load.d/bbr.conf", NULL, "/dev/null"}},
         "tcp_bbr",
         false,
         NULL},
        {"hidden by an empty file of the same name",
         {{"usr/lib/modules-load.d/bbr.conf", "tcp_bbr\n"}, {"etc/modules-load.d/bbr.conf", "\n"}},
         "tcp_bbr",
         false,
         NULL},
        {"Debian's etc/modules with '-' for '_'",
         {{"etc/modules", "# /etc/modules\nloop\ntcp-bbr\n"}},
         "tcp_bbr",
         true,
         "/etc/modules"},
        {"commented out",
         {{"etc/modules-load.d/bbr.conf", "#tcp_bbr\n"}, {"etc/modules", "# tcp_bbr\n"}},
         "tcp_bbr",
         false,
         NULL},
        {"a prefix is not the module",
         {{"etc/modules-load.d/x.conf", "tcp_bbr2\n"}},
         "tcp_bbr",
         false,
         NULL},
        {"not a .conf file", {{"etc/modules-load.d/bbr", "tcp_bbr\n"}}, "tcp_bbr", false, NULL},
    };

    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        _cleanup_free_ char *dir = ks_asprintf("%s/m%zu", base, i), *cmd = NULL, *f = NULL;
        _cleanup_root_ ks_root *root = NULL;
        bool listed = !t[i].listed;

        cmd = ks_asprintf("mkdir -p %s", dir);
        CHECK(system(cmd) == 0);
        make_files(dir, t[i].files);
        CHECK(ks_root_open(dir, &root) == 0);
        CHECK(ks_modules_load_lists(root, t[i].module, &listed, &f) == 0);
        CHECK_MSG(listed == t[i].listed, "%s", t[i].name);
        CHECK_STREQ(f, t[i].file);
    }
}

int main(void)
{
    char base[] = "/tmp/kswap-test-sysctl.XXXXXX";
    _cleanup_free_ char *rm = NULL;

    CHECK(mkdtemp(base) != NULL);
    test_configured(base);
    test_live(base);
    test_modules_load(base);
    rm = ks_asprintf("rm -rf %s", base);
    CHECK(system(rm) == 0);
    TEST_DONE();
}
