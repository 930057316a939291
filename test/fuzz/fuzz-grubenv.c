/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The grubenv reader and editor: what parses stays a valid 1024-byte block after edits. */
#include <stdint.h>

#include "grub/grubenv.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_grubenv *e = NULL, *again = NULL;

    if (ks_grubenv_parse((const char *)data, size, &e) < 0)
        return 0;
    ks_grubenv_set(e, "next_entry", "a>b\\c\nd");
    ks_grubenv_unset(e, "recordfail");
    for (size_t i = 0; i < ks_grubenv_count(e); i++)
        ks_grubenv_set(e, ks_grubenv_name(e, i), "");
    if (ks_grubenv_parse(ks_grubenv_data(e), KS_GRUBENV_SIZE, &again) != 0)
        abort(); /* an edit must never break the block */
    ks_grubenv_free(again);
    ks_grubenv_free(e);
    return 0;
}
