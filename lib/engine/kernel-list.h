/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/root.h"
#include "lib/engine/bootctl.h"
#include "lib/host/kernels.h"

/*
 * kswap list: the kernels installed under the root (boot/vmlinuz-* and lib/modules, found by
 * lib/host/kernels.h as plan finds them), each with its GRUB entry (full id and title path,
 * lib/engine/bootctl.h) and what it is to GRUB and to kswap: GRUB's default (the first boot of
 * the forecast that is not a one-shot), the running kernel (proc/sys/kernel/osrelease), the
 * kernel on trial, and the kernels kswap relies on (the old kernel of a swap in progress, the
 * pinned kernel).
 */
typedef enum ks_relied_on {
    KS_RELIED_NONE,
    KS_RELIED_OLD,    /* the proven kernel of a swap in progress: every boot but the trial */
    KS_RELIED_PINNED, /* pinned by kswap after its trial passed */
} ks_relied_on;

typedef struct ks_listed_kernel {
    char *release;
    char *id_path;    /* NULL: GRUB has no entry for it (grub.cfg not regenerated) */
    char *title_path; /* NULL likewise */
    bool has_modules, has_initrd;
    bool is_default, is_running, on_trial;
    ks_relied_on relied_on;
} ks_listed_kernel;

typedef struct ks_kernel_list {
    ks_listed_kernel *v; /* newest first */
    size_t n;
    char *running;        /* NULL when it cannot be read */
    char *default_kernel; /* NULL when GRUB's default loads no kernel or GRUB cannot be read */
    char *grub_error;     /* why GRUB could not be read (then no id paths, no default) */
    char *journal_error;  /* why the state journal could not be read (then no trial, no old) */
} ks_kernel_list;

/* Never changes anything. Negative errno only when the kernels cannot be listed at all. */
int ks_kernel_list_run(const ks_root *root, ks_kernel_list *ret);
void ks_kernel_list_done(ks_kernel_list *l);
const char *ks_relied_on_to_string(ks_relied_on r); /* NULL for KS_RELIED_NONE */

/* The release GRUB's default starts (the first forecast boot that is not a one-shot); NULL
 * when none. */
int ks_boot_default_kernel(const ks_boot *b, char **ret);
