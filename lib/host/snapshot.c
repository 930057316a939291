/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>

#include "lib/basic/time-util.h"
#include "lib/host/boot-identity.h"
#include "lib/host/kernels.h"
#include "lib/host/snapshot.h"
#include "lib/host/sysctl.h"

void ks_snapshot_done(ks_snapshot *s)
{
    assert(s);
    free(s->taken_at);
    free(s->kernel);
    free(s->boot_id);
    free(s->grubenv);
    free(s->dropin);
    for (size_t i = 0; i < s->n_sysctls; i++) {
        free(s->sysctls[i].name);
        free(s->sysctls[i].value);
    }
    free(s->sysctls);
    *s = (ks_snapshot){0};
}

/* Reads an optional file: *ret NULL when it does not exist. */
static int read_optional(const ks_root *root, const char *path, size_t max, char **ret,
                         size_t *ret_len)
{
    int r;

    *ret = NULL;
    *ret_len = 0;
    if (!path)
        return 0;
    r = ks_root_read_file(root, path, max, ret, ret_len);
    return r == -ENOENT ? 0 : r;
}

int ks_snapshot_take(const ks_root *root, const char *grubenv_path, const char *dropin_path,
                     char *const *sysctls, time_t now, ks_snapshot *ret)
{
    _cleanup_snapshot_ ks_snapshot s = {0};
    _cleanup_free_ char *env = NULL;
    size_t n = ks_strv_length(sysctls), len;
    int r;

    assert(root);
    assert(ret);
    r = ks_running_kernel(root, &s.kernel);
    if (r < 0)
        return r;
    r = ks_read_boot_id(root, &s.boot_id);
    if (r < 0)
        return r;
    r = ks_read_btime(root, &s.btime);
    if (r < 0)
        return r;
    r = read_optional(root, grubenv_path, 64 * 1024, &env, &len);
    if (r < 0)
        return r;
    if (env) {
        s.has_grubenv = true;
        s.grubenv_len = len;
        s.grubenv = (unsigned char *)TAKE_PTR(env);
    }
    r = read_optional(root, dropin_path, 1u << 20, &s.dropin, &len);
    if (r < 0)
        return r;
    s.sysctls = calloc(n + 1, sizeof(*s.sysctls));
    if (!s.sysctls)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        ks_snapshot_sysctl *y = &s.sysctls[s.n_sysctls++];

        y->name = strdup(sysctls[i]);
        if (!y->name)
            return -ENOMEM;
        /* An unreadable sysctl is recorded as such; only memory is an error. */
        r = ks_sysctl_live(root, sysctls[i], &y->value);
        if (r == -ENOMEM)
            return r;
    }
    r = ks_utc_string(now, &s.taken_at);
    if (r < 0)
        return r;
    *ret = s;
    s = (ks_snapshot){0};
    return 0;
}
