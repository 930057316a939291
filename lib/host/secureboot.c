/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/host/secureboot.h"
#include "lib/basic/util.h"

#define EFIVARS "sys/firmware/efi/efivars/"
#define GLOBAL_GUID "8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define SHIM_GUID "605dab50-e046-4300-abb6-3dd810dd8b23"

/*
 * An efivarfs file is 4 bytes of attributes, then the data. Returns the first data byte,
 * -ENOENT when the variable does not exist, -EBADMSG when it holds no data.
 */
static int read_u8_var(const ks_root *root, const char *name)
{
    _cleanup_free_ char *buf = NULL;
    size_t len;
    int r;

    r = ks_root_read_file(root, name, 4096, &buf, &len);
    if (r < 0)
        return r;
    if (len < 5)
        return -EBADMSG;
    return (unsigned char)buf[4];
}

int ks_secureboot_read(const ks_root *root, ks_secureboot *ret)
{
    ks_secureboot sb = {};
    int secure, setup;

    sb.efi = ks_root_exists(root, "sys/firmware/efi");
    if (sb.efi) {
        secure = read_u8_var(root, EFIVARS "SecureBoot-" GLOBAL_GUID);
        setup = read_u8_var(root, EFIVARS "SetupMode-" GLOBAL_GUID);
        /* SetupMode missing counts as user mode: the firmware enforces what SecureBoot says. */
        sb.enabled = secure == 1 && (setup == 0 || setup == -ENOENT);
        sb.shim_validation_off = ks_root_exists(root, EFIVARS "MokSBStateRT-" SHIM_GUID);
    }
    *ret = sb;
    return 0;
}
