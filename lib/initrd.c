/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "bootfs.h"
#include "initrd.h"
#include "modinfo.h"
#include "archive-dl.h"
#include "util.h"

#define NEWC_HDR 110
#define MOUNTINFO_MAX (4 * 1024 * 1024)
#define SYSFS_DEPTH_MAX 16

static int add_module_path(char ***names, const char *path)
{
    _cleanup_free_ char *name = NULL;

    /* Modules live under lib/modules/ or usr/lib/modules/ in an initramfs. */
    if (!strstr(path, "lib/modules/") || ks_module_name_from_path(path, &name) < 0)
        return 0;
    if (ks_strv_contains(*names, name))
        return 0;
    return ks_strv_push(names, TAKE_PTR(name));
}

static int hex8(const char *s, unsigned long *ret)
{
    unsigned long v = 0;
    for (int i = 0; i < 8; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned long)(c - 'A' + 10);
        else
            return -EBADMSG;
    }
    *ret = v;
    return 0;
}

static int pread_all(int fd, void *buf, size_t len, off_t off, size_t *ret_n)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    *ret_n = got;
    return 0;
}

/*
 * Walks the uncompressed newc/crc cpio segments at the start (as the kernel's initramfs
 * unpacker does), recording module names; returns the offset of the first byte that is not
 * an uncompressed cpio header or zero padding.
 */
static int skip_plain_segments(int fd, off_t size, char ***names, off_t *ret_off)
{
    off_t off = 0;
    char hdr[NEWC_HDR];
    size_t n;
    int r;

    while (off < size) {
        unsigned long namesize, filesize;
        _cleanup_free_ char *name = NULL;

        r = pread_all(fd, hdr, 4, off, &n);
        if (r < 0)
            return r;
        if (n == 4 && memcmp(hdr, "\0\0\0\0", 4) == 0) {
            off += 4; /* padding between segments */
            continue;
        }
        r = pread_all(fd, hdr, sizeof(hdr), off, &n);
        if (r < 0)
            return r;
        if (n < 6 || (memcmp(hdr, "070701", 6) != 0 && memcmp(hdr, "070702", 6) != 0))
            break;
        if (n < sizeof(hdr) || hex8(hdr + 54, &filesize) < 0 || hex8(hdr + 94, &namesize) < 0 ||
            namesize == 0 || namesize > 4096)
            return -EBADMSG;
        name = malloc(namesize);
        if (!name)
            return -ENOMEM;
        r = pread_all(fd, name, namesize, off + NEWC_HDR, &n);
        if (r < 0)
            return r;
        if (n < namesize)
            return -EBADMSG;
        name[namesize - 1] = '\0';
        off += ((NEWC_HDR + (off_t)namesize + 3) & ~(off_t)3);
        off += (((off_t)filesize + 3) & ~(off_t)3);
        if (off > size)
            return -EBADMSG;
        if (!streq(name, "TRAILER!!!")) {
            r = add_module_path(names, name);
            if (r < 0)
                return r;
        }
    }
    *ret_off = off;
    return 0;
}

int ks_initrd_list_modules_fd(int fd, char ***ret_names, char **ret_error)
{
    _cleanup_strv_free_ char **names = NULL;
    struct archive *a;
    struct archive_entry *entry;
    struct stat st;
    off_t off = 0;
    int r, ar;

    if (fstat(fd, &st) < 0)
        return -errno;
    r = skip_plain_segments(fd, st.st_size, &names, &off);
    if (r < 0) {
        if (ret_error)
            *ret_error = strdup("corrupt uncompressed cpio segment");
        return r;
    }
    if (off < st.st_size) {
        const char *dlerr = NULL;
        if (ks_dlopen_libarchive(&dlerr) < 0) {
            if (ret_error)
                *ret_error = strdup(dlerr);
            return -EOPNOTSUPP;
        }
        if (lseek(fd, off, SEEK_SET) < 0)
            return -errno;
        a = sym_archive_read_new();
        if (!a)
            return -ENOMEM;
        sym_archive_read_support_format_cpio(a);
        sym_archive_read_support_filter_all(a);
        if (sym_archive_read_open_fd(a, fd, 1024 * 1024) != ARCHIVE_OK) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read the compressed part: %s",
                                         strempty(sym_archive_error_string(a)));
            sym_archive_read_free(a);
            return -EBADMSG;
        }
        while ((ar = sym_archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
            const char *p = sym_archive_entry_pathname(entry);
            if (p && sym_archive_entry_filetype(entry) == AE_IFREG) {
                r = add_module_path(&names, p);
                if (r < 0) {
                    sym_archive_read_free(a);
                    return r;
                }
            }
        }
        if (ar != ARCHIVE_EOF) {
            if (ret_error)
                *ret_error = ks_asprintf("cannot read the compressed part: %s",
                                         strempty(sym_archive_error_string(a)));
            sym_archive_read_free(a);
            return -EBADMSG;
        }
        sym_archive_read_free(a);
    } else if (!names && st.st_size > 0 && off == 0) {
        if (ret_error)
            *ret_error = strdup("not an initramfs (no cpio archive)");
        return -EBADMSG;
    }
    ks_strv_sort(names);
    *ret_names = TAKE_PTR(names);
    return 0;
}

int ks_initrd_list_modules(const ks_root *root, const char *path, char ***ret_names,
                           char **ret_error)
{
    _cleanup_close_ int fd = ks_root_open_at(root, path, O_RDONLY, 0);
    if (fd < 0)
        return fd;
    return ks_initrd_list_modules_fd(fd, ret_names, ret_error);
}

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
    _cleanup_free_ char *text = NULL, *fs = NULL, *dev = NULL;
    _cleanup_strv_free_ char **drivers = NULL;
    ks_mountinfo mi = {0};
    const ks_mount *m;
    size_t len;
    int r;

    r = ks_root_read_file(root, "proc/self/mountinfo", MOUNTINFO_MAX, &text, &len);
    if (r < 0)
        return r;
    r = ks_mountinfo_parse(text, len, &mi);
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
