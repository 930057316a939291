/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/engine/journal.h"
#include "lib/engine/states.h"

/*
 * Moves j to state `to` the way kswap would: along the shortest path of legal transitions
 * (lib/engine/states.h, breadth first), each through ks_journal_set_state(). Tests that need a
 * journal in a given state use it instead of a jump the setter refuses. false when no path.
 */
static inline bool walk_to(ks_journal *j, ks_state to)
{
    ks_state prev[_KS_STATE_MAX], queue[_KS_STATE_MAX], path[_KS_STATE_MAX];
    bool seen[_KS_STATE_MAX] = {false};
    ks_state from = ks_journal_state(j);
    size_t head = 0, tail = 0, n = 0, nt;
    const ks_transition *t = ks_transitions(&nt);

    seen[from] = true;
    queue[tail++] = from;
    while (head < tail && !seen[to]) {
        ks_state s = queue[head++];
        for (size_t i = 0; i < nt; i++)
            if (t[i].from == s && !seen[t[i].to]) {
                seen[t[i].to] = true;
                prev[t[i].to] = s;
                queue[tail++] = t[i].to;
            }
    }
    if (!seen[to])
        return false;
    for (ks_state s = to; s != from; s = prev[s])
        path[n++] = s;
    while (n > 0)
        if (ks_journal_set_state(j, path[--n]) < 0)
            return false;
    return true;
}
