/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The registry of acceptance check kinds: every kind once, as libblkid lists its probers in
 * idinfos[]. Each is one file of checks/ (checks/check.h, ks_check_kind). The order is the
 * order of the configured checks in the checklist and of the snapshot's takers (address after
 * interface, connections after listen: they read the items taken before them).
 */
#include <strings.h>

#include "checks/check.h"
#include "lib/basic/util.h"

#define KS_CHECK_KINDS(X)                                                                          \
    X(service)                                                                                     \
    X(interface)                                                                                   \
    X(listen)                                                                                      \
    X(sysctl)                                                                                      \
    X(module)                                                                                      \
    X(bbr_version)                                                                                 \
    X(qdisc)                                                                                       \
    X(rps)                                                                                         \
    X(nft_table)                                                                                   \
    X(established)                                                                                 \
    X(reach)                                                                                       \
    X(congestion_control)                                                                          \
    X(retransmissions)                                                                             \
    X(script)                                                                                      \
    X(address)                                                                                     \
    X(network)                                                                                     \
    X(route)                                                                                       \
    X(wireguard)                                                                                   \
    X(wg_peer)                                                                                     \
    X(nft_chain)                                                                                   \
    X(connections)

#define DECLARE(k) extern const ks_check_kind ks_check_kind_##k;
KS_CHECK_KINDS(DECLARE)
#define REFERENCE(k) &ks_check_kind_##k,
static const ks_check_kind *const kinds[] = {KS_CHECK_KINDS(REFERENCE)};

const ks_check_kind *const *ks_check_kinds(size_t *ret_n)
{
    *ret_n = ARRAY_SIZE(kinds);
    return kinds;
}

const ks_check_kind *ks_check_kind_of(const char *id, const char **ret_arg)
{
    size_t n = strcspn(id, ":");

    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
        if (strlen(kinds[i]->name) == n && strncmp(kinds[i]->name, id, n) == 0) {
            if (ret_arg)
                *ret_arg = id[n] ? id + n + 1 : NULL;
            return kinds[i];
        }
    return NULL;
}

static const char *const on_failure_values[] = {"reboot", "stay", NULL};

/* The [accept] settings of the run itself; each kind brings its own keys. */
static const ks_config_key settings[] = {
    {.section = "accept",
     .key = "ignore",
     .type = KS_CT_LIST,
     .item_ok = ks_config_item_any,
     .hint = "an fnmatch(3) pattern on check ids"},
    /* The reachability floor's port (checks/floor.c), never required of connections. */
    KS_CONFIG_UINT("accept", "management", 1, 65535, 22),
    KS_CONFIG_UINT("accept", "timeout", 1, 86400, 300),
    /* The trial boot's deadline (lib/engine/trialboot.h): a forced reboot when no verdict. */
    KS_CONFIG_UINT("accept", "deadline", 60, 86400, 900),
    KS_CONFIG_UINT("accept", "interval", 1, 3600, 5),
    KS_CONFIG_UINT("accept", "script_timeout", 1, 86400, 60),
    KS_CONFIG_UINT("accept", "program_timeout", 1, 86400, 30),
    KS_CONFIG_UINT("accept", "hook_timeout", 1, 86400, 30),
    {.section = "accept", .key = "auto_pin", .type = KS_CT_BOOL, .def = "yes"},
    {.section = "accept",
     .key = "on_failure",
     .type = KS_CT_ENUM,
     .enum_values = on_failure_values,
     .def = "reboot"},
};

#define KEYS_MAX 64

int ks_checks_register_config(void)
{
    /* One table, built once: the configuration keeps the pointer (ks_config_register()). */
    static ks_config_key table[KEYS_MAX];
    static size_t n;

    if (!n) {
        memcpy(table, settings, sizeof(settings));
        n = ARRAY_SIZE(settings);
        for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
            for (const ks_config_key *k = kinds[i]->keys; k && k->key; k++) {
                if (n == KEYS_MAX)
                    return -E2BIG;
                table[n++] = *k;
            }
    }
    return ks_config_register(table, n);
}
