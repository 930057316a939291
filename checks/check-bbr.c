/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bbr-version (the [accept] key bbr_version): sys/module/tcp_bbr/version of the running
 * kernel is the value (BBRv1 declares none). */
#include "checks/check.h"
#include "lib/basic/util.h"

int ks_check_bbr_version(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *v = NULL;
    int r;

    r = ks_root_read_line(c->root, "sys/module/tcp_bbr/version", &v);
    if (r < 0 && r != -ENOENT)
        return r;
    if (v)
        ks_strstrip(v);
    free(chk->detail);
    if (!v)
        chk->detail =
            ks_asprintf("tcp_bbr has no version (not loaded, or BBRv1); wanted %s", chk->arg);
    else
        chk->detail =
            ks_asprintf("tcp_bbr version %s%s%s", v, streq(v, chk->arg) ? "" : ", wanted ",
                        streq(v, chk->arg) ? "" : chk->arg);
    if (!chk->detail)
        return -ENOMEM;
    return v && streq(v, chk->arg);
}

static const ks_config_key keys[] = {
    KS_CONFIG_UINT("accept", "bbr_version", 1, 255, 0),
    {0},
};

const ks_check_kind ks_check_kind_bbr_version = {
    .name = "bbr-version",
    .run = ks_check_bbr_version,
    .keys = keys,
    .item_key = "bbr_version",
};
