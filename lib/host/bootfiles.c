/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grub/cfg.h"
#include "grub/paths.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/host/bootfiles.h"

#define HEAD_SIZE 1024u
#define GRUB_CFG_MAX (64u << 20)
#define REMEDY_REINSTALL                                                                           \
    "nothing is armed; reinstall the kernel ('kswap rollback --purge', then 'kswap apply' "        \
    "again) and check the disk ('dmesg' for I/O errors)"
#define REMEDY_UPDATE_GRUB                                                                         \
    "nothing is armed; run 'update-grub' by hand and read its output, then 'kswap apply' again"

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Says why in *ret_why (when given) and returns err. */
static int why_err(char **ret_why, int err, const char *fmt, ...) _printf_(3, 4);
static int why_err(char **ret_why, int err, const char *fmt, ...)
{
    va_list ap;

    if (ret_why) {
        va_start(ap, fmt);
        if (vasprintf(ret_why, fmt, ap) < 0)
            *ret_why = NULL;
        va_end(ap);
    }
    return err;
}

#define why(ret_why, ...) why_err(ret_why, -EBADMSG, __VA_ARGS__)

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

const char *ks_bootfile_initrd_format(const uint8_t *head, size_t head_len)
{
    assert(head || head_len == 0);
    for (size_t i = 0; i < ARRAY_SIZE(initrd_magics); i++)
        if (head_len >= initrd_magics[i].len &&
            memcmp(head, initrd_magics[i].magic, initrd_magics[i].len) == 0)
            return initrd_magics[i].name;
    return NULL;
}

int ks_bootfile_initrd_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                             char **ret_why)
{
    assert(head || head_len == 0);
    if (file_size == 0 || head_len == 0)
        return why(ret_why, "it is empty (0 bytes)");
    if (ks_bootfile_initrd_format(head, head_len))
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

/* grub.cfg's text parsed, or -EBADMSG with why: empty, NUL bytes (a torn write), a syntax
 * error. */
static int parse_cfg(const char *text, size_t len, ks_grub_cfg **ret, char **ret_why)
{
    ks_grub_error err = {0};
    const char *nul;
    int r;

    if (len == 0)
        return why(ret_why, "it is empty (0 bytes)");
    nul = memchr(text, '\0', len);
    if (nul)
        return why(ret_why, "it holds NUL bytes from offset %zu on (a torn write?)",
                   (size_t)(nul - text));
    r = ks_grub_cfg_parse(text, len, ret, &err);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return why(ret_why, "it does not parse: line %u: %s", err.line,
                   err.message[0] ? err.message : strerror(-r));
    return 0;
}

/* -ENOENT with why unless cfg has a top-level entry entry_id that loads vmlinuz-release. */
static int check_entry(const ks_grub_cfg *cfg, const char *entry_id, const char *release,
                       const ks_grub_entry **ret, char **ret_why)
{
    const ks_grub_entry *e = find_top_entry(cfg, entry_id);

    if (!e)
        return why_err(ret_why, -ENOENT, "it has no top-level entry '%s'", entry_id);
    if (!streq_ptr(e->release, release))
        return why_err(ret_why, -ENOENT, "its entry '%s' loads '%s', not vmlinuz-%s", entry_id,
                       e->linux_path ? e->linux_path : "no kernel", release);
    if (ret)
        *ret = e;
    return 0;
}

int ks_bootfile_grub_cfg_check(const char *text, size_t len, const char *entry_id,
                               const char *release, char **ret_why)
{
    _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
    int r;

    assert(text || len == 0);
    assert(entry_id);
    assert(release);
    r = parse_cfg(text, len, &cfg, ret_why);
    if (r < 0)
        return r;
    return check_entry(cfg, entry_id, release, NULL, ret_why);
}

/* ---- which files a boot loads ---- */

int ks_bootfile_root_path(const char *grub_path, char **ret)
{
    const char *name;

    assert(grub_path);
    assert(ret);
    /* A device first, "(hd0,msdos1)" or "($root)": the path follows it. */
    if (grub_path[0] == '(' && strchr(grub_path, ')'))
        grub_path = strchr(grub_path, ')') + 1;
    if (strchr(grub_path, '$'))
        return -EINVAL;
    name = strrchr(grub_path, '/');
    name = name ? name + 1 : grub_path;
    if (!*name || streq(name, ".") || streq(name, "..") || strchr(name, ')'))
        return -EINVAL;
    *ret = ks_asprintf("boot/%s", name);
    return *ret ? 0 : -ENOMEM;
}

void ks_boot_loads_done(ks_boot_loads *l)
{
    free(l->kernel);
    ks_strv_free(l->initrds);
    *l = (ks_boot_loads){0};
}

int ks_boot_loads_from(const char *linux_path, char *const *initrd_paths, ks_boot_loads *ret)
{
    _cleanup_(ks_boot_loads_done) ks_boot_loads l = {0};
    int r;

    if (linux_path) {
        r = ks_bootfile_root_path(linux_path, &l.kernel);
        if (r == -ENOMEM)
            return r;
    }
    for (char *const *i = initrd_paths; i && *i; i++) {
        char *p = NULL;
        r = ks_bootfile_root_path(*i, &p);
        if (r == -ENOMEM)
            return r;
        if (r >= 0 && ks_strv_contains(l.initrds, p))
            free(p);
        else if (r >= 0 && ks_strv_push(&l.initrds, p) < 0)
            return -ENOMEM;
    }
    *ret = l;
    l = (ks_boot_loads){0};
    return 0;
}

int ks_boot_loads_of_entry(const ks_grub_entry *e, ks_boot_loads *ret)
{
    _cleanup_strv_free_ char **words = NULL, **files = NULL;
    int r;

    assert(e);
    if (e->initrd) {
        r = ks_strv_split(e->initrd, " \t", &words);
        if (r < 0)
            return r;
    }
    for (char **w = words; w && *w; w++)
        if (!ks_startswith(*w, "--") && ks_strv_extend(&files, *w) < 0)
            return -ENOMEM;
    return ks_boot_loads_from(e->linux_path, files, ret);
}

int ks_bootfile_peek(const ks_root *root, const char *path, ks_bootfile_kind kind, char **ret_why,
                     const char **ret_format)
{
    _cleanup_close_ int fd = -EBADF;
    uint8_t head[HEAD_SIZE];
    struct stat st;
    size_t n = 0;
    int r;

    assert(root);
    assert(path);
    fd = ks_root_open_regular(root, path, 0);
    if (fd == -ENOENT)
        return why_err(ret_why, fd, "it does not exist");
    if (fd < 0)
        return why_err(ret_why, fd, "cannot open it: %s", ks_strerror(fd));
    if (fstat(fd, &st) < 0) {
        r = -errno;
        return why_err(ret_why, r, "cannot stat it: %s", strerror(-r));
    }
    r = ks_pread_all(fd, head, sizeof(head), 0, &n);
    if (r < 0)
        return why_err(ret_why, r, "cannot read it: %s", strerror(-r));
    if (kind == KS_BOOTFILE_KERNEL)
        return ks_bootfile_kernel_check(head, n, (uint64_t)st.st_size, ret_why);
    r = ks_bootfile_initrd_check(head, n, (uint64_t)st.st_size, ret_why);
    if (r >= 0 && ret_format)
        *ret_format = ks_bootfile_initrd_format(head, n);
    return r;
}

/* ---- the files on disk ---- */

typedef struct settle {
    const ks_root *root;
    const ks_bootfiles_want *want;
    ks_findings *findings;
    ks_bootfiles_stats stats;
    unsigned problems;
} settle;

/* Whose file it is: the ids of its findings and what to do about them. */
typedef struct role {
    const char *unreadable_id; /* missing, not a regular file, a read error */
    const char *damaged_id;    /* the bytes are wrong */
    const char *remedy;
    bool old; /* a file of the way back */
} role;

static const role trial_kernel = {"boot.file-unreadable", "boot.kernel-damaged", REMEDY_REINSTALL};
static const role trial_initrd = {"boot.file-unreadable", "boot.initrd-damaged", REMEDY_REINSTALL};
static const role trial_modules = {"boot.file-unreadable", "boot.modules-damaged",
                                   REMEDY_REINSTALL};
static const role grub_cfg_role = {"boot.file-unreadable", "boot.grub-cfg-damaged",
                                   REMEDY_UPDATE_GRUB};

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
static int sync_and_open(settle *s, const role *who, const char *path, uint8_t *head,
                         size_t *head_len, uint64_t *size, int *fd_out)
{
    _cleanup_close_ int fd = ks_root_open_regular(s->root, path, 0);
    struct stat st;
    int r;

    if (fd < 0)
        return problem(s, who->unreadable_id, who->remedy, "cannot open '/%s'%s: %s", path,
                       who->old ? ", a file of the way back" : "",
                       fd == -ENOENT ? "it does not exist" : ks_strerror(fd));
    r = sync_fd(s, fd, false);
    if (r < 0)
        return problem(s, "boot.sync-failed", REMEDY_REINSTALL,
                       "cannot write '/%s' to the disk: %s", path, strerror(-r));
    if (who->old)
        s->stats.old_files++;
    /* Clean pages can go now: the read below then comes from the disk, not from memory. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (fstat(fd, &st) < 0)
        return problem(s, who->unreadable_id, who->remedy, "cannot stat '/%s': %m", path);
    *size = (uint64_t)st.st_size;
    r = ks_pread_all(fd, head, HEAD_SIZE, 0, head_len);
    if (r < 0)
        return problem(s, who->unreadable_id, who->remedy, "cannot read '/%s': %s", path,
                       strerror(-r));
    if (fd_out)
        *fd_out = TAKE_FD(fd);
    return 1;
}

typedef int (*check_fn)(const uint8_t *head, size_t head_len, uint64_t file_size, char **ret_why);

static int damaged(settle *s, const role *who, const char *path, const char *reason)
{
    return problem(s, who->damaged_id, who->remedy, "'/%s'%s is damaged: %s", path,
                   who->old ? ", a file of the way back," : "", reason ? reason : "unknown");
}

static int check_file(settle *s, const role *who, const char *path, check_fn check)
{
    _cleanup_free_ char *reason = NULL;
    uint8_t head[HEAD_SIZE];
    size_t n = 0;
    uint64_t size = 0;
    int r;

    r = sync_and_open(s, who, path, head, &n, &size, NULL);
    if (r <= 0)
        return r;
    if (!check || check(head, n, size, &reason) >= 0)
        return 0;
    return damaged(s, who, path, reason);
}

/* An initrd: its magic, then, where the caller gave a reader, every byte decompressed. */
static int check_initrd(settle *s, const role *who, const char *path)
{
    _cleanup_free_ char *reason = NULL;
    _cleanup_close_ int fd = -EBADF;
    uint8_t head[HEAD_SIZE];
    size_t n = 0;
    uint64_t size = 0;
    int r;

    r = sync_and_open(s, who, path, head, &n, &size, &fd);
    if (r <= 0)
        return r;
    if (ks_bootfile_initrd_check(head, n, size, &reason) < 0)
        return damaged(s, who, path, reason);
    if (!s->want->initrd_unpacks)
        return 0;
    r = s->want->initrd_unpacks(fd, &reason);
    if (r == -ENOMEM)
        return r;
    if (r == -EOPNOTSUPP || r == -EPROTONOSUPPORT || r == -EFBIG) {
        s->stats.initrds_magic_only++;
        return 0;
    }
    if (r < 0) {
        _cleanup_free_ char *text =
            ks_asprintf("it does not decompress: %s", reason ? reason : strerror(-r));
        return text ? damaged(s, who, path, text) : -ENOMEM;
    }
    s->stats.initrds_unpacked++;
    return 0;
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
        r = check_file(s, &trial_modules, path,
                       ks_endswith(*n, ".bin") ? ks_bootfile_modindex_check : NULL);
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

/* Adds what e loads to *loads (each file once). */
static int add_loads(ks_boot_loads *loads, const ks_grub_entry *e)
{
    _cleanup_(ks_boot_loads_done) ks_boot_loads l = {0};
    int r = ks_boot_loads_of_entry(e, &l);

    if (r < 0)
        return r;
    if (!loads->kernel)
        loads->kernel = TAKE_PTR(l.kernel);
    for (char **i = l.initrds; i && *i; i++)
        if (!ks_strv_contains(loads->initrds, *i) && ks_strv_extend(&loads->initrds, *i) < 0)
            return -ENOMEM;
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

/*
 * grub.cfg: it parses, the trial entry loads the trial kernel and the way-back entry the old
 * one. *old_loads gets what the way back loads: the way-back entry's files and those of the
 * old kernel's own entry (the one saved_entry names).
 */
static int settle_grub_cfg(settle *s, ks_boot_loads *old_loads)
{
    static const char path[] = "boot/grub/grub.cfg";
    _cleanup_free_ char *text = NULL, *reason = NULL;
    _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;
    _cleanup_close_ int fd = -EBADF;
    const ks_grub_entry *back = NULL;
    uint8_t head[HEAD_SIZE];
    size_t n = 0, len = 0;
    uint64_t size = 0;
    int r;

    r = sync_and_open(s, &grub_cfg_role, path, head, &n, &size, &fd);
    if (r <= 0)
        return r;
    r = ks_read_fd(fd, GRUB_CFG_MAX, &text, &len);
    if (r < 0)
        return problem(s, "boot.file-unreadable", REMEDY_REINSTALL, "cannot read '/%s': %s", path,
                       ks_strerror(r));
    r = parse_cfg(text, len, &cfg, &reason);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return problem(s, "boot.grub-cfg-damaged", REMEDY_UPDATE_GRUB, "'/%s' is damaged: %s", path,
                       reason ? reason : "unknown");
    r = check_entry(cfg, s->want->entry_id, s->want->release, NULL, &reason);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        r = problem(s, "boot.trial-entry-missing", REMEDY_UPDATE_GRUB,
                    "'/%s' does not hold the trial entry kswap is about to arm: %s", path,
                    reason ? reason : "unknown");
        if (r < 0)
            return r;
    }
    if (!s->want->old_release)
        return 0;
    free(reason);
    reason = NULL;
    r = check_entry(cfg, s->want->wayback_id, s->want->old_release, &back, &reason);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        r = problem(s, "boot.way-back-entry-missing", REMEDY_UPDATE_GRUB,
                    "'/%s' does not hold the way back to %s the trial's fallback boots: %s", path,
                    s->want->old_release, reason ? reason : "unknown");
        if (r < 0)
            return r;
    } else {
        r = add_loads(old_loads, back);
        if (r < 0)
            return r;
    }
    {
        ks_grub_entry_path p = {0};
        r = ks_grub_entry_path_find(cfg->entries, cfg->n_entries, s->want->old_release, &p);
        if (r == -ENOMEM)
            return r;
        if (r >= 0)
            r = add_loads(old_loads, p.entry);
        ks_grub_entry_path_done(&p);
        if (r == -ENOMEM)
            return r;
    }
    return 0;
}

static char *old_remedy(const char *release, bool initrd, const char *path)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

    if (!initrd)
        return ks_asprintf("nothing is armed: the way back must be intact first; reinstall the "
                           "old kernel ('apt-get install --reinstall linux-image-%s'), check the "
                           "disk ('dmesg' for I/O errors), then 'kswap apply' again",
                           release);
    if (ks_endswith(name, release))
        return ks_asprintf("nothing is armed: the way back must be intact first; rebuild the "
                           "old kernel's initrd ('update-initramfs -u -k %s'), check the disk "
                           "('dmesg' for I/O errors), then 'kswap apply' again",
                           release);
    return ks_asprintf("nothing is armed: the way back must be intact first; reinstall the "
                       "package that ships /%s ('dpkg -S /%s' names it), then 'kswap apply' again",
                       path, path);
}

/* The way back: the old kernel's kernel and initrds, as the trial's are checked. */
static int settle_old(settle *s, ks_boot_loads *loads)
{
    const char *rel = s->want->old_release;
    int r;

    /* grub.cfg could not name them: the files update-grub would have made the entries of. */
    if (!loads->kernel && !loads->initrds) {
        loads->kernel = ks_asprintf("boot/vmlinuz-%s", rel);
        if (!loads->kernel ||
            ks_strv_push(&loads->initrds, ks_asprintf("boot/initrd.img-%s", rel)) < 0)
            return -ENOMEM;
    }
    if (loads->kernel) {
        _cleanup_free_ char *remedy = old_remedy(rel, false, loads->kernel);
        role who = {"boot.old-kernel-damaged", "boot.old-kernel-damaged", remedy, true};
        if (!remedy)
            return -ENOMEM;
        r = check_file(s, &who, loads->kernel, ks_bootfile_kernel_check);
        if (r < 0)
            return r;
    }
    for (char **i = loads->initrds; i && *i; i++) {
        _cleanup_free_ char *remedy = old_remedy(rel, true, *i);
        role who = {"boot.old-initrd-damaged", "boot.old-initrd-damaged", remedy, true};
        if (!remedy)
            return -ENOMEM;
        r = check_initrd(s, &who, *i);
        if (r < 0)
            return r;
    }
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

int ks_bootfiles_settle(const ks_root *root, const ks_bootfiles_want *want, ks_findings *findings,
                        ks_bootfiles_stats *ret_stats)
{
    _cleanup_(ks_boot_loads_done) ks_boot_loads old_loads = {0};
    _cleanup_free_ char *kernel = NULL, *initrd = NULL;
    settle s = {.root = root, .want = want, .findings = findings};
    int r;

    assert(root);
    assert(want && want->release && want->entry_id);
    assert(!want->old_release || want->wayback_id);
    assert(findings);
    kernel = ks_asprintf("boot/vmlinuz-%s", want->release);
    initrd = ks_asprintf("boot/initrd.img-%s", want->release);
    if (!kernel || !initrd)
        return -ENOMEM;
    r = check_file(&s, &trial_kernel, kernel, ks_bootfile_kernel_check);
    if (r >= 0)
        r = check_initrd(&s, &trial_initrd, initrd);
    if (r >= 0)
        r = settle_modules(&s, want->release);
    if (r >= 0)
        r = settle_grub_cfg(&s, &old_loads);
    if (r >= 0 && want->old_release)
        r = settle_old(&s, &old_loads);
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
