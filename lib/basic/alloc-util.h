/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Growable arrays in the manner of systemd's GREEDY_REALLOC (src/basic/alloc-util.h): the
 * caller keeps the array pointer, its count and its capacity; one call makes room for `need`
 * elements, growing geometrically, and returns false (leaving the array as it was) when memory
 * runs out or the size would overflow.
 *
 *     if (!GREEDY_REALLOC(list, list_cap, n + 1))
 *         return -ENOMEM;
 *     list[n++] = item;
 */
bool ks_greedy_realloc(void **p, size_t *cap, size_t need, size_t size);

#define GREEDY_REALLOC(array, cap, need)                                                           \
    ks_greedy_realloc((void **)&(array), &(cap), (need), sizeof((array)[0]))

/* Like GREEDY_REALLOC, and the new elements from the old capacity on are zeroed. */
bool ks_greedy_realloc0(void **p, size_t *cap, size_t need, size_t size);

#define GREEDY_REALLOC0(array, cap, need)                                                          \
    ks_greedy_realloc0((void **)&(array), &(cap), (need), sizeof((array)[0]))
