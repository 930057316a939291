/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/basic/findings.h"
#include "lib/basic/root.h"

/*
 * The files a trial boot of RELEASE loads, made durable and read back before kswap arms the
 * one-shot (docs/design.md, invariant 2): files kswap does not write itself (dpkg, depmod,
 * update-initramfs and update-grub do) but relies on:
 *   boot/vmlinuz-RELEASE       a bzImage: "HdrS" at 0x202, and at least as long as its setup
 *                              header says ((setup_sects + 1) * 512 + syssize * 16 bytes);
 *   boot/initrd.img-RELEASE    not empty, starting with a cpio (newc) or compression magic the
 *                              kernel's initramfs unpacker knows (lib/decompress.c);
 *   lib/modules/RELEASE/modules.*  depmod's indexes (modules.dep must exist, every *.bin
 *                              index starts with libkmod's magic 0xB007F457);
 *   boot/grub/grub.cfg         parses with the GRUB model and still holds a top-level entry
 *                              ENTRY_ID that loads boot/vmlinuz-RELEASE.
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

typedef struct ks_bootfiles_stats {
    unsigned files_synced;   /* fsync()ed one by one */
    unsigned dirs_synced;    /* their directories */
    unsigned syncfs_calls;   /* the module tree, and files whose fsync is not supported */
    unsigned syncfs_instead; /* of those: files whose file system refused fsync (EINVAL) */
    unsigned checkpoints;    /* journals written home for GRUB (ks_fs_checkpoint) */
} ks_bootfiles_stats;

/*
 * Syncs and reads back the trial's boot files (see above). Every problem becomes a blocking
 * finding naming the file and what is wrong:
 *   boot.file-unreadable    missing, not a regular file, or a read error;
 *   boot.sync-failed        fsync/syncfs failed (an I/O error: the disk did not take it);
 *   boot.kernel-damaged     not a bzImage, or shorter than its header says;
 *   boot.initrd-damaged     empty, or no initramfs magic at its start;
 *   boot.modules-damaged    a depmod .bin index without its magic;
 *   boot.grub-cfg-damaged   grub.cfg does not parse;
 *   boot.trial-entry-missing grub.cfg has no entry entry_id loading the release's kernel.
 * Returns the number of problems (0: all good), or -ENOMEM. stats may be NULL.
 */
int ks_bootfiles_settle(const ks_root *root, const char *release, const char *entry_id,
                        ks_findings *findings, ks_bootfiles_stats *ret_stats);

/*
 * fsyncs boot/grub/grub.cfg and its directory after update-grub rewrote it (grub-mkconfig
 * renames grub.cfg.new over it and syncs nothing), and writes the journal home for GRUB: pin
 * and rollback, before the grubenv write that depends on it. 0, or negative errno with
 * *ret_what naming the path that failed.
 */
int ks_grub_cfg_sync(const ks_root *root, const char **ret_what);
