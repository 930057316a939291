/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/host/dpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool r;
    ks_dpkg_status_has((const char *)data, size, "linux-image-6.8.0-48-generic", &r);
    ks_dpkg_status_has((const char *)data, size, "", &r);
    return 0;
}
