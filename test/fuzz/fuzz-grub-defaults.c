/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "grub/defaults.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_grub_defaults d = {};

    /* Twice: the second pass expands what the first assigned. */
    if (ks_grub_defaults_parse(&d, (const char *)data, size, "a") < 0 ||
        ks_grub_defaults_parse(&d, (const char *)data, size, "b") < 0) {
        ks_grub_defaults_done(&d);
        return 0;
    }
    for (size_t i = 0; i < d.n; i++) {
        /* Every key is a shell name, set last by the second pass, and found by name. */
        if (!d.keys[i] || !d.values[i] || !streq(d.files[i], "b") ||
            ks_grub_defaults_get(&d, d.keys[i]) != d.values[i])
            abort();
        for (const char *p = d.keys[i]; *p; p++)
            if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (p != d.keys[i] && *p >= '0' && *p <= '9')))
                abort();
    }
    ks_grub_defaults_done(&d);
    return 0;
}
