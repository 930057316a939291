/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs the built-in acceptance checks of one [accept] key against this machine ("/"), once,
 * for the live tests: accept-check-tool KEY VALUE... (e.g. listen tcp:8080); or, with
 * --snapshot PREFIX, takes the snapshot of what runs with the real programs and runs the checks
 * of its items whose ids start with PREFIX. Prints one line per check; exit 0 when all passed, 1
 * when one failed, 2 on errors.
 */
#include <stdio.h>

#include "checks/check.h"
#include "checks/snapshot.h"
#include "lib/basic/config.h"
#include "lib/host/kernels.h"
#include "lib/basic/util.h"

/* The check function of the kind whose item key is key; NULL for none. */
static ks_check_fn key_run(const char *key)
{
    size_t n;
    const ks_check_kind *const *kinds = ks_check_kinds(&n);

    for (size_t i = 0; i < n; i++)
        if (kinds[i]->item_key && streq(kinds[i]->item_key, key))
            return kinds[i]->run;
    return NULL;
}

int main(int argc, char **argv)
{
    _cleanup_(ks_config_freep) ks_config *cfg = ks_config_new();
    _cleanup_free_ char *text = NULL, *err = NULL, *kernel = NULL;
    _cleanup_root_ ks_root *root = NULL;
    ks_checklist all = {0}, l = {0};
    int r, ret = 0;

    if (argc < 3 || !cfg) {
        fprintf(stderr, "usage: accept-check-tool KEY VALUE... | --snapshot PREFIX\n");
        return 2;
    }
    text = ks_asprintf("[accept]\n%s =", argv[1]);
    for (int i = 2; text && i < argc; i++) {
        char *t = ks_asprintf("%s %s", text, argv[i]);
        free(text);
        text = t;
    }
    if (!text || ks_checks_register_config() < 0 || ks_root_open("/", &root) < 0 ||
        ks_running_kernel(root, &kernel) < 0)
        return 2;
    if (streq(argv[1], "--snapshot")) {
        ks_run_snapshot s = {0};
        r = ks_run_snapshot_take(&(ks_check_ctx){.root = root, .kernel = kernel}, &s);
        if (r >= 0)
            r = ks_checklist_add_snapshot(&all, &s, NULL);
        ks_run_snapshot_done(&s);
        if (r < 0) {
            fprintf(stderr, "cannot take the snapshot: %s\n", strerror(-r));
            return 2;
        }
    } else if (ks_config_parse(cfg, text, "command line", &err) < 0 ||
               ks_checklist_from_config(root, cfg, &all, &err) < 0) {
        fprintf(stderr, "%s\n", err ? err : "cannot build the checklist");
        return 2;
    }
    /* Only the built-in checks of the key: not this machine's own checks.d scripts, nor the
     * checks its own settings add (congestion-control from its sysctl: a quiet machine has no
     * connection to show). */
    for (size_t i = 0; i < all.n; i++)
        if (!ks_startswith(all.v[i].id, "script:") &&
            (streq(argv[1], "--snapshot") ? !!ks_startswith(all.v[i].id, argv[2])
                                          : all.v[i].run == key_run(argv[1])) &&
            ks_checklist_add(&l, "x", all.v[i].arg, true, all.v[i].run) >= 0) {
            free(l.v[l.n - 1].id);
            l.v[l.n - 1].id = strdup(all.v[i].id);
        }
    r = ks_checks_run(&l, &(ks_check_ctx){.root = root, .kernel = kernel},
                      &(ks_runner_opts){.timeout_ms = 0});
    if (r < 0)
        return 2;
    for (size_t i = 0; i < l.n; i++) {
        printf("%s %s: %s\n", ks_check_status_to_string(l.v[i].status), strempty(l.v[i].id),
               strempty(l.v[i].detail));
        if (l.v[i].status != KS_CHECK_PASS)
            ret = 1;
    }
    ks_checklist_done(&all);
    ks_checklist_done(&l);
    return ret;
}
