/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Helpers shared by the grub unit tests: fixtures, text edits, environment blocks. */
#include "grub/cfg.h"
#include "grub/grubenv.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "test.h"

static inline char *gt_read_fixture(const char *name, size_t *len)
{
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_free_ char *p = ks_asprintf("grub/%s", name);
    char *buf = NULL;
    size_t l = 0;

    if (ks_root_open(ks_fixture_dir(), &r) < 0 || ks_root_read_file(r, p, 1 << 20, &buf, &l) < 0)
        return NULL;
    if (len)
        *len = l;
    return buf;
}

/* Replaces the first occurrence of from with to; NULL when from is not there. */
static inline char *gt_replace(const char *text, const char *from, const char *to)
{
    const char *p = strstr(text, from);
    if (!p)
        return NULL;
    return ks_asprintf("%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
}

/* A block with "name=value" pairs set in order (NULL-terminated). */
static inline ks_grubenv *gt_env(const char *const *vars)
{
    ks_grubenv *e = NULL;
    if (ks_grubenv_new(&e) < 0)
        return NULL;
    for (; vars && *vars; vars++) {
        _cleanup_free_ char *n = strdup(*vars);
        char *eq = strchr(n, '=');
        *eq = '\0';
        if (ks_grubenv_set(e, n, eq + 1) < 0)
            return ks_grubenv_free(e);
    }
    return e;
}

static inline ks_grub_cfg *gt_parse(const char *text)
{
    ks_grub_cfg *c = NULL;
    ks_grub_error err = {0};
    if (ks_grub_cfg_parse(text, strlen(text), &c, &err) < 0)
        fprintf(stderr, "parse error %u:%u: %s\n", err.line, err.column, err.message);
    return c;
}
