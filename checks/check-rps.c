/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rps: Receive Packet Steering as it runs ("rps:IF:QUEUE:CPUS:FLOWS"): the receive queue QUEUE
 * (rx-0) of IF steers to the CPU mask CPUS (sys/class/net/IF/queues/QUEUE/rps_cpus, hex) with
 * FLOWS entries of its flow table (rps_flow_cnt). A tuned VPN node turns it on for its
 * single-queue virtio NIC from a unit or a udev rule: no sysctl file says so, and a trial boot
 * on which that unit did not act spreads no packet over the other CPUs. The snapshot takes
 * every queue that steers (a mask other than 0); the [accept] key rps names more.
 */
#include <ctype.h>
#include <net/if.h>

#include "checks/check.h"
#include "checks/snapshot.h"
#include "lib/basic/util.h"

#define RPS_QUEUE_PREFIX "rx-"

/* A mask as the kernel prints it ("00000000,0000000f"), lower case, without the commas and
 * leading zeros ("f"; "0" for none); NULL when it is not one. */
static char *mask_normalize(const char *text)
{
    _cleanup_free_ char *m = malloc(strlen(text) + 2);
    const char *p = text;
    size_t n = 0;

    if (!m)
        return NULL;
    for (; *p; p++) {
        if (*p == ',')
            continue;
        if (!isxdigit((unsigned char)*p))
            return NULL;
        if (n == 0 && *p == '0')
            continue;
        m[n++] = (char)tolower((unsigned char)*p);
    }
    if (p == text)
        return NULL;
    if (n == 0)
        m[n++] = '0';
    m[n] = '\0';
    return TAKE_PTR(m);
}

static bool flows_ok(const char *s)
{
    return *s && strlen(s) <= 10 && strspn(s, "0123456789") == strlen(s);
}

static bool queue_ok(const char *s)
{
    const char *n = ks_startswith(s, RPS_QUEUE_PREFIX);
    return n && *n && strspn(n, "0123456789") == strlen(n);
}

static bool ifname_ok(const char *s)
{
    return *s && strlen(s) < IFNAMSIZ && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..");
}

/* What the queue runs: its mask (normalized) and flow count. -ENOENT: no such queue, or a
 * kernel without RPS. */
static int queue_read(const ks_root *root, const char *ifname, const char *queue, char **ret_cpus,
                      char **ret_flows)
{
    _cleanup_free_ char *pc = ks_asprintf("sys/class/net/%s/queues/%s/rps_cpus", ifname, queue),
                        *pf = ks_asprintf("sys/class/net/%s/queues/%s/rps_flow_cnt", ifname, queue),
                        *cpus = NULL, *flows = NULL;
    int r;

    if (!pc || !pf)
        return -ENOMEM;
    r = ks_root_read_line(root, pc, &cpus);
    if (r < 0)
        return r;
    r = ks_root_read_line(root, pf, &flows);
    if (r < 0)
        return r;
    *ret_cpus = mask_normalize(ks_strstrip(cpus));
    if (!*ret_cpus)
        return -EBADMSG;
    *ret_flows = strdup(ks_strstrip(flows));
    if (!*ret_flows || !flows_ok(*ret_flows)) {
        free(*ret_cpus);
        free(*ret_flows);
        return *ret_flows ? -EBADMSG : -ENOMEM;
    }
    return 0;
}

int ks_check_rps(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *cpus = NULL, *flows = NULL, *want_cpus = NULL;
    int r;

    /* IF:QUEUE:CPUS:FLOWS */
    r = ks_check_arg_fields(chk->arg, 4, &f);
    if (r < 0)
        return r;
    if (ks_strv_length(f) != 4 || !ifname_ok(f[0]) || !queue_ok(f[1]) || !flows_ok(f[3]))
        return -EINVAL;
    want_cpus = mask_normalize(f[2]);
    if (!want_cpus)
        return -EINVAL;
    r = queue_read(c->root, f[0], f[1], &cpus, &flows);
    if (r == -ENOENT)
        return ks_check_detail(chk,
                               ks_asprintf("%s has no receive queue %s with RPS (no "
                                           "sys/class/net/%s/queues/%s/rps_cpus)",
                                           f[0], f[1], f[0], f[1]),
                               0);
    if (r < 0)
        return r;
    r = streq(cpus, want_cpus) && streq(flows, f[3]);
    return ks_check_detail(
        chk,
        r ? ks_asprintf("%s %s: rps_cpus %s, rps_flow_cnt %s", f[0], f[1], cpus, flows)
          : ks_asprintf("%s %s: rps_cpus %s, rps_flow_cnt %s; wanted rps_cpus "
                        "%s, rps_flow_cnt %s",
                        f[0], f[1], cpus, flows, want_cpus, f[3]),
        r);
}

/* Every receive queue of every interface that steers packets to other CPUs. */
static int take_rps(const ks_check_ctx *c, ks_run_snapshot *s)
{
    _cleanup_strv_free_ char **names = NULL;
    int r = ks_root_list_dir(c->root, "sys/class/net", &names);

    if (r < 0)
        return r == -ENOMEM ? r : ks_run_snapshot_skip(s, "rps (sys/class/net)", r);
    for (char **n = names; *n; n++) {
        _cleanup_strv_free_ char **queues = NULL;
        _cleanup_free_ char *dir = ks_asprintf("sys/class/net/%s/queues", *n);

        if (!dir)
            return -ENOMEM;
        if (!ifname_ok(*n) || (*n)[0] == '.' || ks_root_list_dir(c->root, dir, &queues) < 0)
            continue;
        for (char **q = queues; *q; q++) {
            _cleanup_free_ char *cpus = NULL, *flows = NULL;

            if (!queue_ok(*q))
                continue;
            r = queue_read(c->root, *n, *q, &cpus, &flows);
            if (r == -ENOMEM)
                return r;
            if (r < 0 || streq(cpus, "0"))
                continue;
            r = ks_run_snapshot_add_item(s, true, "rps", *n, *q, cpus, flows, NULL);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

static bool item_ok(const char *v)
{
    _cleanup_strv_free_ char **f = NULL;
    _cleanup_free_ char *m = NULL;

    if (ks_check_arg_fields(v, 4, &f) < 0 || ks_strv_length(f) != 4)
        return false;
    m = mask_normalize(f[2]);
    return m && ifname_ok(f[0]) && f[0][0] != '-' && queue_ok(f[1]) && flows_ok(f[3]);
}

static const ks_config_key keys[] = {
    KS_CONFIG_LIST("accept", "rps", item_ok, NULL, "IF:rx-N:CPUMASK:FLOWS"),
    {0},
};

const ks_check_kind ks_check_kind_rps = {
    .name = "rps",
    .max_fields = 4,
    .run = ks_check_rps,
    .keys = keys,
    .item_key = "rps",
    .ifname_field = 1,
    .take = take_rps,
};
