/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/host/bootfiles.h"
#include "lib/host/dpkg.h"
#include "lib/host/dpkglock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What apply reads back before arming (and where grub.cfg's paths are), and what it reads out
 * of apt's output. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *why = NULL, *text;

    for (uint64_t file_size = size; file_size <= (uint64_t)size * 2 + 1; file_size += size + 1) {
        (void)ks_bootfile_kernel_check(data, size, file_size, &why);
        free(why);
        why = NULL;
        (void)ks_bootfile_initrd_check(data, size, file_size, &why);
        free(why);
        why = NULL;
        (void)ks_bootfile_modindex_check(data, size, file_size, &why);
        free(why);
        why = NULL;
    }
    (void)ks_bootfile_grub_cfg_check((const char *)data, size, "kswap-trial",
                                     "6.18.45-x64v3-xanmod1", &why);
    free(why);
    text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    free(ks_apt_lock_error_line(text));
    {
        /* a path GRUB loads, as grub.cfg wrote it, placed inside the root */
        char *path = NULL;
        if (ks_bootfile_root_path(text, &path) >= 0 &&
            (strncmp(path, "boot/", 5) != 0 || !path[5] || strchr(path + 5, '/') ||
             !strcmp(path + 5, ".") || !strcmp(path + 5, "..")))
            abort();
        free(path);
    }
    free(ks_dpkg_error_from_output(text));
    free(text);
    return 0;
}
