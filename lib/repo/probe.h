/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lib/repo/aptsource.h"

/*
 * Before kswap writes anything, the repository is tried the way apt will use it: the source
 * kswap would write and its keyring go into a private folder, `apt-get update` fetches into
 * private lists there (the system's sources, lists and caches are not touched), and the
 * package index must name the package apply will install. A repository whose Release apt
 * refuses (unsigned, signed by another key, expired) or that does not carry the package is
 * refused here, with apt's own words, before any change to the system.
 */
typedef struct ks_repo_probe_opts {
    const char *apt_get; /* the apt-get to run (a path) */
    char *const *env;    /* extra environment for it */
    unsigned timeout_ms; /* for apt-get update */
    /* Optional: apt's status lines (APT::Status-Fd, lib/repo/apt-status.h) as they come, so
     * the caller can show the download's progress instead of apt's raw output. */
    void (*on_status)(void *userdata, const char *data, size_t n);
    void *status_userdata;
    const ks_apt_takeover *source;
    const char *package; /* must be in the index */
    const char *tmp_dir; /* where the private folder is made; NULL: $TMPDIR or /tmp */
} ks_repo_probe_opts;

typedef enum ks_repo_verdict {
    KS_REPO_OK,
    KS_REPO_UNTRUSTED,   /* apt refused the Release's signature */
    KS_REPO_UNREACHABLE, /* apt could not fetch it */
    KS_REPO_NO_INDEX,    /* fetched, but no package index for the suite/components */
    KS_REPO_NO_PACKAGE,  /* the index does not name the package */
    _KS_REPO_VERDICT_MAX,
    _KS_REPO_VERDICT_INVALID = -EINVAL,
} ks_repo_verdict;

typedef struct ks_repo_probe_result {
    ks_repo_verdict verdict;
    char *reason;      /* one line for the operator, with apt's words; NULL when OK */
    char *apt_output;  /* what apt-get update printed (bounded) */
    size_t n_packages; /* packages in the fetched indexes */
    char *version;     /* apt's candidate: the package's highest version in the indexes */
    /* The kernel release the candidate brings (lib/repo/packages-index.h: its own name, or the
     * linux-image-RELEASE its Depends names); NULL when the index does not say. */
    char *release;
} ks_repo_probe_result;

/*
 * 0 with ret->verdict (KS_REPO_OK or why not); negative errno when the probe itself could not
 * run (no temporary folder, apt-get not startable, -ETIMEDOUT), ret->reason saying why.
 */
int ks_repo_probe(const ks_repo_probe_opts *o, ks_repo_probe_result *ret);
void ks_repo_probe_result_done(ks_repo_probe_result *r);
const char *ks_repo_verdict_to_string(ks_repo_verdict v);

/*
 * The lines of apt-get update's output that say why a repository is refused (GPG errors, "is
 * not signed", fetch errors), joined with "; " (NULL when none), and which kind they are.
 * Exposed for tests: apt's words are the contract.
 */
int ks_repo_apt_complaint(const char *output, ks_repo_verdict *ret_verdict, char **ret_lines);
