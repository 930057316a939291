/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "lib/host/netstat.h"
#include "lib/host/tcpdiag.h"

/*
 * The node's TCP health at one moment (a sample): the counters since the boot
 * (lib/host/netstat.h) and a summary of the established connections (lib/host/tcpdiag.h) whose
 * peer is not on this node (loopback is not the node's traffic): how many, their congestion
 * controls, the median RTT, and the median delivery rate of those that carry traffic.
 *
 * A swap keeps three samples ("tcp" in the state journal and the swap history): "baseline" at
 * arming, on the old kernel; "pinned" when the new kernel was pinned, on it; "after" when
 * `kswap report --record` last ran on it. Figures over a window come from two samples of one
 * boot (the counters count from the boot), or from one sample and its boot.
 */

/* Connections that sent fewer data segments than this carry no traffic worth a rate. */
#define KS_TCP_TRAFFIC_MIN_SEGS 10u

typedef struct ks_tcp_cc_count {
    char name[KS_TCP_CA_NAME_MAX]; /* "" when the kernel did not say */
    uint32_t n;
} ks_tcp_cc_count;

typedef struct ks_tcp_sample {
    char *at;       /* ISO 8601 UTC: when it was taken */
    char *kernel;   /* the running release; NULL when not known */
    char *boot_id;  /* the boot it was taken in; NULL when not known */
    uint64_t btime; /* that boot's start, seconds since the epoch; 0 when not known */
    ks_tcp_counters counters;
    bool has_connections; /* the connections could be read (sock_diag) */
    uint32_t connections; /* established, the peer not on loopback */
    ks_tcp_cc_count *cc;  /* those by congestion control, sorted by name */
    size_t n_cc;
    bool has_rtt;
    uint32_t rtt_median_us; /* over the connections with tcp_info */
    uint32_t with_traffic;  /* connections with KS_TCP_TRAFFIC_MIN_SEGS data segments and a
                               delivery rate */
    bool has_delivery;
    uint64_t delivery_rate_median; /* bytes per second, over those */
} ks_tcp_sample;

void ks_tcp_sample_done(ks_tcp_sample *s);
DEFINE_TRIVIAL_DONE_FUNC(ks_tcp_sample, ks_tcp_sample_done);
/* A sample on the heap, freed whole; accepts NULL. */
ks_tcp_sample *ks_tcp_sample_free(ks_tcp_sample *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ks_tcp_sample *, ks_tcp_sample_free);
int ks_tcp_sample_copy(const ks_tcp_sample *s, ks_tcp_sample **ret);

/* Fills the connection part of s from c (counters, times and names untouched). */
int ks_tcp_sample_summarize(const ks_tcp_conns *c, ks_tcp_sample *s);
/* How many of s's connections run cc. */
uint32_t ks_tcp_sample_cc_count(const ks_tcp_sample *s, const char *cc);

/*
 * A sample of the root now (stamped now): counters, connections, the running kernel, the boot.
 * Counters that cannot be read fail it; connections that cannot be read (a kernel without
 * sock_diag) leave has_connections false, and *ret_conns_error (may be NULL) says why.
 * ret_conns (may be NULL) receives the connections themselves.
 */
int ks_tcp_sample_take(const ks_root *root, time_t now, ks_tcp_sample *ret, ks_tcp_conns *ret_conns,
                       char **ret_conns_error);

/* As JSON (the objects in the journal and the history). NULL on -ENOMEM. */
json_object *ks_tcp_sample_to_json(const ks_tcp_sample *s);
/* -EBADMSG with *ret_error (may be NULL) naming the field, e.g. "'out_segs': not a number". */
int ks_tcp_sample_from_json(json_object *o, ks_tcp_sample *ret, char **ret_error);

/* The samples of one swap. */
typedef enum ks_tcp_slot {
    KS_TCP_BASELINE,
    KS_TCP_PINNED,
    KS_TCP_AFTER,
    _KS_TCP_SLOT_MAX,
} ks_tcp_slot;

typedef struct ks_tcp_effect {
    ks_tcp_sample *baseline; /* at arming, on the old kernel */
    ks_tcp_sample *pinned;   /* when the new kernel was pinned, on it */
    ks_tcp_sample *after;    /* report --record, on the new kernel */
} ks_tcp_effect;

void ks_tcp_effect_done(ks_tcp_effect *e);
bool ks_tcp_effect_is_empty(const ks_tcp_effect *e);
int ks_tcp_effect_copy(const ks_tcp_effect *e, ks_tcp_effect *ret);
/* {"baseline", "pinned", "after"}, each a sample or null. NULL on -ENOMEM. */
json_object *ks_tcp_effect_to_json(const ks_tcp_effect *e);
int ks_tcp_effect_from_json(json_object *o, ks_tcp_effect *ret, char **ret_error);
/* One of e's samples; NULL when e has none there. */
const ks_tcp_sample *ks_tcp_effect_get(const ks_tcp_effect *e, ks_tcp_slot slot);
/* Sets one of e's samples to a copy of s (NULL: none). */
int ks_tcp_effect_set(ks_tcp_effect *e, ks_tcp_slot slot, const ks_tcp_sample *s);

/* Figures over a window: what a dashboard and `kswap report` compare. */
typedef struct ks_tcp_figures {
    const ks_tcp_sample *end;     /* the connections, the kernel and the end of the window */
    bool since_boot;              /* the window starts at end's boot, not at a sample */
    const char *from;             /* the start sample's time; NULL: the boot (end->btime) */
    int64_t window_s;             /* -1 when not known */
    uint64_t sent, retransmitted; /* segments over the window */
    bool has_ext;
    uint64_t timeouts, lost_retransmit;
    bool has_ratio;
    double ratio; /* retransmitted / sent */
} ks_tcp_figures;

/*
 * The figures from start to end: start counts only when it was taken in end's boot (same boot
 * id) with counters not above end's; otherwise (start NULL, another boot) since end's boot.
 */
void ks_tcp_figures_of(const ks_tcp_sample *start, const ks_tcp_sample *end, ks_tcp_figures *ret);
/* (after - before) / before in percent; false when before is 0. */
bool ks_tcp_change_percent(double before, double after, double *ret);
