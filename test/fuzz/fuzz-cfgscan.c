/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "grub/cfgscan.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_grub_cfg_facts f = {};

    if (ks_grub_cfg_scan((const char *)data, size, &f) < 0)
        return 0;
    if (f.lacks_write_support != (f.lacks_write_reason != NULL))
        abort();
    ks_grub_cfg_facts_done(&f);
    return 0;
}
