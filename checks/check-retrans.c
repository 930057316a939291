/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * retransmissions: the trial kernel's retransmission ratio since its boot (proc/net/snmp
 * RetransSegs / OutSegs) against the baseline the old kernel had from its boot to arming. Off
 * unless [accept] retrans_max_increase is set: minutes after a reboot, with clients
 * reconnecting and in slow start, are not the node's usual traffic, and a path's loss changes
 * by the hour, so a ratio from the trial window says little against days of baseline. Judged
 * only once both sides sent retrans_min_segments; until then reported, never a failure.
 */
#include <inttypes.h>
#include <stdio.h>

#include "checks/check.h"
#include "lib/basic/util.h"
#include "lib/host/netstat.h"
#include "lib/host/tcpsample.h"

#define RETRANS_KIND "retransmissions"
/* A baseline near 0 % must not turn a handful of retransmissions into a failure. */
#define RETRANS_SLACK 0.001

/* chk->arg is "PERCENT:MIN_SEGMENTS:required" or "...:wanted" (from the configuration). */
static int parse_arg(const char *arg, uint64_t *pct, uint64_t *min, bool *required)
{
    unsigned long long p, m;
    char mode[16];

    if (sscanf(arg, "%llu:%llu:%15s", &p, &m, mode) != 3 ||
        (!streq(mode, "required") && !streq(mode, "wanted")))
        return -EINVAL;
    *pct = p, *min = m, *required = streq(mode, "required");
    return 0;
}

int ks_check_retrans(const ks_check_ctx *c, ks_check *chk)
{
    const ks_tcp_sample *base = c->tcp_baseline;
    ks_tcp_counters now = {0};
    uint64_t pct, min;
    double ratio, base_ratio, limit;
    bool required;
    int r;

    r = parse_arg(chk->arg, &pct, &min, &required);
    if (r < 0)
        return r;
    r = ks_tcp_counters_read(c->root, &now);
    if (r < 0)
        return r;
    free(chk->detail);
    chk->detail = NULL;
    /* Not judged (yet): reported, never what stops a pin. */
    chk->required = false;
    ratio = now.out_segs ? (double)now.retrans_segs / (double)now.out_segs : 0;
    if (!base || base->counters.out_segs < min || now.out_segs < min) {
        if (!base)
            chk->detail = strdup("no baseline to compare with (kswap takes it when it arms a "
                                 "trial)");
        else if (base->counters.out_segs < min)
            chk->detail = ks_asprintf("not judged: the baseline saw %" PRIu64 " segments sent, "
                                      "fewer than retrans_min_segments %" PRIu64,
                                      base->counters.out_segs, min);
        else
            chk->detail = ks_asprintf("not judged yet: %" PRIu64 " segments sent since the "
                                      "boot, fewer than retrans_min_segments %" PRIu64
                                      " (%.3f %% retransmitted so far)",
                                      now.out_segs, min, ratio * 100);
        return chk->detail ? 0 : -ENOMEM;
    }
    base_ratio = (double)base->counters.retrans_segs / (double)base->counters.out_segs;
    limit = base_ratio * (1 + (double)pct / 100) + RETRANS_SLACK;
    chk->required = required;
    chk->detail =
        ks_asprintf("%.3f %% of %" PRIu64 " segments retransmitted since the boot, "
                    "the baseline %.3f %% of %" PRIu64 " (%s): %s %.3f %% (+%" PRIu64 " %%)",
                    ratio * 100, now.out_segs, base_ratio * 100, base->counters.out_segs,
                    strempty(base->kernel),
                    ratio > limit ? "worse than the limit" : "within the limit", limit * 100, pct);
    if (!chk->detail)
        return -ENOMEM;
    return ratio <= limit;
}

/* Adds it when [accept] retrans_max_increase is set (not 0); its arg carries the settings. */
static int add_retrans(const ks_root *root, const ks_config *cfg, ks_checklist *l, char **ret_error)
{
    uint64_t pct = 0, min = 0;
    bool required = false;
    ks_check *chk;
    int r;

    (void)root;
    if (ks_config_get_u64(cfg, "accept", "retrans_max_increase", &pct) < 0 || pct == 0)
        return 0;
    if (ks_config_get_u64(cfg, "accept", "retrans_min_segments", &min) < 0 ||
        ks_config_get_bool(cfg, "accept", "retrans_required", false, &required) < 0) {
        if (ret_error)
            *ret_error = strdup("[accept] retrans_min_segments or retrans_required is not valid");
        return -EINVAL;
    }
    r = ks_checklist_add(l, RETRANS_KIND, NULL, required, ks_check_retrans);
    if (r < 0)
        return r;
    chk = &l->v[l->n - 1];
    chk->arg =
        ks_asprintf("%" PRIu64 ":%" PRIu64 ":%s", pct, min, required ? "required" : "wanted");
    return chk->arg ? 0 : -ENOMEM;
}

/* Off by default (0): a trial's minutes after a reboot are not the node's usual traffic. */
static const ks_config_key keys[] = {
    KS_CONFIG_UINT("accept", "retrans_max_increase", 0, 100000, 0),
    KS_CONFIG_UINT("accept", "retrans_min_segments", 1000, 1000000000000, 100000),
    {.section = "accept", .key = "retrans_required", .type = KS_CT_BOOL, .def = "no"},
    {0},
};

const ks_check_kind ks_check_kind_retransmissions = {
    .name = RETRANS_KIND,
    .run = ks_check_retrans,
    .keys = keys,
    .add_configured = add_retrans,
};
