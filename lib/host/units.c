/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/spawn.h"
#include "lib/basic/util.h"
#include "lib/host/units.h"

static const char *const unit_dirs[] = {
    "etc/systemd/system",
    "lib/systemd/system",
    "usr/lib/systemd/system",
};

static int from_files(const ks_root *root, const char *unit, ks_unit_state *ret, char **ret_how)
{
    _cleanup_strv_free_ char **names = NULL;
    struct stat st;
    bool installed = false;
    int r;

    for (size_t i = 0; i < ARRAY_SIZE(unit_dirs) && !installed; i++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", unit_dirs[i], unit);
        if (!p)
            return -ENOMEM;
        installed = ks_root_stat(root, p, &st) >= 0;
    }
    r = ks_root_list_dir(root, "etc/systemd/system", &names);
    if (r < 0 && r != -ENOENT)
        return r;
    for (char **n = names; n && *n; n++) {
        _cleanup_free_ char *p = NULL;
        if (!ks_endswith(*n, ".wants"))
            continue;
        p = ks_asprintf("etc/systemd/system/%s/%s", *n, unit);
        if (!p)
            return -ENOMEM;
        if (ks_root_lstat(root, p, &st) >= 0) {
            *ret = installed ? KS_UNIT_ENABLED : KS_UNIT_MISSING;
            *ret_how = ks_asprintf(installed ? "/%s" : "/%s links to no unit file", p);
            return *ret_how ? 0 : -ENOMEM;
        }
    }
    *ret = installed ? KS_UNIT_DISABLED : KS_UNIT_MISSING;
    *ret_how = ks_asprintf(installed ? "no link in /etc/systemd/system/*.wants/"
                                     : "no unit file in /etc/systemd/system, /lib/systemd/system "
                                       "or /usr/lib/systemd/system");
    return *ret_how ? 0 : -ENOMEM;
}

int ks_unit_state_get(const ks_root *root, const char *unit, ks_unit_state *ret, char **ret_how)
{
    char *argv[] = {(char *)"systemctl", (char *)"is-enabled", (char *)unit, NULL};
    ks_spawn_result res = {0};
    _cleanup_free_ char *last = NULL;
    int r;

    if (!ks_root_is_host(root))
        return from_files(root, unit, ret, ret_how);
    r = ks_spawn(argv, KS_SPAWN_OPTS(.timeout_ms = 30000), &res);
    if (r < 0)
        return r;
    last = ks_spawn_last_line(&res);
    /* enabled, enabled-runtime, static, alias, generated... start at boot or on demand */
    if (ks_spawn_succeeded(&res))
        *ret = KS_UNIT_ENABLED;
    else if (last && (strstr(last, "not-found") || strstr(last, "No such file")))
        *ret = KS_UNIT_MISSING;
    else
        *ret = KS_UNIT_DISABLED;
    *ret_how =
        ks_asprintf("systemctl is-enabled %s: %s", unit, last && last[0] ? last : "no answer");
    ks_spawn_result_done(&res);
    return *ret_how ? 0 : -ENOMEM;
}
