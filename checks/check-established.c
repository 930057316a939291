/* SPDX-License-Identifier: GPL-2.0-or-later */
/* established_min: users came back, at least N established TCP sockets (proc/net/tcp, tcp6). */
#include "checks/check.h"
#include "lib/basic/util.h"
#include "checks/procnet.h"

int ks_check_established(const ks_check_ctx *c, ks_check *chk)
{
    unsigned long long min;
    ks_socks tcp[2];
    size_t n;
    int r;

    if (ks_safe_atou64(chk->arg, &min) < 0)
        return -EINVAL;
    r = ks_procnet_read_tcp(c->root, tcp);
    if (r < 0)
        return r;
    n = ks_socks_count_state(&tcp[0], KS_TCP_ESTABLISHED) +
        ks_socks_count_state(&tcp[1], KS_TCP_ESTABLISHED);
    ks_socks_done(&tcp[0]);
    ks_socks_done(&tcp[1]);
    free(chk->detail);
    chk->detail = ks_asprintf("%zu established TCP connections, wanted at least %llu", n, min);
    return chk->detail ? n >= min : -ENOMEM;
}
