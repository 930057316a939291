/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grub/cfg.h"
#include "lib/basic/findings.h"
#include "lib/basic/root.h"

/*
 * The files a trial boot of RELEASE loads, and those of its way back (the old kernel OLD),
 * made durable and read back before kswap arms the one-shot (docs/design.md, invariant 2):
 * files kswap does not write itself (dpkg, depmod, update-initramfs and update-grub do) but
 * relies on:
 *   boot/vmlinuz-RELEASE       a bzImage: "HdrS" at 0x202, and at least as long as its setup
 *                              header says ((setup_sects + 1) * 512 + syssize * 16 bytes);
 *   boot/initrd.img-RELEASE    not empty, starting with a cpio (newc) or compression magic the
 *                              kernel's initramfs unpacker knows (lib/decompress.c), and, where
 *                              the caller can tell, decompressing to its end;
 *   lib/modules/RELEASE/modules.*  depmod's indexes (modules.dep must exist, every *.bin
 *                              index starts with libkmod's magic 0xB007F457);
 *   boot/grub/grub.cfg         parses with the GRUB model and still holds a top-level entry
 *                              ENTRY_ID that loads boot/vmlinuz-RELEASE, and one WAYBACK_ID that
 *                              loads boot/vmlinuz-OLD;
 *   the old kernel's files     the kernel and initrds of the way-back entry and of OLD's own
 *                              entry (the one saved_entry names): the same checks as the trial's
 *                              kernel and initrd. A trial that fails comes back through them.
 * Each is fsynced (fsync on a read-only descriptor writes back what the writer left dirty),
 * with its directory; the rest of the module tree (thousands of files dpkg unpacked, each
 * fsynced by dpkg itself, but not their directories) by one syncfs of the file system that
 * holds lib/modules/RELEASE. A file system whose fsync answers EINVAL (no fsync support) gets
 * a syncfs instead. Then the page cache of each file is dropped (POSIX_FADV_DONTNEED) so that
 * the read back comes from the disk where the kernel can do that. Last, the journal of the
 * file system holding boot/grub is written home (ks_fs_checkpoint_path): GRUB reads no journal,
 * and must find these files and this grub.cfg before next_entry names the trial.
 */

/* The checks on bytes, for tests: 0 when fine, -EBADMSG with *ret_why (for people) otherwise.
 * head is the start of the file (up to 1 KiB suffices), file_size its size. */
int ks_bootfile_kernel_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                             char **ret_why);
int ks_bootfile_initrd_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                             char **ret_why);
/* A depmod .bin index (modules.dep.bin, modules.alias.bin, ...). */
int ks_bootfile_modindex_check(const uint8_t *head, size_t head_len, uint64_t file_size,
                               char **ret_why);
/*
 * grub.cfg's text: -EBADMSG when it does not parse (or holds NUL bytes: a torn write),
 * -ENOENT when it parses but has no top-level entry entry_id that loads vmlinuz-release.
 */
int ks_bootfile_grub_cfg_check(const char *text, size_t len, const char *entry_id,
                               const char *release, char **ret_why);

/* The name of the initramfs format whose magic starts head ("zstd", "cpio (newc)", ...), or
 * NULL. */
const char *ks_bootfile_initrd_format(const uint8_t *head, size_t head_len);

/*
 * Where a file GRUB loads is inside the root. GRUB's paths are relative to the file system of
 * /boot: 10_linux writes /boot/NAME when /boot is a directory of /, and /NAME when /boot is a
 * partition of its own (a device prefix "(hd0,1)" may come first). Either way the file is
 * boot/NAME. -EINVAL for a path kswap cannot place: a variable left in it, no file name, "..".
 */
int ks_bootfile_root_path(const char *grub_path, char **ret);

/* The files one boot loads, as paths inside the root. */
typedef struct ks_boot_loads {
    char *kernel;   /* "boot/vmlinuz-6.8.0-48-generic"; NULL: not one kswap can place */
    char **initrds; /* in the order GRUB loads them; NULL: none */
} ks_boot_loads;

void ks_boot_loads_done(ks_boot_loads *l);
/* From a linux command's path and an initrd command's files (GRUB's paths); -ENOMEM. */
int ks_boot_loads_from(const char *linux_path, char *const *initrd_paths, ks_boot_loads *ret);
/* From a menu entry's body as written (ks_grub_entry: its first linux and initrd lines). */
int ks_boot_loads_of_entry(const ks_grub_entry *e, ks_boot_loads *ret);

typedef enum ks_bootfile_kind {
    KS_BOOTFILE_KERNEL,
    KS_BOOTFILE_INITRD,
} ks_bootfile_kind;

/*
 * A cheap look at one file inside the root, without syncing: its size and first KiB, judged
 * by the checks above (a stat and one read: what plan and the last look before a reboot can
 * afford). 0: fine; -EBADMSG: damaged; -ENOENT: missing; another negative errno: cannot be
 * read (not a regular file, an I/O error). *ret_why says what for people on every failure but
 * -ENOMEM; ret_format (may be NULL) gets the initrd's format on success.
 */
int ks_bootfile_peek(const ks_root *root, const char *path, ks_bootfile_kind kind, char **ret_why,
                     const char **ret_format);

typedef struct ks_bootfiles_stats {
    unsigned files_synced;       /* fsync()ed one by one */
    unsigned dirs_synced;        /* their directories */
    unsigned syncfs_calls;       /* the module tree, and files whose fsync is not supported */
    unsigned syncfs_instead;     /* of those: files whose file system refused fsync (EINVAL) */
    unsigned old_files;          /* of the files: the old kernel's (the way back) */
    unsigned initrds_unpacked;   /* initrds read to their end by initrd_unpacks */
    unsigned initrds_magic_only; /* initrds it could not judge (a compression it does not read) */
    unsigned checkpoints;        /* journals written home for GRUB (ks_fs_checkpoint) */
} ks_bootfiles_stats;

/*
 * Reads a whole initrd from fd (at any offset; the function reads from 0): 0 when it
 * decompresses to its end; -EOPNOTSUPP, -EPROTONOSUPPORT or -EFBIG when it cannot tell (a
 * compression it does not decode in this process, more than it will decompress); another
 * negative errno when damaged, with *ret_why. lib/kernel/initrd.h has one; the host layer takes
 * it from its caller.
 */
typedef int (*ks_initrd_unpacks_fn)(int fd, char **ret_why);

typedef struct ks_bootfiles_want {
    const char *release;                 /* the trial kernel */
    const char *entry_id;                /* its top-level GRUB entry (kswap-trial) */
    const char *old_release;             /* the old kernel, the way back; NULL: not checked */
    const char *wayback_id;              /* its top-level GRUB entry (kswap-way-back) */
    ks_initrd_unpacks_fn initrd_unpacks; /* NULL: the magic only */
} ks_bootfiles_want;

/*
 * Syncs and reads back the trial's boot files and the old kernel's (see above). Every problem
 * becomes a blocking finding naming the file and what is wrong:
 *   boot.file-unreadable    a file of the trial: missing, not a regular file, or a read error;
 *   boot.sync-failed        fsync/syncfs failed (an I/O error: the disk did not take it);
 *   boot.kernel-damaged     the trial's kernel: not a bzImage, or shorter than its header says;
 *   boot.initrd-damaged     the trial's initrd: empty, no initramfs magic at its start, or it
 *                           does not decompress;
 *   boot.modules-damaged    a depmod .bin index without its magic;
 *   boot.grub-cfg-damaged   grub.cfg does not parse;
 *   boot.trial-entry-missing grub.cfg has no entry entry_id loading the release's kernel;
 *   boot.way-back-entry-missing grub.cfg has no entry wayback_id loading the old kernel;
 *   boot.old-kernel-damaged the old kernel's kernel: missing, unreadable or damaged;
 *   boot.old-initrd-damaged an initrd of the old kernel: missing, unreadable or damaged.
 * Returns the number of problems (0: all good), or -ENOMEM. stats may be NULL.
 */
int ks_bootfiles_settle(const ks_root *root, const ks_bootfiles_want *want, ks_findings *findings,
                        ks_bootfiles_stats *ret_stats);

/*
 * fsyncs boot/grub/grub.cfg and its directory after update-grub rewrote it (grub-mkconfig
 * renames grub.cfg.new over it and syncs nothing), and writes the journal home for GRUB: pin
 * and rollback, before the grubenv write that depends on it. 0, or negative errno with
 * *ret_what naming the path that failed.
 */
int ks_grub_cfg_sync(const ks_root *root, const char **ret_what);
