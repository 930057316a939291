/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>

#include "grub/cfg.h"
#include "lib/basic/root.h"

/*
 * The trial boot's own GRUB entries. While a trial is armed, kswap keeps a script in
 * /etc/grub.d (the 40_custom form: `exec tail -n +3 $0`, static text) that update-grub puts
 * right after 00_header, so its entries are the first two of the menu:
 *   kswap-way-back  entry 0: the old kernel's entry body unchanged;
 *   kswap-trial     the new kernel's entry body, its linux lines carrying the trial-only
 *                   arguments (ks_trial_args): the one-shot next_entry names this entry, and
 *                   saved_entry never does;
 * and a line `if [ "${default}" = kswap-trial ]; then set fallback="0"; fi`: only on the
 * one-shot boot of the trial entry, a kernel GRUB cannot load (or whose boot returns) sends
 * GRUB on to the old kernel instead of "Press any key" and the menu (grub-core/normal/menu.c,
 * grub_menu_execute_with_fallback; upstream GRUB reads fallback as a menu position only).
 * The script goes at pin and rollback (and update-grub runs).
 */
#define KS_TRIAL_GRUBD_PATH "etc/grub.d/01_kswap_trial"
#define KS_TRIAL_ENTRY_ID "kswap-trial"
#define KS_WAYBACK_ENTRY_ID "kswap-way-back"
#define KS_TRIAL_MARKER "kswap.trial"
/* Files the trial boot's units write (checks/kswap-trial-generator). */
#define KS_TRIAL_STAGES_PATH "var/lib/kswap/trial-stages"

/* Defaults and limits of [accept] deadline, seconds from the kernel's start. */
#define KS_TRIAL_DEADLINE_DEFAULT_S 900
#define KS_TRIAL_DEADLINE_MIN_S 60
#define KS_TRIAL_DEADLINE_MAX_S 86400

/*
 * The watchdog the trial boot arms (docs/kswap.8.scd, TRIAL BOOT). systemd (PID 1) keeps it
 * running from the kernel command line: systemd.watchdog_device= and systemd.watchdog_sec=
 * (src/core/main.c parse_proc_cmdline_item, the same in systemd 252 and 257; watchdog_sec sets
 * the runtime, reboot and kexec timeouts alike). PID 1 opens the device at its start and, while
 * it is missing (a module udev loads later), again at every ping (src/shared/watchdog.c,
 * watchdog_ping). kswap-trial-watchdog gives the node its own setting back once the verdict
 * is in.
 *   DEVICE   the node has one (sys/class/watchdog/watchdogN: i6300esb, iTCO, a hardware one):
 *            it resets even a kernel whose every CPU is stuck;
 *   SOFTDOG  no device, the trial kernel has softdog: kswap.softdog=1 makes the generator load it
 *            early with modprobe (not modules-load=: systemd-modules-load honours modprobe.d's
 *            blacklist, and Ubuntu's blacklist_linux_*.conf lists softdog) (a
 *            kernel timer; it catches a hung PID 1 and a kernel that still runs timers, never a
 *            lockup of all CPUs: nmi_watchdog=panic covers a CPU stuck where the kernel has a
 *            hard lockup detector);
 *   NONE     neither: nothing but nmi_watchdog=panic.
 */
typedef enum ks_trial_watchdog_kind {
    KS_TRIAL_WATCHDOG_NONE,
    KS_TRIAL_WATCHDOG_DEVICE,
    KS_TRIAL_WATCHDOG_SOFTDOG,
    _KS_TRIAL_WATCHDOG_KIND_MAX,
    _KS_TRIAL_WATCHDOG_KIND_INVALID = -EINVAL,
} ks_trial_watchdog_kind;

const char *ks_trial_watchdog_kind_to_string(ks_trial_watchdog_kind k); /* none device softdog */

/* Seconds without a ping before the watchdog resets the trial (systemd pings at half). */
#define KS_TRIAL_WATCHDOG_SEC 60

typedef struct ks_trial_watchdog {
    ks_trial_watchdog_kind kind;
    char device[32]; /* "/dev/watchdog0"; empty with NONE */
} ks_trial_watchdog;

/*
 * Which watchdog the trial of new_release arms: the first sys/class/watchdog/watchdogN of the
 * running node that is not softdog, else softdog when lib/modules/NEW_RELEASE has it
 * (modules.dep or modules.builtin), else none. Never fails for a missing file; -ENOMEM.
 */
int ks_trial_watchdog_pick(const ks_root *root, const char *new_release, ks_trial_watchdog *ret);
/*
 * Whether sys/class/watchdog/NAME is softdog (its identity "Software Watchdog",
 * drivers/watchdog/softdog.c). Not a device of the node: on the boot after a trial that loaded
 * it (kswap.softdog=1, kept running once the trial was pinned) it is there, on the next boot it
 * is gone unless the trial loads it again.
 */
bool ks_trial_watchdog_is_softdog(const ks_root *root, const char *name);
/*
 * Whether a modules.dep or modules.builtin text (NUL-terminated) names softdog: a line whose
 * path (up to ':' in modules.dep) is softdog.ko or ends in /softdog.ko, compressed (.xz, .zst,
 * .gz) or not.
 */
bool ks_trial_module_list_names_softdog(const char *text);

/*
 * The trial's id, its marker's value (kswap.trial=ID): the first 12 hexadecimal digits of the
 * arming boot's id (boot_id may be NULL), "0" when it has none. The boot's generator compares
 * it with the journal's armed_boot_id (checks/kswap-trial-generator.in).
 */
#define KS_TRIAL_ID_MAX 13
void ks_trial_id(const char *boot_id, char ret[static KS_TRIAL_ID_MAX]);

/*
 * The arguments only the trial boot carries: the marker kswap.trial=ID, kswap.deadline=S,
 * oops=panic, softlockup_panic=1, nmi_watchdog=panic, the pvpanic modules blacklisted (a host
 * that pauses the guest on a pvpanic event would keep a panicking trial from rebooting), and
 * the watchdog's (wd may be NULL: none).
 */
char *ks_trial_args(const char *trial_id, int deadline_s, const ks_trial_watchdog *wd);

/*
 * The /etc/grub.d script for a trial of new_release with old_release as the way back, from
 * the bodies of their entries in cfg. -ENOENT: no entry for one of them; -EINVAL: a linux
 * line continued with a backslash (not rewritten); *ret_detail says which.
 */
int ks_trial_grubd_text(const ks_grub_cfg *cfg, const char *new_release, const char *old_release,
                        const char *args, char **ret, char **ret_detail);
/* Writes (atomically, mode 0755) or removes the script; a missing script is fine. */
int ks_trial_grubd_write(const ks_root *root, const char *text);
int ks_trial_grubd_remove(const ks_root *root);
bool ks_trial_grubd_exists(const ks_root *root);

/* How a trial boot that did not reach its verdict ended, as its marks tell. */
typedef enum ks_trial_end {
    KS_TRIAL_END_UNKNOWN,  /* no mark of an end: a panic, a reset, a power cut, ... */
    KS_TRIAL_END_DEADLINE, /* "deadline": its deadline ran out and forced the reboot */
    KS_TRIAL_END_RETURNED, /* "returned": in emergency or rescue mode it rebooted at once
                              (kswap-trial-return.service) */
    _KS_TRIAL_END_MAX,
    _KS_TRIAL_END_INVALID = -EINVAL,
} ks_trial_end;

/*
 * What the trial boot's units left in var/lib/kswap/trial-stages (one line each: a stage name,
 * the seconds since the kernel's start, then free text), for people: the last stage reached,
 * and how the boot ended. 0: no file; 1: read. *ret_end: see above; *ret_seconds: when it
 * ended so (the mark's seconds since the kernel's start), else 0; *ret_last: the last stage,
 * or emergency/rescue when the boot reached one of those modes (the whole-VM scenario
 * trial-emergency marked userspace after emergency: both are ordered after local-fs.target,
 * whose failure started emergency mode), *ret_text: the whole file (at most 4 KiB); any of them
 * may be NULL.
 */
int ks_trial_stages_read(const ks_root *root, ks_trial_end *ret_end, unsigned *ret_seconds,
                         char **ret_last, char **ret_text);
int ks_trial_stages_clear(const ks_root *root);
