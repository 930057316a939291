/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc/net/snmp and netstat: any text as either file; the values found are the values parsed. */
#include <stdint.h>

#include "lib/basic/util.h"
#include "lib/host/netstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const keys[][2] = {
        {"Tcp", "OutSegs"},        {"Tcp", "RetransSegs"}, {"Tcp", "MaxConn"},
        {"TcpExt", "TCPTimeouts"}, {"Ip", "Forwarding"},   {"Tcp", ""},
    };
    const char *text = (const char *)data;
    ks_tcp_counters c = {0};
    uint64_t v;
    int r;

    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        r = ks_netstat_get(text, size, keys[i][0], keys[i][1], &v);
        if (r != 0 && r != -ENOENT && r != -EBADMSG && r != -ERANGE)
            abort();
    }
    r = ks_tcp_counters_parse(text, size, text, size, &c);
    if (r == 0) {
        uint64_t out = 0;
        if (ks_netstat_get(text, size, "Tcp", "OutSegs", &out) != 0 || out != c.out_segs)
            abort();
    } else if (r != -EBADMSG) {
        abort();
    }
    return 0;
}
