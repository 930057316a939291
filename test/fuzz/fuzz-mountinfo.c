/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "lib/host/bootfs.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_mountinfo mi = {};
    const ks_mount *m;

    if (ks_mountinfo_parse((const char *)data, size, &mi) < 0)
        return 0;
    if (mi.n == 0)
        abort();
    for (size_t i = 0; i < mi.n; i++)
        if (!mi.v[i].root || !mi.v[i].mount_point || !mi.v[i].fs_type || !mi.v[i].source ||
            mi.v[i].mount_point[0] != '/')
            abort();
    m = ks_mountinfo_find(&mi, "/boot/grub");
    /* Whatever holds /boot/grub is "/" or a prefix of it. */
    if (m && !streq(m->mount_point, "/") &&
        strncmp("/boot/grub", m->mount_point, strlen(m->mount_point)) != 0 &&
        !ks_endswith(m->mount_point, "/"))
        abort();
    ks_mountinfo_done(&mi);
    return 0;
}
