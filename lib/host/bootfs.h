/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/basic/root.h"

/* One line of /proc/self/mountinfo. */
typedef struct ks_mount {
    unsigned major, minor;
    char *root;        /* the mount's root inside its filesystem */
    char *mount_point; /* unescaped (\040 etc.) */
    char *fs_type;
    char *source; /* e.g. "/dev/vda1" */
} ks_mount;

typedef struct ks_mountinfo {
    ks_mount *v;
    size_t n;
} ks_mountinfo;

/* Parses mountinfo text; lines that do not parse are skipped. -EBADMSG when none parses. */
int ks_mountinfo_parse(const char *text, size_t len, ks_mountinfo *ret);
/* The root's proc/self/mountinfo, read (at most 8 MiB) and parsed. */
int ks_mountinfo_read(const ks_root *root, ks_mountinfo *ret);
void ks_mountinfo_done(ks_mountinfo *m);
/* The mount that holds path: the longest mount point that is a prefix of it (last wins). */
const ks_mount *ks_mountinfo_find(const ks_mountinfo *m, const char *path);

/* The filesystem that holds boot/grub and whether GRUB can write its environment block. */
typedef struct ks_bootfs {
    char *mount_point; /* "/boot" or "/" */
    char *source;      /* device as named in mountinfo */
    char *fs_type;     /* from libblkid when the device can be probed, else mountinfo */
    char *uuid;        /* from libblkid, may be NULL */
    char **stack;      /* device stack, outermost first: "lvm", "crypt", "md", "partition", "disk"
                        * ("dm" for other device-mapper targets, "unknown" when nothing is known) */
    bool stack_known;  /* read from sys/dev/block/MAJ:MIN; false: guessed from the device name */
    bool env_writable; /* GRUB's save_env works at boot */
    char *unwritable_reason; /* why not, for people; NULL when writable */
    uint64_t free_bytes;     /* statvfs of boot/ inside the root */
} ks_bootfs;

int ks_bootfs_probe(const ks_root *root, ks_bootfs *ret);
void ks_bootfs_done(ks_bootfs *b);
