/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <stdint.h>

#include "lib/basic/fileio.h"
#include "lib/engine/journal.h"
#include "lib/engine/kernel-list.h"
#include "lib/engine/plan-newer.h"
#include "lib/host/dpkg.h"
#include "lib/host/osrelease.h"
#include "lib/repo/packages-index.h"

#define LISTS_DIR "var/lib/apt/lists"
/* XanMod's Packages index is about 100 KiB; a mirror's that carries more stays far below. */
#define INDEX_MAX (64u * 1024 * 1024)

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

void ks_update_done(ks_update *u)
{
    free(u->current);
    free(u->package);
    free(u->newest);
    free(u->package_version);
    free(u->seen_in);
    free(u->listed);
    *u = (ks_update){0};
}

static bool is_xanmod(const char *release)
{
    return release && strstr(release, "xanmod");
}

/* The node's kernel (see the header); NULL when there is no day two. */
static char *node_kernel(const ks_root *root)
{
    _cleanup_free_ char *jerr = NULL, *running = NULL;
    _cleanup_journal_ ks_journal *j = NULL;
    ks_state s;

    if (ks_journal_load(root, &j, &jerr) < 0)
        return NULL;
    s = ks_journal_state(j);
    if (s == KS_STATE_PINNED)
        return ks_journal_get(j, KS_JF_NEW_KERNEL) ? strdup(ks_journal_get(j, KS_JF_NEW_KERNEL))
                                                   : NULL;
    if (s != KS_STATE_IDLE && s != KS_STATE_ROLLED_BACK)
        return NULL;
    if (ks_running_kernel(root, &running) < 0 || !is_xanmod(running))
        return NULL;
    return TAKE_PTR(running);
}

/* The installed metapackage of a branch, else the LTS one of the kernel's build level. */
static char *node_package(const ks_root *root, const char *kernel)
{
    static const char *const metas[] = {
        "linux-xanmod-lts-x64v3", "linux-xanmod-lts-x64v2", "linux-xanmod-x64v3",
        "linux-xanmod-x64v2",     "linux-xanmod-lts-x64v1",
    };
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (ks_root_read_file(root, "var/lib/dpkg/status", 256u * 1024 * 1024, &text, &len) >= 0)
        for (size_t i = 0; i < ARRAY_SIZE(metas); i++) {
            bool installed = false;
            if (ks_dpkg_status_has(text, len, metas[i], &installed) >= 0 && installed)
                return strdup(metas[i]);
        }
    if (kernel && strstr(kernel, "-x64v2-"))
        return strdup("linux-xanmod-lts-x64v2");
    if (kernel && strstr(kernel, "-x64v3-"))
        return strdup("linux-xanmod-lts-x64v3");
    return NULL;
}

/*
 * The release the highest version of package in the source's lists depends on: 1 with
 * *ret_release, *ret_version and *ret_file (the index, absolute), 0 when the lists do not have
 * it. An index that cannot be read is skipped: apt's lists are apt's business.
 */
static int newest_in_lists(const ks_root *root, const char *package, const char *uri,
                           const char *suite, char **ret_release, char **ret_version,
                           char **ret_file)
{
    _cleanup_free_ char *prefix = ks_apt_lists_prefix(uri, suite), *file = NULL;
    _cleanup_strv_free_ char **names = NULL;
    _cleanup_(ks_packages_stanzas_done) ks_packages_stanzas list = {0};
    size_t best = SIZE_MAX;
    int r;

    if (!prefix)
        return -ENOMEM;
    if (ks_root_list_dir(root, LISTS_DIR, &names) < 0)
        return 0;
    for (char **n = names; *n; n++) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len = 0, before = list.n;

        if (!ks_startswith(*n, prefix) || !ks_endswith(*n, "_Packages"))
            continue;
        path = ks_asprintf("%s/%s", LISTS_DIR, *n);
        if (!path)
            return -ENOMEM;
        if (ks_root_read_file(root, path, INDEX_MAX, &text, &len) < 0)
            continue;
        r = ks_packages_index_find(text, len, package, &list);
        if (r < 0)
            return r;
        for (size_t i = before; i < list.n; i++)
            if (best == SIZE_MAX ||
                ks_release_compare(list.v[i].version, list.v[best].version) > 0) {
                best = i;
                free(file);
                file = ks_asprintf("/%s", path);
                if (!file)
                    return -ENOMEM;
            }
    }
    if (best == SIZE_MAX || !list.v[best].depends)
        return 0;
    r = ks_packages_depends_image(list.v[best].depends, ret_release);
    if (r <= 0)
        return r;
    *ret_version = strdup(list.v[best].version);
    if (!*ret_version) {
        free(*ret_release);
        return -ENOMEM;
    }
    *ret_file = TAKE_PTR(file);
    return 1;
}

/* The newest installed kernel of the XanMod flavour of kernel, NULL when none. */
static const char *newest_installed(const ks_kernels *k, const char *kernel)
{
    _cleanup_free_ char *flavour = is_xanmod(kernel) ? ks_kernel_flavour(kernel) : NULL;

    if (!flavour)
        return NULL;
    /* Newest first: the first of the flavour. */
    for (size_t i = 0; i < k->n; i++) {
        _cleanup_free_ char *f = ks_kernel_flavour(k->v[i].release);
        if (streq_ptr(f, flavour))
            return k->v[i].release;
    }
    return NULL;
}

int ks_update_check(const ks_root *root, const ks_update_opts *o, ks_update *ret)
{
    _cleanup_(ks_update_done) ks_update u = {0};
    _cleanup_free_ char *listed = NULL, *def = NULL, *running = NULL;
    ks_kernels own = {0};
    const ks_kernels *k = o->kernels;
    const char *installed;
    ks_boot b = {0};
    int r;

    assert(root);
    assert(ret);
    u.current = node_kernel(root);
    if (!u.current)
        goto done;
    u.package = o->package ? strdup(o->package) : node_package(root, u.current);
    if (!k) {
        r = ks_kernels_list(root, &own);
        if (r < 0 && r != -ENOENT)
            return r;
        k = &own;
    }
    if (u.package && o->suite) {
        r = newest_in_lists(root, u.package, o->repo_uri ? o->repo_uri : KS_REPOSITORY_DEFAULT_URI,
                            o->suite, &listed, &u.package_version, &u.seen_in);
        if (r < 0)
            goto fail;
        if (listed && !(u.listed = strdup(listed))) {
            r = -ENOMEM;
            goto fail;
        }
    }
    installed = newest_installed(k, u.current);
    if (installed && (!listed || ks_release_compare(installed, listed) > 0)) {
        free(listed);
        free(u.package_version);
        free(u.seen_in);
        u.package_version = NULL;
        listed = strdup(installed);
        u.seen_in = ks_asprintf("/boot/vmlinuz-%s", installed);
        if (!listed || !u.seen_in) {
            r = -ENOMEM;
            goto fail;
        }
    }
    if (!listed || ks_release_compare(listed, u.current) <= 0)
        goto done;
    /* Swapped to already (GRUB starts it): no update, whatever the journal says. */
    if (ks_boot_load(root, &b, NULL) >= 0) {
        r = ks_boot_default_kernel(&b, &def);
        ks_boot_done(&b);
        if (r == -ENOMEM)
            goto fail;
    }
    if (streq_ptr(def, listed))
        goto done;
    /* It runs already (a pin --force of an older kernel, the reboot still to come): apply has
     * nothing to swap to, so it is no update either. */
    if (ks_running_kernel(root, &running) >= 0 && streq(running, listed))
        goto done;
    u.installed = ks_kernels_find(k, listed) != NULL;
    u.newest = TAKE_PTR(listed);
done:
    ks_kernels_done(&own);
    *ret = TAKE_STRUCT(u);
    return 0;
fail:
    ks_kernels_done(&own);
    return r;
}

int ks_plan_newer_xanmod(const ks_root *root, const ks_plan_opts *opts, ks_plan *p)
{
    const char *cmd = opts->apply_command ? opts->apply_command : "kswap apply";
    int r;

    assert(root);
    assert(p);
    r = ks_update_check(root,
                        &(ks_update_opts){.package = opts->branch_given ? p->target_package : NULL,
                                          .repo_uri = p->repo_uri,
                                          .suite = p->xanmod_suite,
                                          .kernels = &p->kernels},
                        &p->update);
    if (r < 0 || !p->update.newest)
        return r;
    if (!opts->kernel && !opts->deb) {
        char *t = strdup(p->update.newest),
             *pkg = p->update.package ? strdup(p->update.package) : NULL;
        if (!t || (p->update.package && !pkg)) {
            free(t);
            free(pkg);
            return -ENOMEM;
        }
        free(p->target_release);
        p->target_release = t;
        if (pkg) {
            free(p->target_package);
            p->target_package = pkg;
        }
        p->target_installed = p->update.installed;
    }
    if (p->update.installed)
        return ks_findings_add(&p->findings, "kernel.newer-not-default", KS_SEV_WARN, cmd,
                               "%s is installed but never boots: GRUB's default is %s, the kernel "
                               "kswap pinned; '%s' boots it once on trial, %s stays the way back",
                               p->update.newest, p->update.current, cmd, p->update.current);
    return ks_findings_add(&p->findings, "kernel.update-available", KS_SEV_WARN, cmd,
                           "%s %s brings %s (in %s); the node runs %s; '%s' installs it and boots "
                           "it once on trial, %s stays the way back",
                           p->update.package, strempty(p->update.package_version), p->update.newest,
                           p->update.seen_in, p->update.current, cmd, p->update.current);
}

int ks_update_check_node(const ks_root *root, const ks_config *cfg, ks_update *ret)
{
    const char *uri = cfg ? ks_config_get_string(cfg, "repository", "uri", NULL) : NULL;
    const char *suite = cfg ? ks_config_get_string(cfg, "repository", "suite", NULL) : NULL;
    ks_os_release os = {0};
    bool supported;
    int r;

    assert(root);
    assert(ret);
    if (!suite && ks_os_release_load(root, &os, NULL) >= 0)
        suite = ks_xanmod_suite(os.id, os.version_id,
                                os.version_codename ? os.version_codename : os.ubuntu_codename,
                                &supported);
    r = ks_update_check(root, &(ks_update_opts){.repo_uri = uri, .suite = suite}, ret);
    ks_os_release_done(&os);
    return r;
}
