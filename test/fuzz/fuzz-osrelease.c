/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/host/osrelease.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_os_release o = {};

    /* The input is not NUL-terminated: the parser must stay within size bytes. */
    if (ks_os_release_parse((const char *)data, size, &o) == 0) {
        /* Success promises a non-empty ID. */
        if (!o.id || !*o.id)
            abort();
        ks_os_release_done(&o);
    } else if (o.id) {
        abort(); /* failure must leave the output alone */
    }
    return 0;
}
