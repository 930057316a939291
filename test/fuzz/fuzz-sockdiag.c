/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sock_diag answer parser: any bytes; a refusal keeps nothing, what parses is printable. */
#include <stdint.h>

#include "lib/basic/util.h"
#include "lib/host/tcpdiag.h"
#include "lib/host/tcpsample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_tcp_conns c = {0};
    ks_tcp_sample s = {0};
    int r = ks_sockdiag_parse(data, size, &c);

    if (r < 0 && c.n != 0)
        abort(); /* half a list is never kept */
    for (size_t i = 0; i < c.n; i++) {
        char *l = ks_tcp_endpoint_format(c.v[i].family, c.v[i].local, c.v[i].local_port);
        json_object *o = ks_tcp_conn_to_json(&c.v[i]);
        double ratio;

        if (c.v[i].family != AF_INET && c.v[i].family != AF_INET6)
            abort();
        if (c.v[i].cc[0] && !ks_tcp_cc_name_is_valid(c.v[i].cc))
            abort();
        if (!l || !o)
            abort();
        if (ks_tcp_conn_retrans_ratio(&c.v[i], &ratio) && ratio < 0)
            abort();
        free(l);
        json_object_put(o);
    }
    if (ks_tcp_sample_summarize(&c, &s) < 0 || s.connections > c.n)
        abort();
    ks_tcp_sample_done(&s);
    ks_tcp_conns_done(&c);
    return 0;
}
