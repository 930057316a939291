/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/basic/root.h"

typedef struct ks_kernel {
    char *release;
    bool has_modules; /* lib/modules/RELEASE exists */
    bool has_initrd;  /* boot/initrd.img-RELEASE exists */
    uint64_t vmlinuz_size, initrd_size;
} ks_kernel;

typedef struct ks_kernels {
    ks_kernel *v; /* sorted newest first (dpkg version order of the release) */
    size_t n;
} ks_kernels;

/* Kernels with boot/vmlinuz-RELEASE. */
int ks_kernels_list(const ks_root *root, ks_kernels *ret);
void ks_kernels_done(ks_kernels *k);
const ks_kernel *ks_kernels_find(const ks_kernels *k, const char *release);
/* proc/sys/kernel/osrelease (uname -r under --root). */
int ks_running_kernel(const ks_root *root, char **ret);
/* Whether module is a loadable module of the running kernel (not built in). */
int ks_kernel_module_kind(const ks_root *root, const char *release, const char *module,
                          bool *ret_builtin, bool *ret_module);
/* Compares two releases like dpkg --compare-versions. */
int ks_release_compare(const char *a, const char *b);
