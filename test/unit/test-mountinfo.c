/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>

#include "lib/host/bootfs.h"
#include "lib/basic/util.h"
#include "test.h"

static size_t count_lines(const char *text, size_t len)
{
    size_t pos = 0, n, c = 0;
    const char *line;

    while (ks_next_line(text, len, &pos, &line, &n))
        if (n > 0)
            c++;
    return c;
}

/* What the mount holding /boot/grub is in each real fixture. */
static const struct {
    const char *file;
    const char *mount_point, *fs_type, *source, *root;
    unsigned major, minor;
} fixtures[] = {
    {"containerd-pod-overlay-root.mountinfo", "/", "overlay", "overlay", "/", 0, 66},
    {"docker-container-overlay-root-oneline.mountinfo", "/", "overlay", "overlay", "/", 0, 84},
    {"fedora-lvm-root-docker-host.mountinfo", "/boot", "ext4", "/dev/nvme0n1p1", "/", 259, 1},
    {"lxd-container-ext4-subdir-root.mountinfo", "/", "ext4", "/dev/vda2",
     "/var/snap/lxd/common/lxd/storage-pools/default/containers/juju-04f1e3-1-lxd-5/rootfs", 252,
     2},
    {"mdraid-root-md2-boot-md1.mountinfo", "/boot", "ext3", "/dev/md1", "/", 9, 1},
    {"systemd-nspawn-container-subdir-root.mountinfo", "/", "ext4", "/dev/sda3", "/arch", 8, 3},
    {"ubuntu-20.04-kvm-cloudimg-ext4-vda1-efi-host.mountinfo", "/", "ext4", "/dev/vda1", "/", 252,
     1},
    {"ubuntu-efi-ext4-root-nvme.mountinfo", "/", "ext4", "/dev/nvme0n1p2", "/", 259, 2},
    {"util-linux-btrfs-root-subvol.mountinfo", "/", "btrfs", "/dev/sdc1", "/root", 259, 3},
    {"util-linux-ext3-root-boot-dm-home.mountinfo", "/boot", "ext3", "/dev/sda6", "/", 8, 6},
    {"util-linux-ext4-root-ext4-boot.mountinfo", "/boot", "ext4", "/dev/sda2", "/", 8, 2},
    {"util-linux-libmount-cr-in-mountpoint.mountinfo", "/boot", "ext3", "/dev/sda6", "/", 8, 6},
};

static void test_fixtures(void)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/mountinfo", ks_fixture_dir());
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t seen = 0;

    CHECK_MSG(d != NULL, "%s", dir);
    while (d && (de = readdir(d))) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        ks_mountinfo mi = {};
        const ks_mount *m;
        size_t len;
        bool known = false;

        if (!ks_endswith(de->d_name, ".mountinfo"))
            continue;
        seen++;
        path = ks_asprintf("%s/%s", dir, de->d_name);
        text = ks_test_slurp(path, &len);
        CHECK_MSG(text != NULL, "%s", path);
        if (!text)
            continue;
        CHECK_MSG(ks_mountinfo_parse(text, len, &mi) == 0, "%s", de->d_name);
        /* Every line of real mountinfo parses. */
        CHECK_MSG(mi.n == count_lines(text, len), "%s: %zu of %zu", de->d_name, mi.n,
                  count_lines(text, len));
        m = ks_mountinfo_find(&mi, "/boot/grub");
        for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
            if (!streq(fixtures[i].file, de->d_name))
                continue;
            known = true;
            CHECK_MSG(m != NULL, "%s", de->d_name);
            if (!m)
                break;
            CHECK_STREQ(m->mount_point, fixtures[i].mount_point);
            CHECK_STREQ(m->fs_type, fixtures[i].fs_type);
            CHECK_STREQ(m->source, fixtures[i].source);
            CHECK_STREQ(m->root, fixtures[i].root);
            CHECK_INTEQ(m->major, fixtures[i].major);
            CHECK_INTEQ(m->minor, fixtures[i].minor);
        }
        CHECK_MSG(known, "fixture %s has no expectation in the table", de->d_name);
        ks_mountinfo_done(&mi);
    }
    if (d)
        closedir(d);
    CHECK_INTEQ(seen, ARRAY_SIZE(fixtures));
}

/* Mount points with a raw \r and with \040 (a space) in real files. */
static void test_special_fixture_lines(void)
{
    static const struct {
        const char *file, *mount_point;
    } t[] = {
        {"util-linux-libmount-cr-in-mountpoint.mountinfo", "/mnt/test/foo\rbar"},
        {"util-linux-ext3-root-boot-dm-home.mountinfo", "/mnt/foo (deleted)"},
    };

    for (size_t j = 0; j < ARRAY_SIZE(t); j++) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        ks_mountinfo mi = {};
        size_t len;
        bool found = false;

        path = ks_asprintf("%s/mountinfo/%s", ks_fixture_dir(), t[j].file);
        text = ks_test_slurp(path, &len);
        CHECK_MSG(text != NULL, "%s", path);
        if (!text)
            continue;
        CHECK(ks_mountinfo_parse(text, len, &mi) == 0);
        for (size_t i = 0; i < mi.n; i++)
            if (streq(mi.v[i].mount_point, t[j].mount_point))
                found = true;
        CHECK_MSG(found, "%s", t[j].file);
        ks_mountinfo_done(&mi);
    }
}

static const struct {
    const char *text;
    int ret;        /* of ks_mountinfo_parse */
    size_t n;       /* mounts parsed */
    const char *mp; /* mount point of the last mount */
    const char *source;
} cases[] = {
    {"", -EBADMSG, 0, NULL, NULL},
    {"\n\n", -EBADMSG, 0, NULL, NULL},
    {"garbage\n", -EBADMSG, 0, NULL, NULL},
    {"1 2 8:1 / / rw - ext4 /dev/sda1 rw", 0, 1, "/", "/dev/sda1"},
    /* optional fields, several of them */
    {"1 2 8:1 / /boot rw shared:1 master:2 propagate_from:3 - ext4 /dev/sda1 rw\n", 0, 1, "/boot",
     "/dev/sda1"},
    /* escapes: space, tab, newline, backslash */
    {"1 2 8:1 / /a\\040b\\011c\\012d\\134e rw - ext4 /dev/x\\040y rw\n", 0, 1, "/a b\tc\nd\\e",
     "/dev/x y"},
    /* not an escape: too short, not octal, \000 */
    {"1 2 8:1 / /a\\04 rw - ext4 s rw\n", 0, 1, "/a\\04", "s"},
    {"1 2 8:1 / /a\\089 rw - ext4 s rw\n", 0, 1, "/a\\089", "s"},
    {"1 2 8:1 / /a\\000 rw - ext4 s rw\n", 0, 1, "/a\\000", "s"},
    /* empty source: kept as an empty field */
    {"1 2 0:5 / /run rw - tmpfs  rw\n", 0, 1, "/run", ""},
    /* malformed lines among good ones are skipped */
    {"1 2 8:1 / / rw - ext4 /dev/sda1 rw\n"
     "x 2 8:1 / /a rw - ext4 /dev/sda1 rw\n"          /* id not a number */
     "1 2 81 / /b rw - ext4 /dev/sda1 rw\n"           /* no colon */
     "1 2 8:x / /c rw - ext4 /dev/sda1 rw\n"          /* minor not a number */
     "1 2 8:1 / /d rw ext4 /dev/sda1 rw\n"            /* no separator */
     "1 2 8:1 / /e rw - ext4\n"                       /* too few fields after it */
     "1 2 8:1 / relative rw - ext4 /dev/sda1 rw\n"    /* mount point not absolute */
     "1 2 8:1 /  rw - ext4 /dev/sda1 rw\n"            /* empty mount point */
     "1 2 8:1 / /f rw -  /dev/sda1 rw\n"              /* empty fs type */
     "1 2 9999999999:1 / /g rw - ext4 /dev/sda1 rw\n" /* major too large */
     "2 1 8:2 / /boot rw - ext4 /dev/sda2 rw\n",
     0, 2, "/boot", "/dev/sda2"},
    /* a "-" inside the first six fields is not the separator */
    {"1 2 8:1 - /x rw - ext4 /dev/sda1 rw\n", 0, 1, "/x", "/dev/sda1"},
    /* CRLF: the \r stays part of the last field, the rest parses */
    {"1 2 8:1 / /x rw - ext4 /dev/sda1 rw\r\n", 0, 1, "/x", "/dev/sda1"},
};

static void test_cases(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_mountinfo mi = {.v = (ks_mount *)1, .n = 77};
        int r = ks_mountinfo_parse(cases[i].text, strlen(cases[i].text), &mi);

        CHECK_MSG(r == cases[i].ret, "case %zu: %d", i, r);
        if (r < 0) {
            /* ret untouched on failure */
            CHECK_MSG(mi.n == 77 && mi.v == (ks_mount *)1, "case %zu", i);
            continue;
        }
        CHECK_MSG(mi.n == cases[i].n, "case %zu: n=%zu", i, mi.n);
        if (mi.n > 0) {
            CHECK_STREQ(mi.v[mi.n - 1].mount_point, cases[i].mp);
            CHECK_STREQ(mi.v[mi.n - 1].source, cases[i].source);
        }
        ks_mountinfo_done(&mi);
    }
}

static void test_find(void)
{
    static const char text[] = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                               "2 1 8:2 / /boot rw - ext4 /dev/sda2 rw\n"
                               "3 1 8:3 / /bootx rw - ext4 /dev/sda3 rw\n"
                               "4 2 8:4 / /boot/efi rw - vfat /dev/sda4 rw\n"
                               "5 2 8:5 / /boot rw - xfs /dev/sda5 rw\n"; /* over-mount */
    static const struct {
        const char *path, *source;
    } t[] = {
        {"/", "/dev/sda1"},      {"/boot/grub", "/dev/sda5"},  {"/boot", "/dev/sda5"},
        {"/boot/", "/dev/sda5"}, {"/bootx/grub", "/dev/sda3"}, {"/boot/efi/EFI", "/dev/sda4"},
        {"/boo", "/dev/sda1"},   {"/etc", "/dev/sda1"},
    };
    ks_mountinfo mi = {};

    CHECK(ks_mountinfo_parse(text, sizeof(text) - 1, &mi) == 0);
    for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
        const ks_mount *m = ks_mountinfo_find(&mi, t[i].path);
        CHECK_MSG(m != NULL, "%s", t[i].path);
        if (m)
            CHECK_STREQ(m->source, t[i].source);
    }
    CHECK(ks_mountinfo_find(&mi, "relative") == NULL);
    CHECK(ks_mountinfo_find(NULL, "/") == NULL);
    ks_mountinfo_done(&mi);

    /* No "/" mount at all: nothing holds /etc. */
    {
        static const char boot_only[] = "1 0 8:1 / /boot rw - ext4 a rw\n";
        CHECK(ks_mountinfo_parse(boot_only, strlen(boot_only), &mi) == 0);
    }
    CHECK(ks_mountinfo_find(&mi, "/etc") == NULL);
    CHECK(ks_mountinfo_find(&mi, "/boot/grub") != NULL);
    ks_mountinfo_done(&mi);
}

int main(void)
{
    test_fixtures();
    test_special_fixture_lines();
    test_cases();
    test_find();
    TEST_DONE();
}
