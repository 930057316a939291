/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The command log parser: what parses formats, and the formatted text parses to itself. */
#include <stdint.h>

#include "lib/basic/util.h"
#include "lib/engine/command-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_command_log h = {0}, again = {0};
    char *err = NULL, *text = NULL, *text2 = NULL;
    int r;

    r = ks_command_log_parse((const char *)data, size, &h, &err);
    if (r < 0) {
        /* Every refusal explains itself (except running out of memory). */
        if (r != -ENOMEM && !err)
            abort();
        free(err);
        return 0;
    }
    if (ks_command_log_format(&h, &text) < 0)
        abort();
    if (ks_command_log_parse(text, strlen(text), &again, NULL) != 0)
        abort();
    if (ks_command_log_format(&again, &text2) < 0 || !streq(text, text2))
        abort();
    free(text);
    free(text2);
    ks_command_log_done(&again);
    ks_command_log_done(&h);
    return 0;
}
