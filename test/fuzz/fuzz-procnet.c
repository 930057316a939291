/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "checks/ifaddr.h"
#include "checks/procnet.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int v6 = 0; v6 < 2; v6++) {
        ks_socks s = {0};

        if (ks_procnet_parse((const char *)data, size, v6, &s) < 0) {
            if (s.v || s.n)
                abort();
            continue;
        }
        if (ks_socks_count_state(&s, KS_TCP_ESTABLISHED) > s.n)
            abort();
        for (size_t i = 0; i < s.n; i++)
            (void)ks_sock_is_wildcard(&s.v[i], v6);
        (void)ks_socks_listens(&s, KS_SOCK_TCP, 443);
        (void)ks_socks_count_inbound(&s, v6, 443);
        ks_socks_done(&s);
    }
    /* The same /proc/net folder's if_inet6 and route (checks/ifaddr.h). */
    for (int v6 = 0; v6 < 2; v6++) {
        ks_ifaddrs a = {0};
        int r = v6 ? ks_ifaddr_parse_inet6((const char *)data, size, &a)
                   : ks_ifaddr_parse_route4((const char *)data, size, &a);
        if (r < 0) {
            if (a.v || a.n)
                abort();
            continue;
        }
        for (size_t i = 0; i < a.n; i++)
            if (!a.v[i].ifname[0] || !strchr(a.v[i].prefix, '/'))
                abort();
            else
                (void)ks_ifaddr_is_stable(&a.v[i]);
        ks_ifaddrs_done(&a);
    }
    return 0;
}
