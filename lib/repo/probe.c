/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/basic/fileio.h"
#include "lib/basic/spawn.h"
#include "lib/basic/string-table.h"
#include "lib/basic/util.h"
#include "lib/repo/packages-index.h"
#include "lib/repo/probe.h"

#define INDEX_MAX (512u * 1024 * 1024)
#define COMPLAINT_MAX 2048

static const char *const ks_repo_verdict_table[_KS_REPO_VERDICT_MAX] = {
    [KS_REPO_OK] = "ok",
    [KS_REPO_UNTRUSTED] = "untrusted",
    [KS_REPO_UNREACHABLE] = "unreachable",
    [KS_REPO_NO_INDEX] = "no-index",
    [KS_REPO_NO_PACKAGE] = "no-package",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_repo_verdict, ks_repo_verdict);

/* apt's words for a Release it does not trust (apt-pkg/acquire-item.cc, methods/gpgv.cc). */
static const char *const untrusted_words[] = {
    "GPG error",
    "is not signed",
    "NO_PUBKEY",
    "BADSIG",
    "EXPKEYSIG",
    "REVKEYSIG",
    "EXPSIG",
    "signatures were invalid",
    "signatures couldn't be verified",
    "Clearsigned file isn't valid",
    "OpenPGP signature verification failed",
    "is no longer signed",
};

/* apt's words for a repository it could not fetch, or a suite that is not there. */
static const char *const unreachable_words[] = {
    "does not have a Release file",
    "Failed to fetch",
    "Could not resolve",
    "Unable to connect",
    "Connection failed",
    "File not found",
    "404",
};

static bool line_has_any(const char *l, size_t n, const char *const *words, size_t n_words)
{
    for (size_t i = 0; i < n_words; i++)
        if (memmem(l, n, words[i], strlen(words[i])))
            return true;
    return false;
}

/* A line apt prints about a problem: "E: ...", "W: ...", "Err:N ..." and what follows Err. */
static bool complaint_line(const char *l, size_t n, bool after_err)
{
    return (n > 2 && (memcmp(l, "E:", 2) == 0 || memcmp(l, "W:", 2) == 0)) ||
           (n > 4 && memcmp(l, "Err:", 4) == 0) || (after_err && n > 1 && l[0] == ' ');
}

int ks_repo_apt_complaint(const char *output, ks_repo_verdict *ret_verdict, char **ret_lines)
{
    _cleanup_free_ char *lines = NULL;
    size_t pos = 0, n, len = output ? strlen(output) : 0, used = 0;
    bool untrusted = false, unreachable = false, after_err = false;
    const char *l;

    lines = malloc(COMPLAINT_MAX + 1);
    if (!lines)
        return -ENOMEM;
    lines[0] = '\0';
    while (ks_next_line(output, len, &pos, &l, &n)) {
        while (n > 0 && (l[n - 1] == '\r' || l[n - 1] == ' '))
            n--;
        /* apt rewrites its progress line with '\r': only the last part of a line counts */
        for (const char *cr; (cr = memchr(l, '\r', n));) {
            n -= (size_t)(cr + 1 - l);
            l = cr + 1;
        }
        if (!complaint_line(l, n, after_err)) {
            after_err = false;
            continue;
        }
        after_err = n > 4 && memcmp(l, "Err:", 4) == 0;
        untrusted = untrusted || line_has_any(l, n, untrusted_words, ARRAY_SIZE(untrusted_words));
        unreachable =
            unreachable || line_has_any(l, n, unreachable_words, ARRAY_SIZE(unreachable_words));
        while (n > 0 && *l == ' ') {
            l++;
            n--;
        }
        if (used + n + 2 < COMPLAINT_MAX) {
            if (used) {
                memcpy(lines + used, "; ", 2);
                used += 2;
            }
            memcpy(lines + used, l, n);
            used += n;
            lines[used] = '\0';
        }
    }
    /* A suite that is not there is "no Release file", which apt also calls insecure. */
    *ret_verdict = untrusted && !unreachable ? KS_REPO_UNTRUSTED
                   : unreachable             ? KS_REPO_UNREACHABLE
                   : untrusted               ? KS_REPO_UNTRUSTED
                                             : KS_REPO_OK;
    *ret_lines = used ? TAKE_PTR(lines) : NULL;
    return 0;
}

static int write_file(const char *dir, const char *name, const void *data, size_t len,
                      char **ret_path)
{
    _cleanup_free_ char *path = ks_asprintf("%s/%s", dir, name);
    _cleanup_close_ int fd = -EBADF;

    if (!path)
        return -ENOMEM;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    for (const char *p = data; len > 0;) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        len -= (size_t)w;
    }
    if (ret_path)
        *ret_path = TAKE_PTR(path);
    return 0;
}

static int make_dirs(const char *dir)
{
    static const char *const subdirs[] = {"lists", "lists/partial", "cache", "cache/archives",
                                          "cache/archives/partial"};
    /* apt fetches as its sandbox user _apt: the folders must be reachable by it. */
    if (chmod(dir, 0755) < 0)
        return -errno;
    for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
        _cleanup_free_ char *p = ks_asprintf("%s/%s", dir, subdirs[i]);
        if (!p)
            return -ENOMEM;
        if (mkdir(p, 0755) < 0)
            return -errno;
    }
    return 0;
}

/* Scans every Packages index apt left in lists/ for the package: apt's candidate is the highest
 * version of them all. */
static int scan_indexes(const char *dir, const char *package, ks_repo_probe_result *res,
                        size_t *ret_n_indexes)
{
    ks_packages_index_info all = {0};
    _cleanup_free_ char *lists = ks_asprintf("%s/lists", dir);
    _cleanup_closedir_ DIR *d = NULL;
    struct dirent *de;
    size_t n_indexes = 0;

    if (!lists)
        return -ENOMEM;
    d = opendir(lists);
    if (!d)
        return -errno;
    while ((de = readdir(d))) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        ks_packages_index_info info = {0};
        size_t len;
        int fd, r;

        if (!ks_endswith(de->d_name, "_Packages"))
            continue;
        path = ks_asprintf("%s/%s", lists, de->d_name);
        if (!path)
            return -ENOMEM;
        fd = ks_open_regular(path);
        if (fd < 0)
            return fd;
        r = ks_read_fd(fd, INDEX_MAX, &text, &len);
        close(fd);
        if (r < 0)
            return r;
        r = ks_packages_index_scan(text, len, package, &info);
        if (r < 0) {
            ks_packages_index_info_done(&all);
            return r;
        }
        n_indexes++;
        ks_packages_index_merge(&all, &info);
    }
    res->n_packages += all.n_packages;
    if (all.found) {
        free(res->version);
        free(res->release);
        res->version = all.version ? TAKE_PTR(all.version) : strdup("");
        res->release = TAKE_PTR(all.release);
    }
    ks_packages_index_info_done(&all);
    *ret_n_indexes = n_indexes;
    return 0;
}

static int remove_tree(const char *dir)
{
    char *argv[] = {(char *)"rm", (char *)"-rf", "--", (char *)dir, NULL};
    ks_spawn_result res = {0};
    int r = ks_spawn(argv, KS_SPAWN_OPTS(.timeout_ms = 60000), &res);
    ks_spawn_result_done(&res);
    return r;
}

static char *source_words(const ks_apt_takeover *t)
{
    _cleanup_free_ char *c = t->components ? ks_strv_join(t->components, " ") : NULL;
    return ks_asprintf("%s %s%s%s", t->uri ? t->uri : KS_APT_XANMOD_URI, t->suite, c ? " " : "",
                       strempty(c));
}

#define PROBE_STATUS_FD 3

static int run_update(const ks_repo_probe_opts *o, const char *dir, const char *sources,
                      ks_spawn_result *res)
{
    _cleanup_free_ char *opt_list = ks_asprintf("Dir::Etc::sourcelist=%s", sources),
                        *opt_lists = ks_asprintf("Dir::State::Lists=%s/lists", dir),
                        *opt_cache = ks_asprintf("Dir::Cache=%s/cache", dir);
    /* -1 is apt's own default: no status lines when nobody reads them. */
    const char *status_opt = o->on_status ? "APT::Status-Fd=3" /* PROBE_STATUS_FD */
                                          : "APT::Status-Fd=-1";
    if (!opt_list || !opt_lists || !opt_cache)
        return -ENOMEM;
    char *argv[] = {(char *)o->apt_get, (char *)"-q",
                    (char *)"-o",       (char *)status_opt,
                    (char *)"-o",       opt_list,
                    (char *)"-o",       (char *)"Dir::Etc::sourceparts=-",
                    (char *)"-o",       opt_lists,
                    (char *)"-o",       opt_cache,
                    (char *)"-o",       (char *)"Dir::Cache::pkgcache=",
                    (char *)"-o",       (char *)"Dir::Cache::srcpkgcache=",
                    (char *)"-o",       (char *)"Acquire::GzipIndexes=false",
                    (char *)"-o",       (char *)"APT::Get::List-Cleanup=0",
                    (char *)"update",   NULL};
    return ks_spawn(argv,
                    KS_SPAWN_OPTS(.timeout_ms = o->timeout_ms, .env = o->env,
                                  .status_fd = o->on_status ? PROBE_STATUS_FD : -EBADF,
                                  .on_status = o->on_status, .status_userdata = o->status_userdata),
                    res);
}

int ks_repo_probe(const ks_repo_probe_opts *o, ks_repo_probe_result *ret)
{
    _cleanup_free_ char *dir = NULL, *keyring = NULL, *text = NULL, *sources = NULL, *where = NULL,
                        *complaint = NULL;
    ks_repo_probe_result result = {0};
    ks_spawn_result res = {0};
    ks_repo_verdict v;
    size_t n_indexes = 0;
    const char *tmp = o->tmp_dir ? o->tmp_dir : getenv("TMPDIR");
    int r;

    if (!o->apt_get || !o->source || !o->package)
        return -EINVAL;
    dir = ks_asprintf("%s/kswap-repo-probe.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    where = source_words(o->source);
    if (!dir || !where)
        return -ENOMEM;
    if (!mkdtemp(dir)) {
        r = -errno;
        ret->reason = ks_asprintf("cannot make a temporary folder in %s: %s",
                                  tmp && *tmp ? tmp : "/tmp", strerror(-r));
        return r;
    }
    r = make_dirs(dir);
    if (r >= 0)
        r = write_file(dir, "keyring.gpg", o->source->keyring, o->source->keyring_len, &keyring);
    if (r >= 0)
        r = ks_aptsource_text(o->source, keyring, &text);
    if (r >= 0)
        r = write_file(dir, "kswap-probe.sources", text, strlen(text), &sources);
    if (r < 0) {
        result.reason =
            ks_asprintf("cannot prepare the repository check in %s: %s", dir, strerror(-r));
        goto out;
    }

    r = run_update(o, dir, sources, &res);
    if (r < 0) {
        result.reason = ks_asprintf("cannot run '%s': %s", o->apt_get, strerror(-r));
        goto out;
    }
    result.apt_output = TAKE_PTR(res.output);
    r = ks_repo_apt_complaint(result.apt_output, &v, &complaint);
    if (r < 0)
        goto out;
    if (res.timed_out) {
        r = -ETIMEDOUT;
        result.reason = ks_asprintf("apt-get update of %s did not finish in time (apt_timeout)%s%s",
                                    where, complaint ? ": " : "", strempty(complaint));
        goto out;
    }
    if (v == KS_REPO_OK && !ks_spawn_succeeded(&res))
        v = KS_REPO_UNREACHABLE;
    if (v != KS_REPO_OK) {
        result.verdict = v;
        result.reason = ks_asprintf(
            "%s: %s", where,
            complaint
                ? complaint
                : (complaint = ks_asprintf("apt-get update failed (exit %d)", res.exit_code)));
        goto out;
    }
    r = scan_indexes(dir, o->package, &result, &n_indexes);
    if (r < 0) {
        result.reason = ks_asprintf("cannot read the package index apt fetched: %s", strerror(-r));
        goto out;
    }
    if (n_indexes == 0) {
        result.verdict = KS_REPO_NO_INDEX;
        result.reason = ks_asprintf("%s: apt fetched no package index for amd64 (is the suite or "
                                    "a component misnamed?)%s%s",
                                    where, complaint ? ": " : "", strempty(complaint));
    } else if (!result.version) {
        result.verdict = KS_REPO_NO_PACKAGE;
        result.reason = ks_asprintf("%s does not carry %s (%zu packages in its index)", where,
                                    o->package, result.n_packages);
    }
    r = 0;
out:
    ks_spawn_result_done(&res);
    (void)remove_tree(dir);
    if (r < 0 && !result.reason)
        result.reason = ks_asprintf("the repository check failed: %s", strerror(-r));
    *ret = result;
    return r;
}

void ks_repo_probe_result_done(ks_repo_probe_result *r)
{
    free(r->reason);
    free(r->apt_output);
    free(r->version);
    free(r->release);
    *r = (ks_repo_probe_result){0};
}
