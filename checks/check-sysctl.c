/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sysctl: KEY=VALUE compared with the live value in proc/sys, never with the sysctl files. */
#include "checks/check.h"
#include "lib/host/sysctl.h"
#include "lib/basic/util.h"

/* White space collapsed to single spaces, as ks_sysctl_live() gives values. */
static char *normalize(const char *s)
{
    _cleanup_strv_free_ char **w = NULL;
    char *out;
    size_t n = 0;

    if (ks_strv_split(s, " \t", &w) < 0)
        return NULL;
    for (char **p = w; p && *p; p++)
        n += strlen(*p) + 1;
    out = calloc(1, n + 1);
    if (!out)
        return NULL;
    for (char **p = w; p && *p; p++) {
        if (p != w)
            strcat(out, " ");
        strcat(out, *p);
    }
    return out;
}

int ks_check_sysctl(const ks_check_ctx *c, ks_check *chk)
{
    _cleanup_free_ char *key = NULL, *want = NULL, *live = NULL;
    const char *eq = strchr(chk->arg, '=');
    int r;

    if (!eq || eq == chk->arg)
        return -EINVAL;
    key = strndup(chk->arg, (size_t)(eq - chk->arg));
    want = normalize(eq + 1);
    if (!key || !want)
        return -ENOMEM;
    r = ks_sysctl_live(c->root, key, &live);
    free(chk->detail);
    if (r == -ENOENT) {
        chk->detail = ks_asprintf("%s does not exist in this kernel", key);
        return chk->detail ? 0 : -ENOMEM;
    }
    if (r < 0) {
        chk->detail = NULL;
        return r;
    }
    chk->detail = ks_asprintf("%s = %s%s%s", key, live, streq(live, want) ? "" : ", wanted ",
                              streq(live, want) ? "" : want);
    return chk->detail ? streq(live, want) : -ENOMEM;
}
