/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/host/cpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_cpuinfo c = {};
    char *s;
    int level;

    /* The input is not NUL-terminated: the parser must stay within size bytes. */
    if (ks_cpuinfo_parse((const char *)data, size, &c) == 0) {
        if (c.level < 0 || c.level > 4 || c.n_processors == 0)
            abort();
        ks_cpuinfo_done(&c);
    } else if (c.vendor_id || c.model_name || c.n_processors) {
        abort(); /* failure must leave the output alone */
    }

    /* The same bytes as one flags list. */
    s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    level = ks_cpu_level_from_flags(s);
    if (level < 0 || level > 4)
        abort();
    free(s);
    return 0;
}
