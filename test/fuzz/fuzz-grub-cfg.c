/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The grub.cfg parser and, on what parses, the evaluator, the countdowns plan reads and the
 * forecast: no crash, no leak. */
#include <stdint.h>

#include "grub/cfg.h"
#include "grub/forecast.h"
#include "grub/paths.h"
#include "grub/timeouts.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ks_grub_cfg *c = NULL;
    ks_grub_error err;
    ks_grubenv *env = NULL;
    ks_grub_forecast f = {0};
    ks_grub_entry_path p = {0};
    ks_grub_timeouts t;

    if (ks_grub_cfg_parse((const char *)data, size, &c, &err) < 0)
        return 0;
    (void)ks_grub_timeouts_run(c, &t);
    if (ks_grubenv_new(&env) == 0) {
        ks_grubenv_set(env, "next_entry", "1>0");
        if (ks_grub_forecast_run(c, env, true, size & 1, 3, &f) == 0) /* both platforms */
            ks_grub_forecast_done(&f);
        ks_grubenv_free(env);
    }
    if (ks_grub_entry_path_find(c->entries, c->n_entries, "1.0", &p) == 0)
        ks_grub_entry_path_done(&p);
    ks_grub_cfg_free(c);
    return 0;
}
