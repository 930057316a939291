/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The checklist from the [accept] section and etc/kswap/checks.d/. */
#include <sys/stat.h>

#include "checks/check.h"
#include "lib/basic/util.h"

#define CHECKS_DIR "etc/kswap/checks.d"

typedef struct builtin {
    const char *key;  /* [accept] key */
    const char *kind; /* check id prefix */
    ks_check_fn fn;
    bool single; /* one value (the last one counts) */
} builtin;

static const builtin builtins[] = {
    {"services", "service", ks_check_service, false},
    {"interfaces", "interface", ks_check_interface, false},
    {"listen", "listen", ks_check_listen, false},
    {"sysctl", "sysctl", ks_check_sysctl, false},
    {"modules", "module", ks_check_module, false},
    {"bbr_version", "bbr-version", ks_check_bbr_version, true},
    {"qdisc", "qdisc", ks_check_qdisc, false},
    {"nft_tables", "nft-table", ks_check_nft_table, false},
    {"established_min", "established", ks_check_established, true},
    {"reach", "reach", ks_check_reach, false},
};

/* Catches malformed items at load time, so that a typo is an error, not a failed trial. */
static bool item_is_valid(const char *kind, const char *v)
{
    unsigned long long n;

    if (v[0] == '-')
        return false;
    if (streq(kind, "listen")) {
        const char *colon = strchr(v, ':');
        return colon && ks_safe_atou64(colon + 1, &n) >= 0 && n > 0 && n < 65536 &&
               (ks_startswith(v, "tcp:") || ks_startswith(v, "tcp6:") || ks_startswith(v, "udp:") ||
                ks_startswith(v, "udp6:"));
    }
    if (streq(kind, "sysctl"))
        return strchr(v, '=') && v[0] != '=';
    if (streq(kind, "qdisc")) {
        const char *colon = strrchr(v, ':');
        return colon && colon != v && colon[1];
    }
    if (streq(kind, "nft-table"))
        return v[strlen(v) - 1] != ':' && v[0] != ':';
    if (streq(kind, "established"))
        return ks_safe_atou64(v, &n) >= 0;
    if (streq(kind, "interface") || streq(kind, "module"))
        return !strchr(v, '/') && !streq(v, ".") && !streq(v, "..");
    return true;
}

static int add_scripts(const ks_root *root, ks_checklist *l, const char *which, bool required)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/%s", CHECKS_DIR, which);
    _cleanup_strv_free_ char **names = NULL;
    int r;

    if (!dir)
        return -ENOMEM;
    r = ks_root_list_dir(root, dir, &names);
    if (r == -ENOENT || r == -ENOTDIR)
        return 0;
    if (r < 0)
        return r;
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *path = NULL, *arg = NULL;
        struct stat st;
        ks_check *chk;

        /* Editor backups and disabled scripts (not executable) are not checks. */
        if ((*n)[0] == '.' || ks_endswith(*n, "~"))
            continue;
        path = ks_asprintf("%s/%s", dir, *n);
        if (!path)
            return -ENOMEM;
        if (ks_root_stat(root, path, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
            continue;
        arg = ks_asprintf("%s/%s", which, *n);
        if (!arg)
            return -ENOMEM;
        r = ks_checklist_add(l, "script", arg, required, ks_check_script);
        if (r < 0)
            return r;
        /* The check runs the file; its id names it relative to checks.d. */
        chk = &l->v[l->n - 1];
        free(chk->arg);
        chk->arg = TAKE_PTR(path);
    }
    return 0;
}

int ks_checklist_from_config(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                             char **ret_error)
{
    int r;

    for (size_t i = 0; cfg && i < ARRAY_SIZE(builtins); i++) {
        _cleanup_strv_free_ char **v = NULL;
        char **start;

        r = ks_config_get_strv(cfg, "accept", builtins[i].key, NULL, &v);
        if (r < 0)
            return r;
        start = v;
        if (builtins[i].single && v && *v)
            start = v + ks_strv_length(v) - 1;
        for (char **p = start; p && *p; p++) {
            if (!item_is_valid(builtins[i].kind, *p)) {
                if (ret_error)
                    *ret_error =
                        ks_asprintf("[accept] %s: '%s' is not a valid item", builtins[i].key, *p);
                return -EINVAL;
            }
            r = ks_checklist_add(l, builtins[i].kind, builtins[i].single ? NULL : *p, true,
                                 builtins[i].fn);
            if (r < 0)
                return r;
            if (builtins[i].single) {
                ks_check *chk = &l->v[l->n - 1];
                chk->arg = strdup(*p);
                if (!chk->arg)
                    return -ENOMEM;
            }
        }
    }
    r = ks_checklist_add_cc(root, cfg, l, ret_error);
    if (r >= 0)
        r = ks_checklist_add_retrans(cfg, l);
    if (r < 0)
        return r;
    r = add_scripts(root, l, "required", true);
    if (r >= 0)
        r = add_scripts(root, l, "wanted", false);
    return r;
}
