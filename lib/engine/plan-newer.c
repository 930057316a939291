/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>

#include "lib/engine/journal.h"
#include "lib/engine/kernel-list.h"
#include "lib/engine/plan-newer.h"

char *ks_kernel_flavour(const char *release)
{
    const char *dash = release ? strchr(release, '-') : NULL;
    size_t n;

    if (!dash)
        return NULL;
    n = strlen(dash + 1);
    while (n > 0 && isdigit((unsigned char)dash[1 + n - 1]))
        n--;
    return strndup(dash + 1, n);
}

int ks_plan_newer_xanmod(const ks_root *root, const ks_plan_opts *opts, ks_plan *p)
{
    _cleanup_free_ char *jerr = NULL, *flavour = NULL, *def = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    const char *pinned, *newer = NULL;
    ks_boot b = {0};
    int r;

    assert(root);
    assert(p);
    if (ks_journal_load(root, &j, &jerr) < 0 || ks_journal_state(j) != KS_STATE_PINNED)
        return 0;
    pinned = ks_journal_get(j, KS_JF_NEW_KERNEL);
    if (!pinned || !strstr(pinned, "xanmod"))
        return 0;
    flavour = ks_kernel_flavour(pinned);
    if (!flavour)
        return 0;
    /* Newest first: the first of the flavour newer than the pinned one. */
    for (size_t i = 0; i < p->kernels.n && !newer; i++) {
        _cleanup_free_ char *f = ks_kernel_flavour(p->kernels.v[i].release);
        if (streq_ptr(f, flavour) && ks_release_compare(p->kernels.v[i].release, pinned) > 0)
            newer = p->kernels.v[i].release;
    }
    if (!newer)
        return 0;
    if (ks_boot_load(root, &b, NULL) < 0)
        return 0;
    r = ks_boot_default_kernel(&b, &def);
    ks_boot_done(&b);
    if (r == -ENOMEM)
        return r;
    if (streq_ptr(def, newer))
        return 0;
    if (!opts->kernel && !opts->deb) {
        char *t = strdup(newer);
        if (!t)
            return -ENOMEM;
        free(p->target_release);
        p->target_release = t;
    }
    return ks_findings_add(&p->findings, "kernel.newer-not-default", KS_SEV_WARN,
                           "kswap apply (a trial boot of the newer kernel, the pinned one stays "
                           "the way back)",
                           "%s is installed but never boots: GRUB's default is %s, the kernel "
                           "kswap pinned",
                           newer, def ? def : pinned);
}
