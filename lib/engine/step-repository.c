/* SPDX-License-Identifier: GPL-2.0-or-later */
/* apply's step "repository": the key, the repository check, the deb822 source. */
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "lib/basic/transaction.h"
#include "lib/engine/apply-steps.h"
#include "lib/repo/aptsource.h"
#include "lib/repo/keyring.h"
#include "lib/repo/probe.h"

#include "build-config.h" /* KSWAP_DATADIR */

/*
 * The key kswap ships: beside a kswap run from its build folder (data/ of the build, where
 * meson copies it: build/cmd/kswap finds build/data/), else where the package installed it
 * (KSWAP_DATADIR). An installed /usr/sbin/kswap has no /usr/data: the installed key counts.
 */
static const char *shipped_key(void)
{
    static char path[PATH_MAX];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;

    if (n > 0) {
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(path, sizeof(path), "%s/../data/xanmod-archive-keyring.asc", exe) <
                    (int)sizeof(path) &&
                access(path, R_OK) == 0)
                return path;
        }
    }
    return KSWAP_DATADIR "/" KS_XANMOD_KEY_DATA_NAME;
}

static const char *key_path(const ks_apply_opts *o)
{
    const char *p = o->key_path;
    if (!p && o->common.config)
        p = ks_config_get_string(o->common.config, "repository", "key", NULL);
    return p ? p : shipped_key();
}

/*
 * Tries the repository before anything changes (lib/repo/probe.h): apt-get update into a
 * private folder with the source and keyring kswap is about to write, and the index must name
 * the package. A refusal is a failed step with apt's words; nothing was written.
 */
static int probe_repository(ks_run *x, const ks_apt_takeover *source, const char *package)
{
    _cleanup_free_ char *path = NULL, *root_env = NULL;
    char *env[6] = {(char *)"DEBIAN_FRONTEND=noninteractive",
                    (char *)KS_APT_ENV_LC_ALL,
                    (char *)KS_APT_ENV_LANGUAGE,
                    NULL,
                    NULL,
                    NULL};
    ks_repo_probe_result pr = {0};
    ks_apt_watch w = KS_APT_WATCH(x, "repository");
    bool refused;
    int r;

    if (!package)
        return ks_run_fail_step(
            x, "repository", -ENOENT,
            "no XanMod package fits this CPU (see 'kswap plan'); nothing to install");
    r = ks_run_find_program(x, "apt-get", &path);
    if (r == -EPERM)
        return ks_run_fail_step(x, "repository", r,
                                "refusing to run this machine's 'apt-get' for the root '%s': put a "
                                "program that works on that root first on PATH",
                                x->root_abs);
    if (r < 0)
        return ks_run_fail_step(x, "repository", r, "cannot find 'apt-get' on PATH");
    if (x->root_abs) {
        root_env = ks_asprintf("KSWAP_ROOT=%s", x->root_abs);
        if (!root_env)
            return -ENOMEM;
        env[3] = root_env;
    }
    ks_run_progress(x, "repository", "checking %s %s with apt-get update into a private folder",
                    source->uri, source->suite);
    ks_run_trace(x, "run",
                 "%s update (its sources, lists and cache in a private folder under $TMPDIR)",
                 path);
    r = ks_repo_probe(&(ks_repo_probe_opts){.apt_get = path,
                                            .env = env,
                                            .timeout_ms = ks_run_timeout_ms(x, "apt_timeout", 1800),
                                            .on_status = ks_apt_watch_bytes,
                                            .status_userdata = &w,
                                            .source = source,
                                            .package = package},
                      &pr);
    if (r >= 0)
        ks_apt_watch_summary(&w);
    if (r >= 0 && pr.verdict == KS_REPO_OK) {
        ks_run_progress(x, "repository", "%s %s carries %s %s (%zu packages)", source->uri,
                        source->suite, package, strempty(pr.version), pr.n_packages);
        ks_repo_probe_result_done(&pr);
        return 0;
    }
    free(x->r->output);
    x->r->output = TAKE_PTR(pr.apt_output);
    refused = r >= 0;
    r = ks_run_fail_step(
        x, "repository",
        r < 0                              ? r
        : pr.verdict == KS_REPO_NO_PACKAGE ? -ENOENT
                                           : -EBADMSG,
        "%s%s; nothing was changed",
        r < 0                               ? ""
        : pr.verdict == KS_REPO_UNTRUSTED   ? "apt refuses the repository's signature: "
        : pr.verdict == KS_REPO_UNREACHABLE ? "apt cannot fetch the repository: "
        : pr.verdict == KS_REPO_NO_INDEX    ? "the repository has no index for this machine: "
                                            : "the repository lacks the package: ",
        strempty(pr.reason));
    /* apt's refusal of the repository is a verdict on it, not a failure of kswap */
    if (refused)
        x->r->status = KS_SWAP_REFUSED;
    ks_repo_probe_result_done(&pr);
    return r;
}

/*
 * The key, the repository check and the plan of the apt source: everything of the repository
 * step before its first write (apply writes *changes, apply --dry-run shows them).
 */
static int plan_repository(ks_run *x, const ks_apply_opts *o, const ks_plan *plan,
                           ks_transaction *changes)
{
    _cleanup_free_ void *keyring = NULL;
    const char *fpr = o->pinned_fpr;
    ks_key_info info = {0};
    size_t len = 0;
    int r;

    if (!plan->xanmod_suite)
        return ks_run_fail_step(
            x, "repository", -ENOENT,
            "XanMod's archive has no suite for this OS; give --deb FILE, or name a "
            "mirror's suite in kswap.conf [repository] suite");
    if (!fpr && o->common.config)
        fpr = ks_config_get_string(o->common.config, "repository", "fingerprint", NULL);
    r = ks_keyring_export_binary(key_path(o), fpr, time(NULL), &info, &keyring, &len);
    if (r < 0) {
        r = ks_run_fail_step(x, "repository", r, "the repository key '%s' is refused: %s",
                             key_path(o), info.reason ? info.reason : strerror(-r));
        ks_key_info_done(&info);
        return r;
    }
    if (info.expires_soon)
        (void)ks_findings_add(&x->r->findings, "repo.key-expires", KS_SEV_WARN,
                              "get XanMod's renewed key and pass it with --key FILE",
                              "the repository key %s expires within 30 days",
                              strempty(info.fingerprint));
    ks_key_info_done(&info);

    {
        /* A mirror's own entries are taken over as XanMod's are: apt sees one Signed-By. */
        char *const archives[] = {(char *)KS_APT_XANMOD_URI, plan->repo_uri, NULL};
        const ks_apt_takeover source = {.archive_uris = archives,
                                        .uri = plan->repo_uri,
                                        .suite = plan->xanmod_suite,
                                        .components = plan->repo_components,
                                        .keyring = keyring,
                                        .keyring_len = len};
        r = probe_repository(x, &source, o->package ? o->package : plan->target_package);
        if (r < 0)
            return r;
        r = ks_aptsource_plan(x->root, &source, changes);
    }
    if (r < 0)
        return ks_run_fail_step(x, "repository", r, "cannot plan the apt source: %s", strerror(-r));
    return 0;
}

static int run_repository(ks_run *x, ks_apply_ctx *a)
{
    _cleanup_transaction_ ks_transaction changes = {0};
    int r;

    r = ks_run_begin(x, "repository", "checking the XanMod key and the apt source");
    if (r < 0)
        return ks_run_journal_error(x, r);
    r = plan_repository(x, a->o, &a->plan, &changes);
    if (r < 0)
        return r;
    /* The journal holds every file's previous bytes before any of them changes. */
    r = ks_journal_note_transaction(x->j, &changes);
    if (r < 0)
        return ks_run_journal_error(x, r);
    for (size_t i = 0; i < changes.n; i++)
        ks_run_trace(x, ks_file_change_kind_to_string(changes.v[i].kind), "/%s", changes.v[i].path);
    r = ks_transaction_apply(x->root, &changes);
    if (r < 0)
        return ks_run_fail_step(x, "repository", r, "cannot write the apt source: %s",
                                strerror(-r));
    r = ks_run_done(x, "repository", "etc/apt/sources.list.d/xanmod.sources");
    return r < 0 ? ks_run_journal_error(x, r) : 0;
}

static int describe_repository(ks_run *x, ks_apply_ctx *a, ks_dryrun *d)
{
    _cleanup_transaction_ ks_transaction changes = {0};
    char *probe[] = {(char *)"apt-get", (char *)"update", (char *)"(private folder)", NULL};
    int r;

    r = plan_repository(x, a->o, &a->plan, &changes);
    if (r < 0)
        return r;
    r = ks_dryrun_add_program(d, "repository", probe, true);
    if (r >= 0)
        r = ks_dryrun_add_transaction(d, &changes);
    if (r >= 0)
        r = ks_dryrun_add_step(d, "repository", KS_APT_SOURCE_PATH);
    return r;
}

static bool wanted_repository(const ks_apply_ctx *a)
{
    return a->repository;
}

/* The repository first: its check (apt-get update into a private folder) refuses a repository
 * apt would refuse before GRUB or anything else is touched. */
const ks_apply_step ks_step_repository = {
    .name = "repository",
    .reaches = _KS_STATE_INVALID, /* the journal stays idle until prepare is done */
    .wanted = wanted_repository,
    .run = run_repository,
    .describe = describe_repository,
};
