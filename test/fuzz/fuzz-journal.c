/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The state journal parser: what parses formats, and the formatted text parses to itself. */
#include <stdint.h>

#include "lib/engine/journal.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_journal *j = NULL, *again = NULL;
    char *err = NULL, *text = NULL, *text2 = NULL;
    int r;

    r = ks_journal_parse((const char *)data, size, &j, &err);
    if (r < 0) {
        /* Every refusal explains itself (except running out of memory). */
        if (r != -ENOMEM && !err)
            abort();
        free(err);
        return 0;
    }
    if (ks_journal_format(j, &text) < 0)
        abort();
    if (ks_journal_parse(text, strlen(text), &again, NULL) != 0)
        abort();
    if (ks_journal_format(again, &text2) < 0 || !streq(text, text2))
        abort();
    free(text);
    free(text2);
    ks_journal_free(again);
    ks_journal_free(j);
    return 0;
}
