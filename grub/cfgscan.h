/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Facts plan needs from a generated grub.cfg before the full GRUB model exists:
 * - lacks_write_support: Ubuntu's grub-mkconfig marker
 *   "# GRUB lacks write support for X, so recordfail support is disabled." (reason = X);
 * - recordfail_timeout: the timeout set inside the `if [ "${recordfail}" = 1 ]` block
 *   (Ubuntu's 00_header), INT_MIN when there is none;
 * - efi_recordfail_timeout: the timeout Ubuntu's 00_header sets on every EFI boot when
 *   recordfail cannot be saved (`if [ $grub_platform = efi ]`, older `if lsefi`), INT_MIN when
 *   there is none: with -1 every EFI boot waits at the menu;
 * - timeout: the plain `set timeout=N` outside those blocks (the first one: later ones are
 *   fallbacks), INT_MIN when none.
 * Timeouts inside brace blocks (functions, menu entries) do not count.
 */
typedef struct ks_grub_cfg_facts {
    bool lacks_write_support;
    char *lacks_write_reason;
    int recordfail_timeout;
    int efi_recordfail_timeout;
    int timeout;
} ks_grub_cfg_facts;

int ks_grub_cfg_scan(const char *text, size_t len, ks_grub_cfg_facts *ret);
void ks_grub_cfg_facts_done(ks_grub_cfg_facts *f);
