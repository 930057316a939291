/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>

#include "checks/check.h"
#include "lib/basic/config.h"
#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    _cleanup_free_ char *text = strndup((const char *)data, size), *err = NULL;
    _cleanup_strv_free_ char **mods = NULL;
    ks_config *c = ks_config_new();
    const ks_config_key *keys;
    size_t n;
    int r;

    /* The [accept] keys of the check plug-ins too (checks/registry.c). */
    if (!text || !c || ks_checks_register_config() < 0)
        abort();
    keys = ks_config_keys(&n);
    r = ks_config_parse(c, text, "fuzz.conf", &err);
    /* An error always says where: "fuzz.conf:LINE: ..." or "fuzz.conf: ...". */
    if (r == -EBADMSG && (!err || !ks_startswith(err, "fuzz.conf")))
        abort();
    if (r == 0) {
        /* What parsed reads back within the table's types and ranges. */
        for (size_t i = 0; i < n; i++) {
            uint64_t u;
            bool b;
            if (keys[i].type == KS_CT_UINT &&
                ks_config_get_string(c, keys[i].section, keys[i].key, NULL) &&
                (ks_config_get_u64(c, keys[i].section, keys[i].key, &u) < 0 || u < keys[i].min ||
                 u > keys[i].max))
                abort();
            if (keys[i].type == KS_CT_BOOL &&
                ks_config_get_bool(c, keys[i].section, keys[i].key, true, &b) < 0)
                abort();
        }
        if (ks_config_verify_modules(c, &mods) < 0)
            abort();
    }
    ks_config_free(c);
    return 0;
}
