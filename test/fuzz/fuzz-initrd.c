/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The initramfs reader (plain cpio segments, then libarchive) on arbitrary bytes. */
#include <stdint.h>
#include <sys/mman.h>

#include "lib/kernel/initrd.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    _cleanup_close_ int fd = memfd_create("fuzz-initrd", MFD_CLOEXEC);
    _cleanup_free_ char *error = NULL;
    _cleanup_strv_free_ char **names = NULL;

    if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
        return 0;
    ks_initrd_list_modules_fd(fd, &names, &error);
    return 0;
}
