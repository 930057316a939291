/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "grub/cfg.h"
#include "grub/grubenv.h"

/*
 * The next boots as GRUB will make them: for each boot the script runs from the top with the
 * environment block as the previous boot left it (GRUB's own save_env writes, when the block
 * is writable at boot), the default entry is chosen and run. Between boots a booted system's
 * userspace runs `grub-editenv grubenv unset recordfail` (grub-common.service); nothing else
 * touches the block. A boot that waits at the menu ends the forecast: what follows depends
 * on a person.
 */
typedef struct ks_grub_forecast_boot {
    unsigned boot; /* 1.. */
    char *kernel;  /* release from the linux line; NULL when it waits or loads no vmlinuz */
    char *linux_path;
    char **initrds; /* the initrd command's files, GRUB's paths; NULL: none */
    char *title_path;
    char *id_path;
    char *default_value;     /* what "default" held after the header */
    bool one_shot;           /* started by next_entry (boot_once) */
    bool waits;              /* stops at the menu without a timeout */
    const char *wait_reason; /* "timeout", "password", "nothing-loaded", "no-entries",
                              * "firmware-setup" (fwsetup, EFI); NULL */
    int timeout;             /* seconds shown before booting, -1 when it waits */
    bool fell_back;          /* default matched nothing at some level: GRUB took entry 0 there */
    bool recovery;
    unsigned save_env_failures; /* save_env calls that could not write (error on screen) */
    ks_grubenv *env_before;     /* the block GRUB read; NULL when there is no grubenv */
    ks_grubenv *env_after;      /* after GRUB's writes during this boot */
    char **changes;             /* "next_entry: 'x' -> ''", in block order */
} ks_grub_forecast_boot;

typedef struct ks_grub_forecast {
    ks_grub_forecast_boot *v;
    size_t n;
    char **notes; /* commands the model did not follow (source ...) */
} ks_grub_forecast;

/*
 * efi: GRUB runs as x86_64-efi ($grub_platform is "efi": 30_uefi-firmware's "UEFI Firmware
 * Settings" entry exists, the EFI branches of 00_header run); false: i386-pc.
 */
int ks_grub_forecast_run(const ks_grub_cfg *cfg, const ks_grubenv *env, bool env_writable, bool efi,
                         unsigned n_boots, ks_grub_forecast *ret);
void ks_grub_forecast_done(ks_grub_forecast *f);
/* Changes between two blocks (either may be NULL), for people. */
int ks_grubenv_diff(const ks_grubenv *a, const ks_grubenv *b, char ***ret);
