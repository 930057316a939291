/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/basic/config.h"
#include "lib/basic/root.h"

/*
 * Acceptance checks: each one looks at what runs (never at what the configuration says) and
 * says pass or fail with a short detail. The runner retries them until every required check
 * passed or the time is up, keeping each check's last result and how often it ran.
 */
typedef enum ks_check_status {
    KS_CHECK_SKIP, /* not run (yet, or not applicable) */
    KS_CHECK_PASS,
    KS_CHECK_FAIL,
    _KS_CHECK_STATUS_MAX,
    _KS_CHECK_STATUS_INVALID = -EINVAL,
} ks_check_status;

/* Program answers kept for one round of checks (ks_check_program()); the runner owns it. */
typedef struct ks_check_cache ks_check_cache;
ks_check_cache *ks_check_cache_new(void);
void ks_check_cache_clear(ks_check_cache *cache);
ks_check_cache *ks_check_cache_free(ks_check_cache *cache);

/* What every check may use. */
typedef struct ks_check_ctx {
    const ks_root *root;
    const char *root_abs;        /* KSWAP_ROOT for programs; NULL on this machine */
    const char *kernel;          /* the running release */
    unsigned program_timeout_ms; /* systemctl, tc, nft; 0: 30 s */
    unsigned script_timeout_ms;  /* custom checks; 0: 60 s */
    /* The round's answers of programs asked by many checks (wg show all dump for each peer, nft
     * -j list chains for each chain); NULL: none kept. Set by the runner. */
    ks_check_cache *cache;
    /* The swap's TCP baseline, taken at arming (lib/host/tcpsample.h); NULL: none. */
    const struct ks_tcp_sample *tcp_baseline;
    /* Judging a trial boot (accept; kswap check with kswap.trial= on the command line): every
     * connection there was opened on the trial kernel (checks/check-cc.c). */
    bool trial;
} ks_check_ctx;

typedef struct ks_check ks_check;

/*
 * Runs one check: 1 pass, 0 fail, negative errno when it could not be evaluated (a failure
 * too). Sets chk->detail (and chk->output for programs), freeing what was there.
 */
typedef int (*ks_check_fn)(const ks_check_ctx *c, ks_check *chk);

struct ks_check {
    char *id;  /* "service:xray.service", "listen:tcp:443", "script:required/10-x", ... */
    char *arg; /* the configured item: "xray.service", "tcp:443", a script's path */
    /* Must pass for the verdict; else reported (wanted). A check may clear it while it runs when
     * what runs shows the node cannot bring the item back by itself (a roaming WireGuard client
     * with no endpoint configured here), and says so in its detail. */
    bool required;
    bool from_snapshot; /* an item of what ran before the trial (checks/snapshot.h) */
    bool final;         /* the last failure cannot heal by waiting (set by the check) */
    ks_check_fn run;
    ks_check_status status; /* the last result */
    char *detail;
    char *output; /* a custom check's output (bounded), NULL otherwise */
    unsigned attempts;
    unsigned baseline; /* connections: how many came in at arming (checks/snapshot.h) */
};

typedef struct ks_checklist {
    ks_check *v;
    size_t n, cap;
} ks_checklist;

const char *ks_check_status_to_string(ks_check_status s);

/* Appends a check with id "kind:arg" (or "kind" when arg is NULL). */
int ks_checklist_add(ks_checklist *l, const char *kind, const char *arg, bool required,
                     ks_check_fn fn);
void ks_checklist_done(ks_checklist *l);
ks_check *ks_checklist_find(const ks_checklist *l, const char *id);
/* Sets a check's result by hand (the kernel and boot checks of the verdict). */
int ks_check_set(ks_check *chk, ks_check_status status, const char *detail);

/*
 * A check kind: one plug-in in one file of checks/ (check-*.c) that holds everything of the
 * kind (its [accept] keys and their validation, what it takes into the snapshot of what runs,
 * and its check), exported as one `const ks_check_kind ks_check_kind_NAME` and listed once in
 * checks/registry.c, as libblkid lists its probers. The configuration asks the registry for
 * the [accept] keys (ks_checks_register_config()), the checklist and the snapshot walk the
 * registry; nothing else names a kind. A new kind: its own file (and its line in
 * checks/meson.build), one line of the registry, its entry in kswap(8) and kswap.conf(5).
 *
 * Ids: "NAME" for a kind of one value (bbr-version: the value is the check's arg), else
 * "NAME:ARG", ARG of up to max_fields fields separated by ':', each escaped (ids below): the
 * check splits them back with ks_check_arg_fields(chk->arg, max_fields, ...). A taker adds
 * items with ks_run_snapshot_add_item(s, required, NAME, field, ..., NULL).
 *
 *     static int take_congestion(const ks_check_ctx *c, ks_run_snapshot *s)
 *     {
 *         ... for each socket: ks_run_snapshot_add_item(s, true, "congestion", port, cc, NULL);
 *     }
 *     static const ks_config_key keys[] = {
 *         KS_CONFIG_LIST("accept", "congestion", item_ok, NULL, "PORT:ALGORITHM"),
 *         {0},
 *     };
 *     const ks_check_kind ks_check_kind_congestion = {
 *         .name = "congestion", .max_fields = 2, .run = check_congestion,
 *         .keys = keys, .item_key = "congestion", .take = take_congestion,
 *     };
 *
 * and X(congestion) in the list of checks/registry.c.
 */
struct ks_run_snapshot;
typedef struct ks_check_kind {
    const char *name;    /* the id's first word */
    unsigned max_fields; /* of ARG; 0: the id is NAME alone */
    ks_check_fn run;
    /* Its [accept] keys, ending with {0}; NULL: none. Registered with the configuration, so a
     * malformed value is an error when the configuration is read (item_ok, hint). */
    const ks_config_key *keys;
    /* The key of keys whose every word is one configured check of the kind (the last word
     * alone for a kind with max_fields 0); NULL: the kind is not configured so. */
    const char *item_key;
    /* fnmatch(3) patterns on ids of what differs from boot to boot (veth names, Docker's
     * chains): never required; [accept] ignore adds patterns. NULL-terminated, may be NULL. */
    const char *const *ignore;
    /* The field of ARG that names an interface (1-based; 0: none): an item of an ignored
     * interface (interface:veth*) is ignored with it. */
    unsigned ifname_field;
    /* Adds what runs now to the snapshot (ks_run_snapshot_add_item()); called in
     * registry order (a taker may read the items of the kinds before it). NULL: none. */
    int (*take)(const ks_check_ctx *c, struct ks_run_snapshot *s);
    /* Adds configured checks that are not words of item_key (custom scripts). NULL: none. */
    int (*add_configured)(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                          char **ret_error);
    /* Adds checks from the snapshot beyond its items (connections per port). NULL: none. */
    int (*add_from_snapshot)(ks_checklist *l, const struct ks_run_snapshot *s, const ks_config *cfg,
                             char *const *ignore);
    /* Whether a configured check of the kind makes the snapshot's item (its ARG) redundant
     * (sysctl:KEY=1 configured replaces sysctl:KEY=0 of the snapshot). NULL: never. */
    bool (*replaced_by)(const ks_check *configured, const char *item_arg);
} ks_check_kind;

/* Every kind, in registry order. */
const ks_check_kind *const *ks_check_kinds(size_t *ret_n);
/* The kind of an id ("service:ssh.service", "bbr-version"), *ret_arg what follows "NAME:"
 * (NULL for "NAME"); NULL when no kind has that name. */
const ks_check_kind *ks_check_kind_of(const char *id, const char **ret_arg);
/*
 * Registers the [accept] keys (the run's settings and every kind's keys) with the
 * configuration layer (ks_config_register()); call it once before reading a configuration
 * (cmd/kswap.c does). Negative errno on a clash of key names (a programming error).
 */
int ks_checks_register_config(void);

/*
 * The configured checks: the words of each kind's item_key in registry order (services,
 * interfaces, listen, sysctl, modules, bbr_version, qdisc, nft_tables, established_min, reach),
 * all required, then each kind's add_configured (the executables in etc/kswap/checks.d/required/
 * and wanted/ inside the root, in name order). -EINVAL with *ret_error for a malformed item.
 */
int ks_checklist_from_config(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                             char **ret_error);

/*
 * The reachability floor (checks/floor.c): "floor:default-route" (the interface of a default
 * route is up with an address) and "floor:management" (a TCP socket listens on [accept]
 * management, default 22). Each is required when snapshot_items (what ran at arming) has a
 * default route or a listener on that port, else reported (a trial cannot lose what the node
 * never had); with have_snapshot false (a trial armed by an older kswap) always required.
 */
int ks_checklist_add_floor(ks_checklist *l, const ks_config *cfg, char *const *snapshot_items,
                           bool have_snapshot);
int ks_check_default_route(const ks_check_ctx *c, ks_check *chk);
int ks_check_management(const ks_check_ctx *c, ks_check *chk);
/* "default:IF" and "default6:IF" of proc/net/route and ipv6_route (checks/check-route.c). */
int ks_default_routes(const ks_root *root, char ***ret);

/* An interface "up" for acceptance: operstate up, or unknown (tunnels, loopback). */
bool ks_interface_has_carrier(const char *operstate);
/* The state field of "interface:IF:no-carrier": up at arming without a carrier. */
#define KS_INTERFACE_NO_CARRIER "no-carrier"

/* The checks of the built-in kinds (checks/check-*.c). */
int ks_check_service(const ks_check_ctx *c, ks_check *chk);
int ks_check_route(const ks_check_ctx *c, ks_check *chk);
int ks_check_wireguard(const ks_check_ctx *c, ks_check *chk);
int ks_check_wg_peer(const ks_check_ctx *c, ks_check *chk);
int ks_check_nft_chain(const ks_check_ctx *c, ks_check *chk);
/* "address:IF:ADDR/PLEN" (IPv6) and "network:IF:NET/PLEN" (IPv4): checks/ifaddr.h. Final
 * when the address failed duplicate address detection. */
int ks_check_address(const ks_check_ctx *c, ks_check *chk);
/* "connections:tcp:PORT": at least one connection came in to PORT again (chk->baseline: as many
 * as at arming, for the detail). Never final: users come back in their own time. */
int ks_check_connections(const ks_check_ctx *c, ks_check *chk);
int ks_check_interface(const ks_check_ctx *c, ks_check *chk);
int ks_check_listen(const ks_check_ctx *c, ks_check *chk);
int ks_check_sysctl(const ks_check_ctx *c, ks_check *chk);
int ks_check_module(const ks_check_ctx *c, ks_check *chk);
int ks_check_bbr_version(const ks_check_ctx *c, ks_check *chk);
int ks_check_qdisc(const ks_check_ctx *c, ks_check *chk);
int ks_check_rps(const ks_check_ctx *c, ks_check *chk);
int ks_check_nft_table(const ks_check_ctx *c, ks_check *chk);
int ks_check_established(const ks_check_ctx *c, ks_check *chk);
int ks_check_reach(const ks_check_ctx *c, ks_check *chk);
int ks_check_script(const ks_check_ctx *c, ks_check *chk);
/* congestion-control:NAME (checks/check-cc.c): the established connections run NAME; on a
 * trial boot (c->trial) required once there are some (it sets chk->required), else reported. */
int ks_check_cc(const ks_check_ctx *c, ks_check *chk);
/* retransmissions (checks/check-retrans.c): the trial's retransmission ratio since its boot
 * against ctx->tcp_baseline; judged once both sent [accept] retrans_min_segments, required
 * then only with retrans_required (it sets chk->required). */
int ks_check_retrans(const ks_check_ctx *c, ks_check *chk);

/*
 * Ids that round-trip whatever names hold (checks/ids.c): "KIND:F1:...:Fn" with each field
 * escaped, so that splitting on the first n-1 colons gives the fields back. A byte is kept
 * when it is printable ASCII other than '%', ',', '"', '\'' (and ':' in all fields but the
 * last), or part of a printable UTF-8 character; any other byte is "%XX" (hex): white space,
 * control characters (ESC is %1B), bytes of invalid UTF-8. Ids are then one word, valid UTF-8,
 * safe on a terminal, and an [accept] ignore pattern can name any of them.
 */
char *ks_check_id_escape(const char *field, bool last);
/*
 * Text for people (a check's detail, a script's output) with what is not printable text
 * escaped as in ids: control characters (but for newlines and tabs when multiline), C1
 * controls, invisible and bidirectional marks, bytes of invalid UTF-8; names of the node reach
 * details unchanged otherwise, so this keeps terminals and JSON safe whatever they hold.
 */
char *ks_check_text_escape(const char *s, bool multiline);
/* The n bytes of s with "%XX" decoded (a '%' without two hex digits, and %00, stay as is). */
char *ks_check_id_unescape(const char *s, size_t n);
/* "KIND:F1:...:Fn" of the raw fields (NULL-terminated). NULL when out of memory. */
char *ks_check_id_join(const char *kind, char *const *fields);
/* The fields of an item's ARG ("inet:filter:allow:ssh"), unescaped: split on ':' into at most
 * max, the last one keeping the rest ("allow:ssh"); fields may be empty. */
int ks_check_arg_fields(const char *arg, unsigned max, char ***ret);
/* An id of a journal written before ids were escaped ("sysctl:KEY=4096 131072", split as its
 * kind's fields, the last one taking the rest) in today's form; NULL when out of memory. */
char *ks_check_id_upgrade(const char *id);
/* Sets chk->detail to detail (taken over) and returns verdict; -ENOMEM when detail is NULL. */
int ks_check_detail(ks_check *chk, char *detail, int verdict);
/* The string member key of a JSON object (tc -j, nft -j), NULL when absent or not a string. */
struct json_object;
const char *ks_json_member_string(struct json_object *o, const char *key);
/*
 * Runs a program for a check (ks_check_spawn(), the context's program timeout): 0 with its
 * output (NUL-terminated), -EIO when it ran and failed or did not answer in time
 * (*ret_failure, may be NULL: "nft failed: LAST LINE"), other negative errno when it could not
 * run. cacheable: the same argv asked again in this round gets the same answer (c->cache).
 */
int ks_check_program(const ks_check_ctx *c, char *const argv[], bool cacheable, char **ret_output,
                     char **ret_failure);

/*
 * Runs a program for a check through lib/spawn (KSWAP_ROOT under a root). Under a root that is
 * not this machine, programs from the system directories are refused (-EPERM): they would
 * look at this machine. 0 when it ran (see the result), negative errno otherwise.
 */
struct ks_spawn_result;
int ks_check_spawn(const ks_check_ctx *c, char *const argv[], unsigned timeout_ms,
                   struct ks_spawn_result *ret);

typedef struct ks_runner_opts {
    unsigned timeout_ms;  /* until the deadline; 0: one round */
    unsigned interval_ms; /* between rounds; 0: 5 s */
    /* The clock (tests); NULL: CLOCK_MONOTONIC and nanosleep. */
    long long (*now_ms)(void *userdata);
    void (*sleep_ms)(void *userdata, unsigned ms);
    /* Called after each attempt of a check (progress lines); optional. */
    void (*progress)(void *userdata, const ks_check *chk);
    void *userdata;
} ks_runner_opts;

/*
 * Runs every check of l that has not passed, round after round, until all required checks
 * passed (returns 1), a required check failed finally (chk->final: a failed unit, a module the
 * running kernel does not have; returns 0 at once) or the deadline passed (returns 0). Checks
 * that passed are not run again.
 * Returns negative errno only for -ENOMEM.
 */
int ks_checks_run(ks_checklist *l, const ks_check_ctx *c, const ks_runner_opts *o);
