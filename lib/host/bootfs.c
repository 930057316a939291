/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <blkid.h>
#include <fcntl.h>

#include "lib/basic/fileio.h"
#include "lib/host/bootfs.h"
#include "lib/basic/util.h"

#define STACK_DEPTH_MAX 16

void ks_bootfs_done(ks_bootfs *b)
{
    if (!b)
        return;
    free(b->mount_point);
    free(b->source);
    free(b->fs_type);
    free(b->uuid);
    ks_strv_free(b->stack);
    free(b->unwritable_reason);
    *b = (ks_bootfs){};
}

/* The device is opened inside the root: under --root a regular file with an image stands in.
 * A block device or such an image only: a character device is never opened. */
static int probe_device(const ks_root *root, const char *path, char **ret_type, char **ret_uuid)
{
    _cleanup_close_ int fd = -EBADF;
    _cleanup_free_ char *type = NULL, *uuid = NULL;
    const char *v;
    blkid_probe pr;
    int r;

    fd = ks_root_open_file(root, path, O_RDONLY, 0, KS_FILE_REGULAR | KS_FILE_BLOCK);
    if (fd < 0)
        return fd;
    pr = blkid_new_probe();
    if (!pr)
        return -ENOMEM;
    if (blkid_probe_set_device(pr, fd, 0, 0) < 0) {
        blkid_free_probe(pr);
        return -EIO;
    }
    blkid_probe_enable_superblocks(pr, 1);
    blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID);
    r = blkid_do_safeprobe(pr);
    if (r != 0) {
        blkid_free_probe(pr);
        /* 1: nothing found, -2: ambiguous, -1: error. */
        return r == 1 ? -ENODATA : r == -2 ? -ENOTUNIQ : -EIO;
    }
    if (blkid_probe_lookup_value(pr, "TYPE", &v, NULL) == 0 && v)
        type = strdup(v);
    if (blkid_probe_lookup_value(pr, "UUID", &v, NULL) == 0 && v)
        uuid = strdup(v);
    blkid_free_probe(pr);
    if (!type)
        return -ENODATA;
    *ret_type = TAKE_PTR(type);
    *ret_uuid = TAKE_PTR(uuid);
    return 0;
}

static int stack_add(char ***stack, const char *kind)
{
    /* A kind appears once: two RAID members on two partitions are still "md, partition, disk". */
    if (ks_strv_contains(*stack, kind))
        return 0;
    return ks_strv_extend(stack, kind);
}

/* Walks sys/dev/block/MAJ:MIN (path) down to the disks, outermost first. */
static int walk_stack(const ks_root *root, const char *path, unsigned depth, char ***stack)
{
    _cleanup_free_ char *p = NULL, *uuid = NULL;
    _cleanup_strv_free_ char **slaves = NULL;
    bool dm = false;
    int r;

    if (depth > STACK_DEPTH_MAX)
        return -ELOOP;

    p = ks_asprintf("%s/dm/uuid", path);
    if (!p)
        return -ENOMEM;
    if (ks_root_read_line(root, p, &uuid) >= 0) {
        dm = true;
        if (ks_startswith(uuid, "LVM-"))
            r = stack_add(stack, "lvm");
        else if (ks_startswith(uuid, "CRYPT-"))
            r = stack_add(stack, "crypt");
        else
            r = stack_add(stack, "dm");
        if (r < 0)
            return r;
    }
    free(p);
    p = ks_asprintf("%s/md", path);
    if (!p)
        return -ENOMEM;
    if (!dm && ks_root_exists(root, p)) {
        dm = true;
        r = stack_add(stack, "md");
        if (r < 0)
            return r;
    }
    if (dm) {
        free(p);
        p = ks_asprintf("%s/slaves", path);
        if (!p)
            return -ENOMEM;
        if (ks_root_list_dir(root, p, &slaves) < 0)
            return 0;
        for (char **s = slaves; *s; s++) {
            _cleanup_free_ char *sp = ks_asprintf("%s/%s", p, *s);
            if (!sp)
                return -ENOMEM;
            r = walk_stack(root, sp, depth + 1, stack);
            if (r < 0)
                return r;
        }
        return 0;
    }

    free(p);
    p = ks_asprintf("%s/partition", path);
    if (!p)
        return -ENOMEM;
    if (ks_root_exists(root, p)) {
        _cleanup_free_ char *parent = ks_asprintf("%s/..", path);
        r = stack_add(stack, "partition");
        if (r < 0)
            return r;
        if (!parent)
            return -ENOMEM;
        return walk_stack(root, parent, depth + 1, stack);
    }
    return stack_add(stack, "disk");
}

/* Without sys/dev/block: a guess from the device name, NULL when the name says nothing. */
static const char *stack_from_name(const char *source, unsigned major)
{
    const char *n = ks_startswith(source, "/dev/");

    if (major == 9)
        return "md";
    if (!n)
        return NULL;
    if (ks_startswith(n, "mapper/") || ks_startswith(n, "dm-"))
        return "dm";
    if (ks_startswith(n, "md"))
        return "md";
    if (ks_startswith(n, "vd") || ks_startswith(n, "sd") || ks_startswith(n, "xvd") ||
        ks_startswith(n, "hd") || ks_startswith(n, "nvme") || ks_startswith(n, "mmcblk"))
        return "disk";
    return NULL;
}

static bool fs_is_writable_type(const char *t)
{
    static const char *const ok[] = {"ext2", "ext3", "ext4", "xfs", "vfat"};

    for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
        if (streq(t, ok[i]))
            return true;
    return false;
}

static char *decide(const ks_bootfs *b, const char *where, bool *ret_by_stack)
{
    const char *t = b->fs_type;

    *ret_by_stack = false;

    if (streq(t, "btrfs") || streq(t, "zfs") || streq(t, "zfs_member"))
        return ks_asprintf("%s is on %s: GRUB cannot write its environment block there "
                           "(sparse file not allowed)",
                           where, t);
    if (!fs_is_writable_type(t))
        return ks_asprintf("%s is on %s: kswap trusts GRUB's environment block only on ext2/3/4, "
                           "xfs or vfat",
                           where, t);
    *ret_by_stack = true;
    if (ks_strv_contains(b->stack, "lvm"))
        return ks_asprintf("%s is on LVM: GRUB refuses to write its environment block there "
                           "(diskfilter writes are not supported)",
                           where);
    if (ks_strv_contains(b->stack, "md"))
        return ks_asprintf("%s is on mdraid: GRUB refuses to write its environment block there "
                           "(diskfilter writes are not supported)",
                           where);
    if (ks_strv_contains(b->stack, "crypt"))
        return ks_asprintf("%s is on LUKS: GRUB's writes to its environment block there are "
                           "untested, so kswap treats them as unsafe",
                           where);
    if (ks_strv_contains(b->stack, "dm"))
        return ks_asprintf("%s is on a device-mapper device that is neither LVM nor LUKS: "
                           "GRUB's writes there are unproven",
                           where);
    if (!b->stack_known && !b->stack)
        return ks_asprintf("%s is on %s, a device whose stack kswap cannot tell (no "
                           "sys/dev/block/MAJ:MIN and an unknown name): GRUB's writes are "
                           "unproven",
                           where, strempty(b->source));
    return NULL;
}

int ks_bootfs_probe(const ks_root *root, ks_bootfs *ret)
{
    _cleanup_(ks_bootfs_done) ks_bootfs b = {};
    _cleanup_free_ char *sysdev = NULL, *type = NULL, *uuid = NULL;
    _cleanup_free_ char *reason = NULL;
    _cleanup_(ks_mountinfo_done) ks_mountinfo mi = {};
    const ks_mount *m;
    struct statvfs sv;
    bool by_stack;
    int r;

    r = ks_mountinfo_read(root, &mi);
    if (r < 0)
        return r;
    /* The longest mount point wins: /boot/grub, else /boot, else /. */
    m = ks_mountinfo_find(&mi, "/boot/grub");
    if (!m)
        return -ENOENT;

    b.mount_point = strdup(m->mount_point);
    b.source = strdup(m->source);
    if (!b.mount_point || !b.source)
        return -ENOMEM;

    if (m->source[0] == '/')
        r = probe_device(root, m->source, &type, &uuid);
    else
        r = -ENOENT;
    if (r == -ENOENT) {
        /* udev's dev/block/MAJ:MIN link names the same device when the source does not. */
        _cleanup_free_ char *alt = ks_asprintf("dev/block/%u:%u", m->major, m->minor);
        if (!alt)
            return -ENOMEM;
        r = probe_device(root, alt, &type, &uuid);
    }
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        b.fs_type = strdup(m->fs_type);
    else {
        b.fs_type = TAKE_PTR(type);
        b.uuid = TAKE_PTR(uuid);
    }
    if (!b.fs_type)
        return -ENOMEM;

    sysdev = ks_asprintf("sys/dev/block/%u:%u", m->major, m->minor);
    if (!sysdev)
        return -ENOMEM;
    if (ks_root_exists(root, sysdev)) {
        b.stack_known = true;
        r = walk_stack(root, sysdev, 0, &b.stack);
        if (r == -ENOMEM)
            return r;
    } else {
        const char *guess = stack_from_name(m->source, m->major);
        if (guess && ks_strv_extend(&b.stack, guess) < 0)
            return -ENOMEM;
    }

    reason = decide(&b, streq(b.mount_point, "/") ? "/boot/grub" : b.mount_point, &by_stack);
    if (reason && by_stack && !b.stack_known && !strstr(reason, "sys/dev/block")) {
        /* Say that the device stack was not seen, only guessed. */
        char *r2 = ks_asprintf("%s (device stack guessed from the name %s: no "
                               "sys/dev/block/%s)",
                               reason, b.source, sysdev + 14);
        if (!r2)
            return -ENOMEM;
        free(reason);
        reason = r2;
    }
    b.env_writable = !reason;
    b.unwritable_reason = TAKE_PTR(reason);
    if (!b.stack && ks_strv_extend(&b.stack, b.stack_known ? "disk" : "unknown") < 0)
        return -ENOMEM;

    if (ks_root_statvfs(root, "boot", &sv) >= 0)
        b.free_bytes = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;

    *ret = b;
    b = (ks_bootfs){};
    return 0;
}
