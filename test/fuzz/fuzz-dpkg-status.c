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
    {
        ks_dpkg_unfinished_list l = {0};
        if (ks_dpkg_status_unfinished((const char *)data, size, &l) == 0)
            for (size_t i = 0; i < l.n; i++)
                (void)ks_dpkg_unfinished_is_configurable(&l.v[i]);
        ks_dpkg_unfinished_list_done(&l);
    }
    return 0;
}
