/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "grub/cfg.h"
#include "grub/resolve.h"

/*
 * The full path of a kernel release's normal (not recovery) entry: by ids (stable across
 * locale and distributor name, what kswap writes into grubenv) and by titles (for people),
 * each component '>'-escaped. The entry chosen is the one whose id names the release
 * (10_linux's gnulinux-<release>-advanced-<uuid>, in the submenu or flat), not the top
 * "simple" entry that follows the newest kernel. Both paths are resolved back with GRUB's
 * rules and must give exactly that entry without any fall-back.
 *
 * -ENOENT: no normal entry loads that release. -EADDRNOTAVAIL: the id path does not resolve
 * back to the entry (duplicate titles or ids shadow it).
 */
typedef struct ks_grub_entry_path {
    char *id_path;
    char *title_path;
    bool title_path_ok; /* the title path resolves to the same entry too */
    const ks_grub_entry *entry;
} ks_grub_entry_path;

int ks_grub_entry_path_find(const ks_grub_entry *menu, size_t n, const char *release,
                            ks_grub_entry_path *ret);
void ks_grub_entry_path_done(ks_grub_entry_path *p);

/* Why a path given by someone (grubenv, a flag) is not fit to boot release. */
typedef enum ks_grub_path_verdict {
    KS_GRUB_PATH_OK,
    KS_GRUB_PATH_FALLS_BACK,   /* no match at some level: GRUB silently takes entry 0 */
    KS_GRUB_PATH_RECOVERY,     /* resolves to a recovery entry */
    KS_GRUB_PATH_OTHER_KERNEL, /* resolves to an entry of another release (or none) */
    KS_GRUB_PATH_NO_ENTRY,     /* the menu is empty */
    _KS_GRUB_PATH_VERDICT_MAX,
    _KS_GRUB_PATH_VERDICT_INVALID = -EINVAL,
} ks_grub_path_verdict;

/* release NULL: any normal kernel entry will do. */
ks_grub_path_verdict ks_grub_path_check(const ks_grub_entry *menu, size_t n, const char *path,
                                        const char *release, const ks_grub_entry **ret_entry);
const char *ks_grub_path_verdict_to_string(ks_grub_path_verdict v);
