/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc/net/snmp and proc/net/netstat: the node's TCP counters (lib/host/netstat.h). */
#include <assert.h>

#include "lib/basic/util.h"
#include "lib/host/netstat.h"

/* Files of a few KiB; more is not a proc file. */
#define NETSTAT_MAX (1u << 20)

/* The next white-space separated token of line [*pos, n): its start and length; false at end. */
static bool next_token(const char *line, size_t n, size_t *pos, const char **tok, size_t *tlen)
{
    size_t i = *pos, start;

    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    if (i >= n)
        return false;
    start = i;
    while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
        i++;
    *tok = line + start;
    *tlen = i - start;
    *pos = i;
    return true;
}

/* A value token: an optional '-' and 1 to 20 digits. *neg for the sign. */
static bool parse_value(const char *tok, size_t n, uint64_t *ret, bool *neg)
{
    char buf[24];
    unsigned long long v;

    *neg = n > 0 && tok[0] == '-';
    if (*neg)
        tok++, n--;
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, tok, n);
    buf[n] = '\0';
    if (ks_safe_atou64(buf, &v) < 0)
        return false;
    *ret = v;
    return true;
}

/* The "Name:" prefix of a line: its length with the colon, 0 when the line has none. */
static size_t section_len(const char *line, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (line[i] == ':')
            return i > 0 ? i + 1 : 0;
        if (line[i] == ' ' || line[i] == '\t')
            return 0;
    }
    return 0;
}

/* One pair of lines: whether it is well formed, and key's value there when section is it. */
static int check_pair(const char *keys, size_t kn, const char *vals, size_t vn, size_t plen,
                      bool wanted, const char *key, uint64_t *ret, bool *found)
{
    size_t kp = plen, vp = plen, klen, vlen;
    const char *k, *v;

    if (vn < plen || memcmp(keys, vals, plen) != 0)
        return -EBADMSG; /* the values line is of another section */
    for (;;) {
        bool kt = next_token(keys, kn, &kp, &k, &klen), vt = next_token(vals, vn, &vp, &v, &vlen);
        uint64_t n;
        bool neg;

        if (kt != vt)
            return -EBADMSG; /* more keys than values, or the other way round */
        if (!kt)
            return 0;
        if (!parse_value(v, vlen, &n, &neg))
            return -EBADMSG;
        if (wanted && !*found && klen == strlen(key) && memcmp(k, key, klen) == 0) {
            *found = true;
            if (neg)
                return -ERANGE;
            *ret = n;
        }
    }
}

int ks_netstat_get(const char *text, size_t len, const char *section, const char *key,
                   uint64_t *ret)
{
    const char *keys = NULL, *line;
    size_t pos = 0, n, kn = 0, klen = 0;
    bool found = false, seen = false;
    uint64_t value = 0;
    int r;

    assert(text || len == 0);
    assert(section);
    assert(key);
    while (ks_next_line(text, len, &pos, &line, &n)) {
        size_t plen = section_len(line, n);
        bool wanted;

        if (n == 0 || (n == 1 && line[0] == '\r'))
            continue;
        if (plen == 0)
            return -EBADMSG;
        if (!keys) {
            keys = line, kn = n, klen = plen;
            continue;
        }
        wanted = klen == strlen(section) + 1 && memcmp(keys, section, klen - 1) == 0;
        r = check_pair(keys, kn, line, n, klen, wanted, key, &value, &found);
        if (r < 0)
            return r;
        seen = seen || wanted;
        keys = NULL;
    }
    if (keys)
        return -EBADMSG; /* a keys line without its values */
    if (!seen || !found)
        return -ENOENT;
    *ret = value;
    return 0;
}

int ks_tcp_counters_parse(const char *snmp, size_t snmp_len, const char *netstat,
                          size_t netstat_len, ks_tcp_counters *ret)
{
    ks_tcp_counters c = {0};
    int r;

    assert(ret);
    if ((r = ks_netstat_get(snmp, snmp_len, "Tcp", "OutSegs", &c.out_segs)) < 0 ||
        (r = ks_netstat_get(snmp, snmp_len, "Tcp", "RetransSegs", &c.retrans_segs)) < 0 ||
        (r = ks_netstat_get(snmp, snmp_len, "Tcp", "InSegs", &c.in_segs)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    if (netstat) {
        r = ks_netstat_get(netstat, netstat_len, "TcpExt", "TCPTimeouts", &c.timeouts);
        if (r >= 0)
            r = ks_netstat_get(netstat, netstat_len, "TcpExt", "TCPLostRetransmit",
                               &c.lost_retransmit);
        if (r < 0 && r != -ENOENT)
            return r == -ENOMEM ? r : -EBADMSG;
        c.has_ext = r >= 0;
        if (!c.has_ext)
            c.timeouts = c.lost_retransmit = 0;
    }
    *ret = c;
    return 0;
}

int ks_tcp_counters_read(const ks_root *root, ks_tcp_counters *ret)
{
    _cleanup_free_ char *snmp = NULL, *netstat = NULL;
    size_t slen = 0, nlen = 0;
    int r;

    assert(root);
    r = ks_root_read_file(root, "proc/net/snmp", NETSTAT_MAX, &snmp, &slen);
    if (r < 0)
        return r;
    r = ks_root_read_file(root, "proc/net/netstat", NETSTAT_MAX, &netstat, &nlen);
    if (r < 0 && r != -ENOENT)
        return r;
    return ks_tcp_counters_parse(snmp, slen, netstat, nlen, ret);
}
