/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/fileio.h"
#include "lib/host/kernels.h"
#include "lib/basic/util.h"
#include "test.h"

/* dpkg's own comparison table (scripts/t/Dpkg_Version.t, __DATA__), then kernel releases. */
static const struct {
    const char *a, *b;
    int cmp;
} versions[] = {
    {"1.0-1", "2.0-2", -1},
    {"2.2~rc-4", "2.2-1", -1},
    {"2.2-1", "2.2~rc-4", 1},
    {"1.0000-1", "1.0-1", 0},
    {"1", "0:1", 0},
    {"0", "0:0-0", 0},
    {"2:2.5", "1:7.5", 1},
    {"1:0foo", "0foo", 1},
    {"0:0foo", "0foo", 0},
    {"0foo", "0foo", 0},
    {"0foo-", "0foo", 0},
    {"0foo-", "0foo-0", 0},
    {"0foo", "0fo", 1},
    {"0foo-", "0foo+", -1},
    {"0foo~1", "0foo", -1},
    {"0foo~foo+Bar", "0foo~foo+bar", -1},
    {"0foo~~", "0foo~", -1},
    {"1~", "1", -1},
    {"12345+that-really-is-some-ver-0", "12345+that-really-is-some-ver-10", -1},
    {"0foo-0", "0foo-01", -1},
    {"0foo.bar", "0foobar", 1},
    {"0foo.bar", "0foo1bar", 1},
    {"0foo.bar", "0foo0bar", 1},
    {"0foo1bar-1", "0foobar-1", -1},
    {"0foo2.0", "0foo2", 1},
    {"0foo2.0.0", "0foo2.10.0", -1},
    {"0foo2.0", "0foo2.0.0", -1},
    {"0foo2.0", "0foo2.10", -1},
    {"0foo2.1", "0foo2.10", -1},
    {"1.09", "1.9", 0},
    {"1.0.8+nmu1", "1.0.8", 1},
    {"3.11", "3.10+nmu1", 1},
    {"0.9j-20080306-4", "0.9i-20070324-2", 1},
    {"1.2.0~b7-1", "1.2.0~b6-1", 1},
    {"1.011-1", "1.06-2", 1},
    {"0.0.9+dfsg1-1", "0.0.8+dfsg1-3", 1},
    {"4.6.99+svn6582-1", "4.6.99+svn6496-1", 1},
    {"53", "52", 1},
    {"0.9.9~pre122-1", "0.9.9~pre111-1", 1},
    {"2:2.3.2-2+lenny2", "2:2.3.2-2", 1},
    {"1:3.8.1-1", "3.8.GA-1", 1},
    {"1.0.1+gpl-1", "1.0.1-2", 1},
    {"1a", "1000a", -1},
    {"-0.6.5", "0.9.1", -1},
    /* kernel releases */
    {"6.8.0-100-generic", "6.8.0-48-generic", 1},
    {"6.18.45-x64v3-xanmod1", "6.8.0-48-generic", 1},
    {"6.1.0-28-amd64", "6.1.0-28-cloud-amd64", -1},
    {"6.1.0-9-amd64", "6.1.0-10-amd64", -1},
    {"5.15.0-1028-aws", "5.15.0-1026-aws", 1},
    {"6.12.10-x64v3-xanmod1", "6.12.9-x64v3-xanmod2", 1},
    /* dpkg takes what follows the last - as the revision: "rc1" sorts after "". */
    {"6.6.0-rc1", "6.6.0", 1},
    {"6.6.0~rc1", "6.6.0", -1},
};

static void test_compare(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
        int c = ks_release_compare(versions[i].a, versions[i].b);
        int r = ks_release_compare(versions[i].b, versions[i].a);
        CHECK_MSG(c == versions[i].cmp, "%s vs %s: %d", versions[i].a, versions[i].b, c);
        CHECK_MSG(r == -versions[i].cmp, "%s vs %s: %d", versions[i].b, versions[i].a, r);
    }
}

static void put(const ks_root *root, const char *path, size_t size)
{
    char *buf = calloc(1, size + 1);
    CHECK(buf != NULL);
    if (buf)
        CHECK_MSG(ks_write_atomic(root, path, buf, size, 0644) == 0, "%s", path);
    free(buf);
}

static void put_text(const ks_root *root, const char *path, const char *text)
{
    CHECK_MSG(ks_write_atomic(root, path, text, strlen(text), 0644) == 0, "%s", path);
}

static void test_installed(const char *base)
{
    static const struct {
        const char *release;
        bool modules, initrd;
        uint64_t vmlinuz, initrd_size;
    } want[] = {
        {"6.18.45-x64v3-xanmod1", true, true, 1500, 2500},
        {"6.8.0-100-generic", false, false, 1400, 0},
        {"6.8.0-48-generic", true, true, 1000, 3000},
        {"6.8.0-45-generic", true, false, 900, 0},
    };
    _cleanup_free_ char *cmd = NULL;
    _cleanup_root_ ks_root *root = NULL;
    ks_kernels ks = {.n = 99};

    CHECK(ks_root_open(base, &root) == 0);
    CHECK(ks_kernels_list(root, &ks) == -ENOENT); /* no boot/ */
    CHECK_INTEQ(ks.n, 99);

    put(root, "boot/vmlinuz-6.8.0-48-generic", 1000);
    put(root, "boot/initrd.img-6.8.0-48-generic", 3000);
    put(root, "boot/vmlinuz-6.8.0-45-generic", 900);
    put(root, "boot/vmlinuz-6.8.0-100-generic", 1400);
    put(root, "boot/vmlinuz-6.18.45-x64v3-xanmod1", 1500);
    put(root, "boot/initrd.img-6.18.45-x64v3-xanmod1", 2500);
    put(root, "boot/vmlinuz-6.8.0-40-generic.bak", 10);
    put(root, "boot/vmlinuz-6.8.0-41-generic.old", 10);
    put(root, "boot/vmlinuz-", 10);
    put(root, "boot/config-6.8.0-48-generic", 10);
    put(root, "lib/modules/6.8.0-48-generic/modules.order", 0);
    put(root, "lib/modules/6.8.0-45-generic/modules.order", 0);
    put(root, "usr/lib/modules/6.18.45-x64v3-xanmod1/modules.order", 0);
    cmd = ks_asprintf("cd %s/boot && ln -s vmlinuz-6.8.0-48-generic vmlinuz && "
                      "ln -s vmlinuz-6.8.0-45-generic vmlinuz.old && "
                      "ln -s vmlinuz-6.8.0-48-generic vmlinuz-9.9.9-link && "
                      "ln -s initrd.img-6.8.0-48-generic initrd.img",
                      base);
    CHECK(system(cmd) == 0);

    CHECK(ks_kernels_list(root, &ks) == 0);
    CHECK_INTEQ(ks.n, ARRAY_SIZE(want));
    for (size_t i = 0; i < ARRAY_SIZE(want) && i < ks.n; i++) {
        CHECK_STREQ(ks.v[i].release, want[i].release);
        CHECK_MSG(ks.v[i].has_modules == want[i].modules, "%s", want[i].release);
        CHECK_MSG(ks.v[i].has_initrd == want[i].initrd, "%s", want[i].release);
        CHECK_INTEQ(ks.v[i].vmlinuz_size, want[i].vmlinuz);
        CHECK_INTEQ(ks.v[i].initrd_size, want[i].initrd_size);
    }
    CHECK(ks_kernels_find(&ks, "6.8.0-45-generic") == &ks.v[3]);
    CHECK(ks_kernels_find(&ks, "6.8.0-4") == NULL);
    ks_kernels_done(&ks);
    CHECK(ks.v == NULL && ks.n == 0);
}

static void test_running(const char *base)
{
    _cleanup_root_ ks_root *root = NULL;
    char *r = (char *)"unset";

    CHECK(ks_root_open(base, &root) == 0);
    CHECK(ks_running_kernel(root, &r) == -ENOENT);
    CHECK_STREQ(r, "unset");
    put_text(root, "proc/sys/kernel/osrelease", "\n");
    CHECK(ks_running_kernel(root, &r) == -EBADMSG);
    put_text(root, "proc/sys/kernel/osrelease", "6.8.0-48-generic\n");
    CHECK(ks_running_kernel(root, &r) == 0);
    CHECK_STREQ(r, "6.8.0-48-generic");
    free(r);
}

static void test_module_kind(const char *base)
{
    static const struct {
        const char *release, *module;
        int ret;
        bool builtin, loadable;
    } t[] = {
        {"6.8.0-48-generic", "tcp_cubic", 0, true, false},
        {"6.8.0-48-generic", "tcp_bbr", 0, false, true},      /* .ko.zst, via modules.order */
        {"6.8.0-48-generic", "sch_cake", 0, false, true},     /* plain .ko */
        {"6.8.0-48-generic", "nf_tables", 0, false, true},    /* .ko.xz */
        {"6.8.0-48-generic", "nf_conntrack", 0, false, true}, /* .ko.gz */
        {"6.8.0-48-generic", "wireguard", 0, false, true},    /* not listed: directory walk */
        {"6.8.0-48-generic", "foo_bar", 0, false, true},      /* file foo-bar.ko in updates/ */
        {"6.8.0-48-generic", "sch_fq", 0, false, false},      /* listed, file missing */
        {"6.8.0-48-generic", "tcp_bb", 0, false, false},
        {"6.8.0-48-generic", "bbr", 0, false, false},
        {"6.18.45-x64v3-xanmod1", "tcp_bbr", 0, true, false}, /* usr/lib/modules */
        {"6.18.45-x64v3-xanmod1", "sch_cake", 0, false, true},
        {"6.9.0-1-generic", "tcp_bbr", -ENOENT, false, false},
        {"../6.8.0-48-generic", "tcp_bbr", -EINVAL, false, false},
        {"6.8.0-48-generic", "kernel/tcp_bbr", -EINVAL, false, false},
    };
    _cleanup_root_ ks_root *root = NULL;

    CHECK(ks_root_open(base, &root) == 0);
#define M "lib/modules/6.8.0-48-generic/"
    put_text(root, M "modules.builtin",
             "kernel/arch/x86/crypto/aesni-intel.ko\n"
             "kernel/net/ipv4/tcp_cubic.ko\n");
    put_text(root, M "modules.order",
             "kernel/net/ipv4/tcp_bbr.ko\nkernel/net/sched/sch_cake.ko\n"
             "kernel/net/netfilter/nf_tables.ko\n"
             "kernel/net/netfilter/nf_conntrack.ko\n"
             "kernel/net/sched/sch_fq.ko\n");
    put(root, M "kernel/net/ipv4/tcp_bbr.ko.zst", 10);
    put(root, M "kernel/net/sched/sch_cake.ko", 10);
    put(root, M "kernel/net/netfilter/nf_tables.ko.xz", 10);
    put(root, M "kernel/net/netfilter/nf_conntrack.ko.gz", 10);
    put(root, M "kernel/drivers/net/wireguard/wireguard.ko.zst", 10);
    put(root, M "updates/dkms/foo-bar.ko", 10);
    put(root, M "kernel/net/ipv4/tcp_bbr2.ko", 10);
#undef M
#define X "usr/lib/modules/6.18.45-x64v3-xanmod1/"
    put_text(root, X "modules.builtin", "kernel/net/ipv4/tcp_bbr.ko\n");
    put_text(root, X "modules.order", "kernel/net/sched/sch_cake.ko\n");
    put(root, X "kernel/net/sched/sch_cake.ko.zst", 10);
#undef X
    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        bool b = !t[i].builtin, m = !t[i].loadable;
        int r = ks_kernel_module_kind(root, t[i].release, t[i].module, &b, &m);
        CHECK_MSG(r == t[i].ret, "%s %s: %d", t[i].release, t[i].module, r);
        if (r < 0)
            continue;
        CHECK_MSG(b == t[i].builtin, "%s %s builtin", t[i].release, t[i].module);
        CHECK_MSG(m == t[i].loadable, "%s %s module", t[i].release, t[i].module);
    }
}

int main(void)
{
    char base[] = "/tmp/kswap-test-kernels.XXXXXX";
    _cleanup_free_ char *rm = NULL;

    CHECK(mkdtemp(base) != NULL);
    test_compare();
    test_installed(base);
    test_running(base);
    test_module_kind(base);
    rm = ks_asprintf("rm -rf %s", base);
    CHECK(system(rm) == 0);
    TEST_DONE();
}
