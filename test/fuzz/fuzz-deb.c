/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The whole package reader (ar, decompression, tar, module ELF) on arbitrary bytes. */
#include <stdint.h>
#include <sys/mman.h>

#include "lib/kernel/deb.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *wanted[] = {"tcp_bbr", "nf_tables", "wireguard", NULL};
    _cleanup_close_ int fd = memfd_create("fuzz-deb", MFD_CLOEXEC);
    _cleanup_free_ char *error = NULL;
    ks_modset *set = NULL;
    ks_deb_stats stats;

    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
        return 0;
    if (ks_deb_read_modset_fd(fd, wanted, &set, &stats, &error) == 0) {
        ks_module_report m = {0};
        if (!set || !ks_modset_release(set)[0])
            abort();
        if (ks_modset_judge(set, "nf_tables", &m) == 0)
            ks_module_report_done(&m);
        ks_modset_free(set);
    }
    return 0;
}
