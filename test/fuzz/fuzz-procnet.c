/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

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
        ks_socks_done(&s);
    }
    return 0;
}
