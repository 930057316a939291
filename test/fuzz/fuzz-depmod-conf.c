/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kernel/depmodconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_depmod_conf *c = ks_depmod_conf_new();
    char *err = NULL, *d;
    int r;

    if (!c)
        return 0;
    /* The input is not NUL-terminated: the parser must stay within size bytes. */
    r = ks_depmod_conf_parse(c, "fuzz.conf", (const char *)data, size, &err);
    if (r < 0 && !err && r != -ENOMEM)
        abort(); /* every refusal says why */
    d = ks_depmod_conf_describe(c, "6.8.0-41-generic");
    if (!d)
        abort();
    /* Ranking must terminate and agree with itself for one file against itself. */
    (void)ks_depmod_conf_keeps_old(c, "6.8.0-41-generic", "kernel/a/x.ko", "updates/x.ko.zst");
    (void)ks_depmod_conf_keeps_old(c, "6.8.0-41-generic", "/opt/m/x.ko", "extra/x.ko");
    (void)ks_depmod_conf_rank(c, "6.8.0-41-generic", "ubuntu/x.ko");
    (void)ks_depmod_conf_excludes_path(c, "kernel/build/x.ko");
    free(d);
    free(err);
    ks_depmod_conf_free(c);
    return 0;
}
