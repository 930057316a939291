/* SPDX-License-Identifier: GPL-2.0-or-later */
/* established_min: users came back, at least N established TCP sockets (proc/net/tcp, tcp6). */
#include "checks/check.h"
#include "lib/basic/util.h"
#include "checks/procnet.h"

int ks_check_established(const ks_check_ctx *c, ks_check *chk)
{
    static const ks_sock_proto protos[] = {KS_SOCK_TCP, KS_SOCK_TCP6};
    unsigned long long min;
    size_t n = 0;

    if (ks_safe_atou64(chk->arg, &min) < 0)
        return -EINVAL;
    for (size_t i = 0; i < ARRAY_SIZE(protos); i++) {
        ks_socks s = {0};
        int r = ks_procnet_read(c->root, protos[i], &s);
        if (r == -ENOENT)
            continue;
        if (r < 0)
            return r;
        n += ks_socks_count_state(&s, KS_TCP_ESTABLISHED);
        ks_socks_done(&s);
    }
    free(chk->detail);
    chk->detail = ks_asprintf("%zu established TCP connections, wanted at least %llu", n, min);
    return chk->detail ? n >= min : -ENOMEM;
}
