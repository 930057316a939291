/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The configured checklist: each kind's [accept] key in registry order, then its own items. */
#include "checks/check.h"
#include "lib/basic/util.h"

/* The checks of one kind's item key: each word, or the last one for a kind of one value. */
static int add_key_items(const ks_check_kind *kind, const ks_config *cfg, ks_checklist *l,
                         char **ret_error)
{
    _cleanup_strv_free_ char **v = NULL;
    const ks_config_key *key = NULL;
    char **start;
    int r;

    for (const ks_config_key *k = kind->keys; k && k->key; k++)
        if (streq(k->key, kind->item_key))
            key = k;
    if (!key)
        return -EINVAL;
    r = ks_config_get_strv(cfg, "accept", key->key, NULL, &v);
    if (r < 0)
        return r;
    start = v;
    if (!kind->max_fields && v && *v)
        start = v + ks_strv_length(v) - 1;
    for (char **p = start; p && *p; p++) {
        /* Checked when the configuration was read; a checklist built from another one must
         * not act on a malformed item either. */
        if ((*p)[0] == '-' || (key->item_ok && !key->item_ok(*p))) {
            if (ret_error)
                *ret_error = ks_asprintf("[accept] %s: '%s' is not a valid item", key->key, *p);
            return -EINVAL;
        }
        r = ks_checklist_add(l, kind->name, kind->max_fields ? *p : NULL, true, kind->run);
        if (r < 0)
            return r;
        if (!kind->max_fields) {
            ks_check *chk = &l->v[l->n - 1];
            chk->arg = strdup(*p);
            if (!chk->arg)
                return -ENOMEM;
        }
    }
    return 0;
}

int ks_checklist_from_config(const ks_root *root, const ks_config *cfg, ks_checklist *l,
                             char **ret_error)
{
    size_t n;
    const ks_check_kind *const *kinds = ks_check_kinds(&n);
    int r;

    for (size_t i = 0; cfg && i < n; i++)
        if (kinds[i]->item_key && (r = add_key_items(kinds[i], cfg, l, ret_error)) < 0)
            return r;
    for (size_t i = 0; i < n; i++)
        if (kinds[i]->add_configured && (r = kinds[i]->add_configured(root, cfg, l, ret_error)) < 0)
            return r;
    return 0;
}
