/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ELF .modinfo reader and the modules.builtin(.modinfo) parsers on arbitrary bytes. */
#include <stdint.h>

#include "lib/kernel/modinfo.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int builtin_cb(void *userdata, const char *module)
{
    if (!*module || strchr(module, '-'))
        abort();
    return 0;
}

static int info_cb(void *userdata, const char *module, const char *key, const char *value)
{
    if (!*module || strchr(module, '-') || !key || !value)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *info;
    size_t len;

    if (ks_elf_find_modinfo(data, size, &info, &len) == 0) {
        char *v = NULL;
        if (info < (const char *)data || (size_t)(info - (const char *)data) + len > size)
            abort();
        if (ks_modinfo_get(info, len, "depends", &v) == 0)
            free(v);
    }
    ks_builtin_modinfo_foreach((const char *)data, size, info_cb, NULL);
    ks_builtin_foreach((const char *)data, size, builtin_cb, NULL);
    return 0;
}
