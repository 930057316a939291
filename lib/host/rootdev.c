/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <sys/stat.h>

#include "lib/basic/util.h"
#include "lib/host/bootfs.h"
#include "lib/host/rootdev.h"

#define SYSFS_DEPTH_MAX 16

/* The module behind a sysfs driver directory: driver/module's name, else the driver's. */
static int driver_module(const ks_root *root, const char *dev, char **ret)
{
    _cleanup_free_ char *p = ks_asprintf("%s/driver/module", dev), *target = NULL;
    const char *base;
    char *name;

    if (!p)
        return -ENOMEM;
    if (ks_root_readlink(root, p, &target) < 0) {
        free(p);
        p = ks_asprintf("%s/driver", dev);
        if (!p)
            return -ENOMEM;
        if (ks_root_readlink(root, p, &target) < 0)
            return -ENOENT;
    }
    base = strrchr(target, '/');
    name = strdup(base ? base + 1 : target);
    if (!name)
        return -ENOMEM;
    ks_module_name_normalize(name);
    *ret = name;
    return 0;
}

static int add_name(char ***l, const char *name)
{
    if (ks_strv_contains(*l, name))
        return 0;
    return ks_strv_extend(l, name);
}

/* The drivers of the hardware behind one disk: the device and its parents up to the bus:
 * virtio2 (virtio_blk), then the PCI function (virtio_pci); a SCSI disk (sd), its host
 * (virtio_scsi), ... */
static int hardware_drivers(const ks_root *root, const char *disk, char ***drivers)
{
    _cleanup_free_ char *dev = ks_asprintf("%s/device", disk);
    int r;

    if (!dev)
        return -ENOMEM;
    for (unsigned depth = 0; depth < SYSFS_DEPTH_MAX; depth++) {
        _cleanup_free_ char *name = NULL, *sub = ks_asprintf("%s/subsystem", dev);
        char *up;

        if (!sub)
            return -ENOMEM;
        if (!ks_root_exists(root, dev))
            break;
        r = driver_module(root, dev, &name);
        if (r == -ENOMEM)
            return r;
        if (r >= 0 && (r = add_name(drivers, name)) < 0)
            return r;
        if (!ks_root_exists(root, sub))
            break; /* sys/devices/pci0000:00 and above: no bus any more */
        up = ks_asprintf("%s/..", dev);
        if (!up)
            return -ENOMEM;
        free(dev);
        dev = up;
    }
    return 0;
}

/* The modules a block device needs: device-mapper and md targets, then their slaves, down to
 * the disks and their hardware. blk: a sysfs block device directory inside the root. */
static int block_drivers(const ks_root *root, const char *blk, unsigned depth, char ***drivers)
{
    _cleanup_free_ char *p = NULL, *v = NULL, *slaves_dir = NULL, *disk = NULL;
    _cleanup_strv_free_ char **slaves = NULL;
    int r;

    if (depth > 8)
        return 0;
    p = ks_asprintf("%s/dm/uuid", blk);
    if (!p)
        return -ENOMEM;
    if (ks_root_read_line(root, p, &v) >= 0) {
        /* LVM volumes are dm-linear (dm_mod); LUKS adds dm_crypt. */
        r = add_name(drivers, "dm_mod");
        if (r >= 0 && ks_startswith(v, "CRYPT-"))
            r = add_name(drivers, "dm_crypt");
        if (r < 0)
            return r;
    }
    free(TAKE_PTR(p));
    free(TAKE_PTR(v));
    p = ks_asprintf("%s/md/level", blk);
    if (!p)
        return -ENOMEM;
    if (ks_root_read_line(root, p, &v) >= 0) {
        const char *level = v;
        r = add_name(drivers, "md_mod");
        if (r < 0)
            return r;
        if (streq(v, "raid4") || streq(v, "raid5") || streq(v, "raid6"))
            level = "raid456";
        if (ks_startswith(level, "raid") && (r = add_name(drivers, level)) < 0)
            return r;
    }

    slaves_dir = ks_asprintf("%s/slaves", blk);
    if (!slaves_dir)
        return -ENOMEM;
    if (ks_root_list_dir(root, slaves_dir, &slaves) >= 0 && slaves && slaves[0]) {
        for (char **sl = slaves; *sl; sl++) {
            _cleanup_free_ char *sub = ks_asprintf("%s/%s", slaves_dir, *sl);
            if (!sub)
                return -ENOMEM;
            r = block_drivers(root, sub, depth + 1, drivers);
            if (r < 0)
                return r;
        }
        return 0;
    }

    /* A partition's hardware is its disk's: one level up. */
    free(TAKE_PTR(p));
    p = ks_asprintf("%s/partition", blk);
    if (!p)
        return -ENOMEM;
    disk = ks_root_exists(root, p) ? ks_asprintf("%s/..", blk) : strdup(blk);
    if (!disk)
        return -ENOMEM;
    return hardware_drivers(root, disk, drivers);
}

int ks_root_device_drivers(const ks_root *root, char ***ret_drivers, char **ret_fs_type)
{
    _cleanup_free_ char *fs = NULL, *dev = NULL;
    _cleanup_strv_free_ char **drivers = NULL;
    ks_mountinfo mi = {0};
    const ks_mount *m;
    int r;

    r = ks_mountinfo_read(root, &mi);
    if (r < 0)
        return r;
    m = ks_mountinfo_find(&mi, "/");
    if (!m || !m->fs_type) {
        ks_mountinfo_done(&mi);
        return -ENOENT;
    }
    fs = strdup(m->fs_type);
    dev = ks_asprintf("sys/dev/block/%u:%u", m->major, m->minor);
    ks_mountinfo_done(&mi);
    if (!fs || !dev)
        return -ENOMEM;
    r = block_drivers(root, dev, 0, &drivers);
    if (r < 0)
        return r;
    *ret_drivers = TAKE_PTR(drivers);
    *ret_fs_type = TAKE_PTR(fs);
    return 0;
}
