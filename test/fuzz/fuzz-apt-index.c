/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/util.h"
#include "lib/repo/packages-index.h"
#include "lib/repo/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A Packages index from a repository, and apt's output about it: both untrusted. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    _cleanup_free_ char *text = malloc(size + 1), *lines = NULL;
    ks_packages_index_info info = {0};
    ks_repo_verdict v;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (ks_packages_index_scan(text, size, "linux-xanmod-lts-x64v3", &info) == 0) {
        /* a version only for a package that was found, never more stanzas than lines */
        if ((info.version && !info.found) || info.n_packages > size)
            abort();
        ks_packages_index_info_done(&info);
    }
    {
        ks_packages_stanzas l = {0};
        if (ks_packages_index_find(text, size, "linux-xanmod-lts-x64v3", &l) == 0)
            for (size_t i = 0; i < l.n; i++) {
                char *rel = NULL;
                /* a release is a non-empty part of the field, never more */
                if (!l.v[i].version ||
                    (l.v[i].depends && ks_packages_depends_image(l.v[i].depends, &rel) > 0 &&
                     (!rel[0] || strlen(rel) > strlen(l.v[i].depends))))
                    abort();
                free(rel);
            }
        ks_packages_stanzas_done(&l);
    }
    if (ks_repo_apt_complaint(text, &v, &lines) == 0 &&
        (v < 0 || v >= _KS_REPO_VERDICT_MAX || (lines && strlen(lines) > 2048)))
        abort();
    return 0;
}
