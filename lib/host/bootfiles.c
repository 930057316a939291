/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grub/cfg.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/host/bootfiles.h"

#define HEAD_SIZE 1024u
#define GRUB_CFG_MAX (64u << 20)
#define REMEDY_REINSTALL                                                                           \
    "nothing is armed; reinstall the kernel ('kswap rollback --purge', then 'kswap apply' "        \
    "again) and check the disk ('dmesg' for I/O errors)"

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static int why(char **ret_why, const char *fmt, ...) _printf_(2, 3);
static int why(char **ret_why, const char *fmt, ...)
{
    va_list ap;

    if (ret_why) {
        va_start(ap, fmt);
        if (vasprintf(ret_why, fmt, ap) < 0)
            *ret_why = NULL;
        va_end(ap);
    }
    return -EBADMSG;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* The x86 boot protocol (Documentation/arch/x86/boot.rst): the real-mode header at 0x1f1. */
int ks_bootfile_kernel_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                             char **ret_why)
{
    uint64_t need;
    unsigned setup_sects;
    uint16_t version;

    assert(head || head_len == 0);
    if (file_size == 0)
        return why(ret_why, "it is empty (0 bytes)");
    if (head_len < 0x210 || file_size < 0x210)
        return why(ret_why, "it has %" PRIu64 " bytes, too short for a bzImage header", file_size);
    if (memcmp(head + 0x202, "HdrS", 4) != 0)
        return why(ret_why, "%s: no bzImage header (\"HdrS\" at 0x202)",
                   all_zero(head, head_len < HEAD_SIZE ? head_len : HEAD_SIZE)
                       ? "its first bytes are zeros (a write that never reached the disk?)"
                       : "it is not a kernel image");
    version = le16(head + 0x206);
    if (version < 0x0204)
        return why(ret_why, "boot protocol %u.%02u is older than 2.04 (not a bzImage)",
                   version >> 8, version & 0xff);
    setup_sects = head[0x1f1] ? head[0x1f1] : 4;
    need = (uint64_t)(setup_sects + 1) * 512 + (uint64_t)le32(head + 0x1f4) * 16;
    if (file_size < need)
        return why(ret_why, "it is truncated: %" PRIu64 " bytes, its header says at least %" PRIu64,
                   file_size, need);
    return 0;
}

/* What the kernel's initramfs unpacker accepts at the start of an archive (init/initramfs.c,
 * lib/decompress.c compressed_formats[]). */
static const struct {
    const char *name;
    const char *magic;
    size_t len;
} initrd_magics[] = {
    {"cpio (newc)", "070701", 6},
    {"cpio (newc with crc)", "070702", 6},
    {"gzip", "\x1f\x8b", 2},
    {"gzip", "\x1f\x9e", 2},
    {"bzip2", "BZh", 3},
    {"lzma", "\x5d\x00\x00", 3},
    {"xz", "\xfd\x37\x7a\x58\x5a\x00", 6},
    {"lzo", "\x89\x4c\x5a\x4f", 4},
    {"lz4", "\x02\x21\x4c\x18", 4},
    {"zstd", "\x28\xb5\x2f\xfd", 4},
};

int ks_bootfile_initrd_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                             char **ret_why)
{
    assert(head || head_len == 0);
    if (file_size == 0 || head_len == 0)
        return why(ret_why, "it is empty (0 bytes)");
    for (size_t i = 0; i < ARRAY_SIZE(initrd_magics); i++)
        if (head_len >= initrd_magics[i].len &&
            memcmp(head, initrd_magics[i].magic, initrd_magics[i].len) == 0)
            return 0;
    if (all_zero(head, head_len))
        return why(ret_why, "its first %zu bytes are zeros (a write that never reached the disk?)",
                   head_len);
    return why(ret_why, "it starts with neither a cpio archive nor a compression the kernel "
                        "unpacks (gzip, bzip2, lzma, xz, lzo, lz4, zstd)");
}

int ks_bootfile_modindex_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                               char **ret_why)
{
    static const uint8_t magic[4] = {0xb0, 0x07, 0xf4, 0x57}; /* libkmod INDEX_MAGIC, big end */

    assert(head || head_len == 0);
    if (file_size == 0)
        return why(ret_why, "it is empty (0 bytes)");
    if (head_len < 8 || memcmp(head, magic, 4) != 0)
        return why(ret_why, "it is no depmod index (magic 0xB007F457 missing)");
    return 0;
}

static const ks_grub_entry *find_top_entry(const ks_grub_cfg *cfg, const char *entry_id)
{
    for (size_t i = 0; i < cfg->n_entries; i++)
        if (!cfg->entries[i].submenu && streq(ks_grub_entry_id(&cfg->entries[i]), entry_id))
            return &cfg->entries[i];
    return NULL;
}

int ks_bootfile_grub_cfg_check(const char *text, size_t len, const char *entry_id,
                               const char *release, char **ret_why)
{
    _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
    ks_grub_error err = {0};
    const ks_grub_entry *e;
    const char *nul;
    int r;

    assert(text || len == 0);
    assert(entry_id);
    assert(release);
    if (len == 0)
        return why(ret_why, "it is empty (0 bytes)");
    nul = memchr(text, '\0', len);
    if (nul)
        return why(ret_why, "it holds NUL bytes from offset %zu on (a torn write?)",
                   (size_t)(nul - text));
    r = ks_grub_cfg_parse(text, len, &cfg, &err);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return why(ret_why, "it does not parse: line %u: %s", err.line,
                   err.message[0] ? err.message : strerror(-r));
    e = find_top_entry(cfg, entry_id);
    if (!e) {
        if (ret_why)
            *ret_why = ks_asprintf("it has no top-level entry '%s'", entry_id);
        return -ENOENT;
    }
    if (!streq_ptr(e->release, release)) {
        if (ret_why)
            *ret_why = ks_asprintf("its entry '%s' loads '%s', not vmlinuz-%s", entry_id,
                                   e->linux_path ? e->linux_path : "no kernel", release);
        return -ENOENT;
    }
    return 0;
}

/* ---- the files on disk ---- */

typedef struct settle {
    const ks_root *root;
    ks_findings *findings;
    ks_bootfiles_stats stats;
    unsigned problems;
} settle;

static int problem(settle *s, const char *id, const char *remedy, const char *fmt, ...)
    _printf_(4, 5);
static int problem(settle *s, const char *id, const char *remedy, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = ks_findings_addv(s->findings, id, KS_SEV_BLOCK, remedy, fmt, ap);
    va_end(ap);
    if (r >= 0)
        s->problems++;
    return r;
}

/* fsync(fd), or syncfs(fd) where the file system has no fsync (EINVAL). */
static int sync_fd(settle *s, int fd, bool is_dir)
{
    if (fsync(fd) == 0) {
        if (is_dir)
            s->stats.dirs_synced++;
        else
            s->stats.files_synced++;
        return 0;
    }
    if (errno != EINVAL && errno != ENOTSUP)
        return -errno;
    if (syncfs(fd) < 0)
        return -errno;
    s->stats.syncfs_calls++;
    s->stats.syncfs_instead++;
    return 0;
}

static int sync_dir(settle *s, const char *dir)
{
    _cleanup_close_ int fd = ks_root_open_at(s->root, dir, O_RDONLY | O_DIRECTORY, 0);
    int r;

    if (fd < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot open '/%s': %s", dir,
                       ks_strerror(fd));
    r = sync_fd(s, fd, true);
    if (r < 0)
        return problem(s, "boot.sync-failed", REMEDY_REINSTALL,
                       "cannot write '/%s' to the disk: %s", dir, strerror(-r));
    return 0;
}

/*
 * Opens, fsyncs, drops the cache of and reads the start of one file. 1 with *fd_out, *size and
 * head filled; 0 when a problem was recorded (the check cannot go on); -ENOMEM.
 */
static int sync_and_open(settle *s, const char *path, uint8_t *head, size_t *head_len,
                         uint64_t *size, int *fd_out)
{
    _cleanup_close_ int fd = ks_root_open_regular(s->root, path, 0);
    struct stat st;
    int r;

    if (fd < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot open '/%s': %s", path,
                       fd == -ENOENT ? "it does not exist" : ks_strerror(fd));
    r = sync_fd(s, fd, false);
    if (r < 0)
        return problem(s, "boot.sync-failed", REMEDY_REINSTALL,
                       "cannot write '/%s' to the disk: %s", path, strerror(-r));
    /* Clean pages can go now: the read below then comes from the disk, not from memory. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (fstat(fd, &st) < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot stat '/%s': %m", path);
    *size = (uint64_t)st.st_size;
    r = ks_pread_all(fd, head, HEAD_SIZE, 0, head_len);
    if (r < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot read '/%s': %s", path,
                       strerror(-r));
    if (fd_out)
        *fd_out = TAKE_FD(fd);
    return 1;
}

typedef int (*check_fn)(const uint8_t *head, size_t head_len, uint64_t file_size, char **ret_why);

static int check_file(settle *s, const char *path, check_fn check, const char *id)
{
    _cleanup_free_ char *reason = NULL;
    uint8_t head[HEAD_SIZE];
    size_t n = 0;
    uint64_t size = 0;
    int r;

    r = sync_and_open(s, path, head, &n, &size, NULL);
    if (r <= 0)
        return r;
    if (!check || check(head, n, size, &reason) >= 0)
        return 0;
    return problem(s, id, REMEDY_REINSTALL, "'/%s' is damaged: %s", path,
                   reason ? reason : "unknown");
}

static int settle_modules(settle *s, const char *release)
{
    _cleanup_strv_free_ char **names = NULL;
    _cleanup_free_ char *dir = ks_asprintf("lib/modules/%s", release);
    bool have_dep = false;
    int r;

    if (!dir)
        return -ENOMEM;
    r = ks_root_list_dir(s->root, dir, &names);
    if (r < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot list '/%s': %s", dir,
                       ks_strerror(r));
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (!ks_startswith(*n, "modules."))
            continue;
        path = ks_asprintf("%s/%s", dir, *n);
        if (!path)
            return -ENOMEM;
        if (ks_root_lstat(s->root, path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (streq(*n, "modules.dep"))
            have_dep = true;
        r = check_file(s, path, ks_endswith(*n, ".bin") ? ks_bootfile_modindex_check : NULL,
                       "boot.modules-damaged");
        if (r < 0)
            return r;
    }
    if (!have_dep) {
        r = problem(s, "boot.file-unreadable", REMEDY_REINSTALL,
                    "'/%s/modules.dep' does not exist: depmod did not run for %s", dir, release);
        if (r < 0)
            return r;
    }
    r = sync_dir(s, dir);
    if (r >= 0)
        r = sync_dir(s, "lib/modules");
    if (r < 0)
        return r;
    {
        /* The module files themselves: dpkg fsynced each of them, not their directories;
         * thousands of paths kswap would have to walk, so one syncfs of their file system. */
        _cleanup_close_ int fd = ks_root_open_at(s->root, dir, O_RDONLY | O_DIRECTORY, 0);
        if (fd >= 0 && syncfs(fd) < 0)
            return problem(s, "boot.sync-failed", REMEDY_REINSTALL,
                           "cannot write the file system of '/%s' to the disk: %m", dir);
        if (fd >= 0)
            s->stats.syncfs_calls++;
    }
    return 0;
}

/*
 * What was synced, visible to GRUB too: the file system's journal written home (GRUB reads no
 * journal; lib/basic/fileio.h), before the grubenv write that makes GRUB load these files.
 */
static int checkpoint(settle *s, const char *dir)
{
    int r = ks_fs_checkpoint_path(s->root, dir);

    if (r < 0)
        return problem(s, "boot.sync-failed", REMEDY_REINSTALL,
                       "cannot write the journal of the file system of '/%s' home, where GRUB "
                       "reads: %s",
                       dir, strerror(-r));
    if (r > 0)
        s->stats.checkpoints++;
    return 0;
}

static int settle_grub_cfg(settle *s, const char *entry_id, const char *release)
{
    static const char path[] = "boot/grub/grub.cfg";
    _cleanup_free_ char *text = NULL, *reason = NULL;
    _cleanup_close_ int fd = -EBADF;
    uint8_t head[HEAD_SIZE];
    size_t n = 0, len = 0;
    uint64_t size = 0;
    int r;

    r = sync_and_open(s, path, head, &n, &size, &fd);
    if (r <= 0)
        return r;
    r = ks_read_fd(fd, GRUB_CFG_MAX, &text, &len);
    if (r < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot read '/%s': %s", path,
                       ks_strerror(r));
    r = ks_bootfile_grub_cfg_check(text, len, entry_id, release, &reason);
    if (r == -ENOMEM)
        return r;
    if (r == -ENOENT)
        return problem(s, "boot.trial-entry-missing",
                       "nothing is armed; run 'update-grub' by hand and read its output, then "
                       "'kswap apply' again",
                       "'/%s' does not hold the trial entry kswap is about to arm: %s", path,
                       reason ? reason : "unknown");
    if (r < 0)
        return problem(s, "boot.grub-cfg-damaged",
                       "nothing is armed; run 'update-grub' by hand and read its output, then "
                       "'kswap apply' again",
                       "'/%s' is damaged: %s", path, reason ? reason : "unknown");
    return 0;
}

int ks_grub_cfg_sync(const ks_root *root, const char **ret_what)
{
    static const char *const paths[] = {"boot/grub/grub.cfg", "boot/grub"};
    settle s = {.root = root};
    int r;

    for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
        _cleanup_close_ int fd = i == 0
                                     ? ks_root_open_regular(root, paths[i], 0)
                                     : ks_root_open_at(root, paths[i], O_RDONLY | O_DIRECTORY, 0);

        r = fd < 0 ? fd : sync_fd(&s, fd, i == 1);

        if (r < 0) {
            if (ret_what)
                *ret_what = paths[i];
            return r;
        }
    }
    /* GRUB reads the directory and the file without the journal (lib/basic/fileio.h). */
    r = ks_fs_checkpoint_path(root, paths[1]);
    if (r < 0 && ret_what)
        *ret_what = paths[1];
    return r < 0 ? r : 0;
}

int ks_bootfiles_settle(const ks_root *root, const char *release, const char *entry_id,
                        ks_findings *findings, ks_bootfiles_stats *ret_stats)
{
    _cleanup_free_ char *kernel = NULL, *initrd = NULL;
    settle s = {.root = root, .findings = findings};
    int r;

    assert(root);
    assert(release);
    assert(entry_id);
    assert(findings);
    kernel = ks_asprintf("boot/vmlinuz-%s", release);
    initrd = ks_asprintf("boot/initrd.img-%s", release);
    if (!kernel || !initrd)
        return -ENOMEM;
    r = check_file(&s, kernel, ks_bootfile_kernel_check, "boot.kernel-damaged");
    if (r >= 0)
        r = check_file(&s, initrd, ks_bootfile_initrd_check, "boot.initrd-damaged");
    if (r >= 0)
        r = settle_modules(&s, release);
    if (r >= 0)
        r = settle_grub_cfg(&s, entry_id, release);
    if (r >= 0)
        r = sync_dir(&s, "boot/grub");
    if (r >= 0)
        r = sync_dir(&s, "boot");
    if (r >= 0)
        r = checkpoint(&s, "boot/grub");
    if (r < 0)
        return r;
    if (ret_stats)
        *ret_stats = s.stats;
    return (int)s.problems;
}
