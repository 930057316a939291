/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/root.h"

typedef struct ks_secureboot {
    bool efi;                 /* sys/firmware/efi exists: UEFI boot, else BIOS */
    bool enabled;             /* SecureBoot data 1 and SetupMode 0 */
    bool shim_validation_off; /* MokSBStateRT present */
} ks_secureboot;

int ks_secureboot_read(const ks_root *root, ks_secureboot *ret);
