/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/findings.h"
#include "grub/cfg.h"
#include "grub/forecast.h"
#include "grub/grubenv.h"
#include "grub/paths.h"
#include "lib/basic/root.h"

#define KS_GRUB_CFG_PATH "boot/grub/grub.cfg"
#define KS_GRUBENV_PATH "boot/grub/grubenv"
#define KS_FORECAST_BOOTS 3

/*
 * What decides the next boots: the generated grub.cfg, the environment block and whether GRUB
 * can write that block at boot (filesystem and device stack of /boot/grub, Ubuntu's "GRUB
 * lacks write support" marker). Every change kswap makes to grubenv goes through the functions
 * below: write the block atomically, read it back, forecast the next boots with the real
 * script, and when the forecast is not the one promised, write the previous block back.
 */
typedef struct ks_boot {
    ks_grub_cfg *cfg;
    ks_grubenv *env; /* NULL: no grubenv yet */
    bool env_writable;
    char *unwritable_reason; /* NULL when writable */
    bool efi;                /* booted by UEFI (sys/firmware/efi): GRUB is x86_64-efi */
} ks_boot;

/* Loads everything; *ret_error (if given) says which file and why, for people. */
int ks_boot_load(const ks_root *root, ks_boot *ret, char **ret_error);
void ks_boot_done(ks_boot *b);
int ks_boot_forecast(const ks_boot *b, ks_grub_forecast *ret);
/*
 * Findings a forecast implies: grub.entry-missing (a default that falls back to entry 0),
 * grub.recordfail-wait / grub.boot-waits (a boot stops at the menu), grub.env-unwritable (a
 * one-shot that repeats because GRUB cannot clear it).
 */
int ks_boot_forecast_findings(const ks_boot *b, const ks_grub_forecast *f, ks_findings *findings);
/* The full id and title path of release's normal entry, checked to resolve back exactly. */
int ks_boot_entry_path(const ks_boot *b, const char *release, ks_grub_entry_path *ret);

/*
 * saved_entry = release's id path, next_entry and prev_saved_entry unset; promised: every
 * forecast boot starts release. -EPROTO (with *ret_detail) when the forecast disagrees; the
 * previous block is back on disk then.
 */
int ks_boot_set_default(const ks_root *root, ks_boot *b, const char *release, char **ret_detail);
/*
 * Whether ks_boot_set_default(release) would keep its promise, judged on a copy of the block:
 * 0 when every forecast boot would start release; -ENOENT (no entry), -EPROTO (GRUB would
 * start another kernel: grub.cfg does not boot saved_entry, GRUB_DEFAULT is not "saved"), with
 * *ret_detail saying what. Nothing is written: a command asks before its first change.
 */
int ks_boot_default_holds(const ks_boot *b, const char *release, char **ret_detail);
/* Whether every forecast boot starts release (none a one-shot, none waits or falls back). */
bool ks_boot_every_boot_starts(const ks_boot *b, const char *release);
/*
 * next_entry = entry_id (a top-level entry that loads new_release: kswap's trial entry) or,
 * when entry_id is NULL, new_release's id path; promised: boot 1 starts new_release as a
 * one-shot, the later boots start old_release. Refuses (-EROFS) when GRUB cannot clear
 * next_entry at boot.
 */
int ks_boot_arm(const ks_root *root, ks_boot *b, const char *new_release, const char *old_release,
                const char *entry_id, char **ret_detail);
/* next_entry unset; promised (when expect is given): every boot starts expect. */
int ks_boot_disarm(const ks_root *root, ks_boot *b, const char *expect, char **ret_detail);
