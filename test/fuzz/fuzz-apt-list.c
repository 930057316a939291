/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/repo/aptsource.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *const archives[] = {(char *)"http://deb.xanmod.org",
                                     (char *)"http://dl.xanmod.org/deb", NULL};
    ks_apt_sources s = {0};

    if (ks_aptsource_parse_list((const char *)data, size, "fuzz.list", &s) == 0)
        for (size_t i = 0; i < s.n; i++)
            if (ks_apt_source_is_archive(&s.v[i], archives) && s.v[i].line_first == 0)
                abort(); /* every entry knows its line */
    ks_apt_sources_done(&s);
    return 0;
}
