/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "lib/basic/alloc-util.h"

bool ks_greedy_realloc(void **p, size_t *cap, size_t need, size_t size)
{
    size_t n;
    void *q;

    assert(p);
    assert(cap);
    assert(size > 0);

    if (*p && need <= *cap)
        return true;
    if (need > SIZE_MAX / 2 / size)
        return false;
    /* Twice what is needed, at least 8: a loop of appends costs amortized O(1) each. */
    n = need < 4 ? 8 : need * 2;
    q = realloc(*p, n * size);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

bool ks_greedy_realloc0(void **p, size_t *cap, size_t need, size_t size)
{
    size_t before;

    assert(cap);
    before = *p ? *cap : 0;
    if (!ks_greedy_realloc(p, cap, need, size))
        return false;
    if (*cap > before)
        memset((char *)*p + before * size, 0, (*cap - before) * size);
    return true;
}
