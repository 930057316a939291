/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/repo/aptsource.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_apt_sources s = {0};

    if (ks_aptsource_parse_deb822((const char *)data, size, "fuzz.sources", &s) == 0)
        for (size_t i = 0; i < s.n; i++) {
            /* A stanza spans lines in order; an enabled one has all apt requires. */
            if (s.v[i].line_first == 0 || s.v[i].line_last < s.v[i].line_first)
                abort();
            if (s.v[i].enabled && (!s.v[i].types || !s.v[i].uris || !s.v[i].suites))
                abort();
            ks_apt_source_is_archive(&s.v[i], NULL);
        }
    ks_apt_sources_done(&s);
    return 0;
}
