/* SPDX-License-Identifier: GPL-2.0-or-later */
/* apply's step "verify": the new kernel's module set proven with libkmod. */
#include "lib/engine/apply-steps.h"
#include "lib/kernel/verify.h"

static int run_verify(ks_run *x, ks_apply_ctx *a)
{
    const char *release = a->new;
    _cleanup_free_ char *err = NULL;
    ks_verify_result v = {0};
    int r;

    r = ks_run_begin(x, "verify", "proving the new kernel's module set with libkmod");
    if (r < 0)
        return ks_run_journal_error(x, r);
    r = ks_verify_run(x->root, x->c->config, &(ks_verify_opts){.release = release, .error = &err},
                      &v);
    if (r < 0)
        return ks_run_fail_step(x, "verify", r, "cannot verify %s: %s", release,
                                err ? err : strerror(-r));
    for (size_t i = 0; i < v.findings.n && r >= 0; i++)
        if (v.findings.v[i].severity != KS_SEV_OK)
            r = ks_findings_add(&x->r->findings, v.findings.v[i].id, v.findings.v[i].severity,
                                v.findings.v[i].remedy, "%s", v.findings.v[i].message);
    if (r >= 0 && ks_findings_worst(&v.findings) == KS_SEV_BLOCK) {
        ks_verify_result_done(&v);
        r = ks_run_fail_step(x, "verify", -EPERM,
                             "%s does not have what this node needs (see the findings); nothing is "
                             "armed, 'kswap rollback --purge' removes it",
                             release);
        x->r->status = KS_SWAP_REFUSED;
        return r;
    }
    ks_verify_result_done(&v);
    if (r >= 0)
        r = ks_journal_set_state(x->j, KS_STATE_VERIFIED);
    if (r >= 0)
        r = ks_run_done(x, "verify", "module set, BBR and initramfs checked");
    return r < 0 ? ks_run_journal_error(x, r) : 0;
}

static int describe_verify(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    (void)x;
    (void)a;
    return ks_dryrun_add_step(d, "verify", "module set, BBR and initramfs checked");
}

const ks_apply_step ks_step_verify = {
    .name = "verify",
    .reaches = KS_STATE_VERIFIED,
    .run = run_verify,
    .describe = describe_verify,
};
