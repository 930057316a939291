/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <limits.h>

#include "grub/timeouts.h"

#include "grub/eval.h"
#include "grub/grubenv.h"
#include "lib/basic/util.h"

/* Runs the script at top level as one boot does and returns its countdown (or -errno). */
static int countdown(const ks_grub_cfg *cfg, const ks_grubenv *env, bool efi, int *ret)
{
    const ks_grub_eval_opts opts = {.env = env, .env_writable = true, .efi = efi};
    _cleanup_grub_eval_ ks_grub_eval *ev = NULL;
    int r;

    r = ks_grub_eval_new(cfg, &opts, &ev);
    if (r < 0)
        return r;
    r = ks_grub_eval_run(ev);
    if (r < 0)
        return r;
    *ret = ks_grub_eval_timeout(ev);
    return 0;
}

int ks_grub_timeouts_run(const ks_grub_cfg *cfg, ks_grub_timeouts *ret)
{
    _cleanup_grubenv_ ks_grubenv *plain = NULL, *failed = NULL;
    ks_grub_timeouts t;
    int r;

    assert(cfg);
    assert(ret);
    /* grub-mkconfig's header loads the block when it exists: give it one on every boot. */
    r = ks_grubenv_new(&plain);
    if (r >= 0)
        r = ks_grubenv_new(&failed);
    if (r >= 0)
        r = ks_grubenv_set(failed, "recordfail", "1");
    if (r >= 0)
        r = countdown(cfg, plain, false, &t.normal);
    if (r >= 0)
        r = countdown(cfg, failed, false, &t.after_failure);
    if (r >= 0)
        r = countdown(cfg, plain, true, &t.efi);
    if (r < 0)
        return r;
    if (t.after_failure == t.normal)
        t.after_failure = INT_MIN;
    if (t.efi == t.normal)
        t.efi = INT_MIN;
    *ret = t;
    return 0;
}
