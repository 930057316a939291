/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/repo/apt-status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(void *userdata, const ks_apt_status *s)
{
    size_t *n = userdata;
    (*n)++;
    if (s->kind < 0 || s->kind >= _KS_APT_STATUS_KIND_MAX || !s->subject || !s->message ||
        (s->kind != KS_APT_STATUS_MEDIA_CHANGE && (s->percent < 0 || s->percent > 100)) ||
        s->phase < KS_APT_PHASE_NONE || s->phase >= _KS_APT_PHASE_MAX)
        abort();
    if (s->kind == KS_APT_STATUS_DL && s->phase != KS_APT_PHASE_DOWNLOAD)
        abort();
}

/* What apt writes to APT::Status-Fd: another program's bytes, cut anywhere. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_apt_status_stream st = {0};
    ks_apt_status s;
    size_t n = 0, half = size / 2;

    if (ks_apt_status_parse((const char *)data, size, &s) == 0) {
        check(&n, &s);
        ks_apt_status_done(&s);
    }
    n = 0;
    ks_apt_status_feed(&st, (const char *)data, half, check, &n);
    ks_apt_status_feed(&st, (const char *)data + half, size - half, check, &n);
    if (n > st.n_lines || st.n_bad > st.n_lines)
        abort();
    return 0;
}
