/* SPDX-License-Identifier: GPL-2.0-or-later */
/* modules.dep / modules.builtin text of the trial kernel (lib/engine/trialboot.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/engine/trialboot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* A text without "softdog.ko" anywhere can never name it. */
    if (ks_trial_module_list_names_softdog(text) && !strstr(text, "softdog.ko"))
        abort();
    free(text);
    return 0;
}
