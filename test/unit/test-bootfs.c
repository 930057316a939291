/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ks_bootfs_probe on temporary roots: real filesystem images made at test time (mkfs.ext4 from
 * e2fsprogs, mkfs.vfat from dosfstools, mkfs.btrfs from btrfs-progs) stand in for the devices,
 * and sysfs trees use relative symlinks like the real one. Without a mkfs tool the image is an
 * empty file: the probe then falls back to the mountinfo type and the UUID check is dropped.
 */
#include <stdarg.h>

#include "lib/host/bootfs.h"
#include "lib/basic/util.h"
#include "test.h"

/* Shell helpers every scenario's setup can use; they run inside the scenario's root. */
static const char helpers[] =
    "set -e\n"
    "PATH=$PATH:/usr/sbin:/sbin\n"
    "mi() { mkdir -p proc/self; printf '%s\\n' \"$@\" > proc/self/mountinfo; }\n"
    /* blk MAJ:MIN DEVPATH: a block device at sys/devices/DEVPATH and its sys/dev/block link */
    "blk() { mkdir -p \"sys/devices/$2\" sys/dev/block; echo \"$1\" > \"sys/devices/$2/dev\";"
    "  ln -s \"../../devices/$2\" \"sys/dev/block/$1\"; }\n"
    "part() { blk \"$1\" \"$2\"; echo \"$3\" > \"sys/devices/$2/partition\"; }\n"
    /* slave HOLDER SLAVE: relative link sys/devices/HOLDER/slaves/NAME -> SLAVE */
    "slave() { mkdir -p \"sys/devices/$1/slaves\";"
    "  up=$(echo \"$1/slaves\" | sed 's|[^/][^/]*|..|g');"
    "  ln -s \"$up/$2\" \"sys/devices/$1/slaves/${2##*/}\"; }\n"
    "dmuuid() { mkdir -p \"sys/devices/$1/dm\"; echo \"$2\" > \"sys/devices/$1/dm/uuid\"; }\n"
    "mdraid() { mkdir -p \"sys/devices/$1/md\"; }\n"
    "img() { mkdir -p \"${2%/*}\"; if command -v \"mkfs.$1\" >/dev/null; then\n"
    "  case $1 in\n"
    "  ext4) truncate -s 8M \"$2\"; mkfs.ext4 -q -F -U \"$3\" \"$2\" ;;\n"
    "  vfat) truncate -s 8M \"$2\"; mkfs.vfat -i \"$3\" \"$2\" >/dev/null ;;\n"
    "  btrfs) truncate -s 128M \"$2\"; mkfs.btrfs -q -f -U \"$3\" \"$2\" >/dev/null ;;\n"
    "  esac; else : > \"$2\"; fi; }\n"
    "mkdir -p boot\n";

#define VDA "pci0000:00/0000:00:04.0/virtio1/block/vda"
#define VDB "pci0000:00/0000:00:05.0/virtio2/block/vdb"
#define SDA "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
#define SDB "pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
#define U1 "0f2c5a8e-1d3b-4c6a-9e7f-112233445566"

static const struct scenario {
    const char *name;
    const char *setup;
    const char *mkfs; /* tool the image needs, NULL for none */
    int ret;
    const char *mount_point, *source, *fs_type, *uuid, *stack;
    bool stack_known, writable;
    const char *reason; /* substring of unwritable_reason */
} scenarios[] = {
    {"virtio partition, ext4",
     "mi '24 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw'\n"
     "img ext4 dev/vda1 " U1 "\n"
     "blk 252:0 " VDA "; part 252:1 " VDA "/vda1 1\n",
     "ext4", 0, "/", "/dev/vda1", "ext4", U1, "partition,disk", true, true, NULL},
    {"separate /boot, vfat on a whole disk",
     "mi '24 1 252:1 / / rw - ext4 /dev/vda1 rw' '30 24 252:16 / /boot rw - vfat /dev/vdb rw'\n"
     "img vfat dev/vdb 1234ABCD\n"
     "blk 252:0 " VDA "; part 252:1 " VDA "/vda1 1; blk 252:16 " VDB "\n",
     "vfat", 0, "/boot", "/dev/vdb", "vfat", "1234-ABCD", "disk", true, true, NULL},
    {"LVM",
     "mi '24 1 253:0 / / rw - ext4 /dev/mapper/ubuntu--vg-ubuntu--lv rw'\n"
     "img ext4 dev/mapper/ubuntu--vg-ubuntu--lv " U1 "\n"
     "blk 252:0 " VDA "; part 252:3 " VDA "/vda3 3\n"
     "blk 253:0 virtual/block/dm-0\n"
     "dmuuid virtual/block/dm-0 "
     "LVM-4Xq2mHcVRZ0ZqBnGmW7d3bYk5pOJtWLe9dK2qQe7uOc0wF3bq5mZ1xT8yR6vN2aL\n"
     "slave virtual/block/dm-0 " VDA "/vda3\n",
     "ext4", 0, "/", "/dev/mapper/ubuntu--vg-ubuntu--lv", "ext4", U1, "lvm,partition,disk", true,
     false, "LVM"},
    {"mdraid /boot on two partitions",
     "mi '67 1 9:2 / / rw - ext4 /dev/md2 rw' '47 67 9:1 / /boot rw - ext3 /dev/md1 rw'\n"
     "img ext4 dev/md1 " U1 "\n"
     "blk 8:0 " SDA "; part 8:1 " SDA "/sda1 1; blk 8:16 " SDB "; part 8:17 " SDB "/sdb1 1\n"
     "blk 9:1 virtual/block/md1; mdraid virtual/block/md1\n"
     "slave virtual/block/md1 " SDA "/sda1; slave virtual/block/md1 " SDB "/sdb1\n",
     "ext4", 0, "/boot", "/dev/md1", "ext4", U1, "md,partition,disk", true, false, "mdraid"},
    {"LUKS on LVM",
     "mi '24 1 253:1 / / rw - ext4 /dev/mapper/luks-3c1f rw'\n"
     "img ext4 dev/mapper/luks-3c1f " U1 "\n"
     "blk 252:0 " VDA "; part 252:3 " VDA "/vda3 3\n"
     "blk 253:0 virtual/block/dm-0; dmuuid virtual/block/dm-0 LVM-abcdef\n"
     "slave virtual/block/dm-0 " VDA "/vda3\n"
     "blk 253:1 virtual/block/dm-1\n"
     "dmuuid virtual/block/dm-1 CRYPT-LUKS2-3c1f9d2e6b7a4f0c8e5d1a2b3c4d5e6f-luks-3c1f\n"
     "slave virtual/block/dm-1 virtual/block/dm-0\n",
     "ext4", 0, "/", "/dev/mapper/luks-3c1f", "ext4", U1, "crypt,lvm,partition,disk", true, false,
     "LVM"},
    {"LUKS on a partition",
     "mi '24 1 253:0 / / rw - ext4 /dev/mapper/cryptroot rw'\n"
     "img ext4 dev/mapper/cryptroot " U1 "\n"
     "blk 252:0 " VDA "; part 252:2 " VDA "/vda2 2\n"
     "blk 253:0 virtual/block/dm-0; dmuuid virtual/block/dm-0 CRYPT-LUKS1-aa-cryptroot\n"
     "slave virtual/block/dm-0 " VDA "/vda2\n",
     "ext4", 0, "/", "/dev/mapper/cryptroot", "ext4", U1, "crypt,partition,disk", true, false,
     "LUKS"},
    {"btrfs (anonymous device number, no sysfs entry)",
     "mi '30 1 0:27 /@ / rw,relatime shared:1 - btrfs /dev/vda1 rw,subvol=/@'\n"
     "img btrfs dev/vda1 " U1 "\n"
     "blk 252:0 " VDA "; part 252:1 " VDA "/vda1 1\n",
     "btrfs", 0, "/", "/dev/vda1", "btrfs", U1, "disk", false, false,
     "/boot/grub is on btrfs: GRUB cannot write its environment block there (sparse file not "
     "allowed)"},
    {"btrfs that blkid sees although mountinfo says ext4",
     "mi '24 1 252:1 / / rw - ext4 /dev/vda1 rw'\n"
     "img btrfs dev/vda1 " U1 "\n"
     "blk 252:0 " VDA "; part 252:1 " VDA "/vda1 1\n",
     "btrfs", 0, "/", "/dev/vda1", "btrfs", U1, "partition,disk", true, false, "btrfs"},
    {"zfs root pool",
     "mi '40 1 0:25 / / rw shared:1 - zfs rpool/ROOT/ubuntu_abc rw,xattr,posixacl'\n", NULL, 0, "/",
     "rpool/ROOT/ubuntu_abc", "zfs", NULL, "unknown", false, false, "sparse file not allowed"},
    {"device that cannot be opened: mountinfo type is used",
     "mi '24 1 252:1 / / rw - ext4 /dev/vda1 rw'\n"
     "blk 252:0 " VDA "; part 252:1 " VDA "/vda1 1\n",
     NULL, 0, "/", "/dev/vda1", "ext4", NULL, "partition,disk", true, true, NULL},
    {"device holding no filesystem: mountinfo type is used",
     "mi '24 1 252:1 / / rw - xfs /dev/vda1 rw'\n"
     "mkdir -p dev; truncate -s 1M dev/vda1\n"
     "blk 252:0 " VDA "; part 252:1 " VDA "/vda1 1\n",
     NULL, 0, "/", "/dev/vda1", "xfs", NULL, "partition,disk", true, true, NULL},
    {"no sysfs, name says md", "mi '67 1 9:0 / / rw - ext4 /dev/md0 rw'\n", NULL, 0, "/",
     "/dev/md0", "ext4", NULL, "md", false, false, "no sys/dev/block/9:0"},
    {"no sysfs, name says a virtio disk", "mi '24 1 252:1 / / rw - ext4 /dev/vda1 rw'\n", NULL, 0,
     "/", "/dev/vda1", "ext4", NULL, "disk", false, true, NULL},
    {"no sysfs, name says nothing", "mi '24 1 8:1 / / rw - ext4 /dev/root rw'\n", NULL, 0, "/",
     "/dev/root", "ext4", NULL, "unknown", false, false, "cannot tell"},
    {"overlay root of a container",
     "mi '260 209 0:84 / / rw,relatime master:39 - overlay overlay rw,lowerdir=/a:/b'\n", NULL, 0,
     "/", "overlay", "overlay", NULL, "unknown", false, false, "overlay"},
    {"device-mapper that is neither LVM nor LUKS",
     "mi '24 1 253:0 / / rw - ext4 /dev/mapper/mpatha rw'\n"
     "blk 8:0 " SDA "\n"
     "blk 253:0 virtual/block/dm-0; dmuuid virtual/block/dm-0 mpath-3600a0b80\n"
     "slave virtual/block/dm-0 " SDA "\n",
     NULL, 0, "/", "/dev/mapper/mpatha", "ext4", NULL, "dm,disk", true, false, "device-mapper"},
    {"no mountinfo", "rm -f proc/self/mountinfo\n", NULL, -ENOENT},
    {"garbage mountinfo", "mi 'not a mount table'\n", NULL, -EBADMSG},
};

static int run(const char *fmt, ...) _printf_(1, 2);
static int run(const char *fmt, ...)
{
    _cleanup_free_ char *cmd = NULL;
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_vasprintf_r(&cmd, fmt, ap);
    va_end(ap);
    if (r < 0)
        abort();
    return system(cmd);
}

static bool have_tool(const char *tool)
{
    return run("PATH=$PATH:/usr/sbin:/sbin command -v %s >/dev/null 2>&1", tool) == 0;
}

static bool have_mkfs(const char *fs)
{
    _cleanup_free_ char *tool = ks_asprintf("mkfs.%s", fs);
    return tool && have_tool(tool);
}

static void check_scenario(const char *base, size_t idx)
{
    const struct scenario *s = &scenarios[idx];
    _cleanup_free_ char *dir = ks_asprintf("%s/%zu", base, idx), *script = NULL;
    _cleanup_free_ char *stack = NULL;
    _cleanup_root_ ks_root *root = NULL;
    ks_bootfs b = {.mount_point = (char *)"untouched"};
    bool imaged = s->mkfs && have_mkfs(s->mkfs);
    FILE *f;
    int r;

    fprintf(stderr, "scenario %zu: %s%s\n", idx, s->name,
            s->mkfs && !imaged ? " (no mkfs tool: image check skipped)" : "");
    script = ks_asprintf("%s.sh", dir);
    f = fopen(script, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "%s%s", helpers, s->setup);
    fclose(f);
    CHECK_MSG(run("mkdir -p %s && cd %s && sh %s", dir, dir, script) == 0, "setup of %s", s->name);

    CHECK(ks_root_open(dir, &root) == 0);
    r = ks_bootfs_probe(root, &b);
    CHECK_MSG(r == s->ret, "%s: %d", s->name, r);
    if (r < 0) {
        CHECK_STREQ(b.mount_point, "untouched");
        return;
    }
    CHECK_STREQ(b.mount_point, s->mount_point);
    CHECK_STREQ(b.source, s->source);
    CHECK_STREQ(b.fs_type, s->fs_type);
    if (!s->mkfs || imaged)
        CHECK_STREQ(b.uuid, s->uuid);
    for (char **p = b.stack; p && *p; p++) {
        char *n = ks_asprintf("%s%s%s", strempty(stack), stack ? "," : "", *p);
        free(stack);
        stack = n;
    }
    CHECK_STREQ(stack, s->stack);
    CHECK_MSG(b.stack_known == s->stack_known, "%s", s->name);
    CHECK_MSG(b.env_writable == s->writable, "%s: %s", s->name, strempty(b.unwritable_reason));
    if (s->writable)
        CHECK_STREQ(b.unwritable_reason, NULL);
    else if (s->reason[0] == '/')
        CHECK_STREQ(b.unwritable_reason, s->reason);
    else
        CHECK_MSG(b.unwritable_reason && strstr(b.unwritable_reason, s->reason), "%s: '%s'",
                  s->name, strempty(b.unwritable_reason));
    CHECK_MSG(b.free_bytes > 0, "%s", s->name);
    ks_bootfs_done(&b);
    CHECK(b.mount_point == NULL && b.stack == NULL);
}

int main(void)
{
    char base[] = "/tmp/kswap-test-bootfs.XXXXXX";

    CHECK(mkdtemp(base) != NULL);
    for (size_t i = 0; i < ARRAY_SIZE(scenarios); i++)
        check_scenario(base, i);
    /* The image scenarios must not all be skipped where the tools exist. */
    fprintf(stderr, "mkfs.ext4 %s, mkfs.vfat %s, mkfs.btrfs %s\n",
            have_tool("mkfs.ext4") ? "yes" : "no", have_tool("mkfs.vfat") ? "yes" : "no",
            have_tool("mkfs.btrfs") ? "yes" : "no");
    run("rm -rf %s", base);
    TEST_DONE();
}
