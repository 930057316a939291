/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>

#include "lib/engine/trialboot.h"
#include "grub/paths.h"
#include "lib/basic/fileio.h"
#include "lib/basic/string-table.h"
#include "lib/basic/util.h"

static const char *const ks_trial_watchdog_kind_table[_KS_TRIAL_WATCHDOG_KIND_MAX] = {
    [KS_TRIAL_WATCHDOG_NONE] = "none",
    [KS_TRIAL_WATCHDOG_DEVICE] = "device",
    [KS_TRIAL_WATCHDOG_SOFTDOG] = "softdog",
};
DEFINE_STRING_TABLE_LOOKUP_TO_STRING(ks_trial_watchdog_kind, ks_trial_watchdog_kind);

/* "watchdogN" with N a number of at most 4 digits. */
static bool is_watchdog_name(const char *s)
{
    size_t n;

    if (strncmp(s, "watchdog", 8) != 0)
        return false;
    n = strspn(s + 8, "0123456789");
    return n > 0 && n <= 4 && s[8 + n] == '\0';
}

bool ks_trial_module_list_names_softdog(const char *text)
{
    static const char *const suffixes[] = {".ko", ".ko.xz", ".ko.zst", ".ko.gz"};

    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *colon = memchr(p, ':', n);
        size_t m = colon ? (size_t)(colon - p) : n;

        for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++) {
            size_t want = strlen("softdog") + strlen(suffixes[i]);
            if (m >= want && (m == want || p[m - want - 1] == '/') &&
                memcmp(p + m - want, "softdog", 7) == 0 &&
                memcmp(p + m - want + 7, suffixes[i], strlen(suffixes[i])) == 0)
                return true;
        }
        p = nl ? nl + 1 : NULL;
    }
    return false;
}

bool ks_trial_watchdog_is_softdog(const ks_root *root, const char *name)
{
    _cleanup_free_ char *path = ks_asprintf("sys/class/watchdog/%s/identity", name);
    _cleanup_free_ char *identity = NULL;

    return path && ks_root_read_line(root, path, &identity) >= 0 &&
           streq(identity, "Software Watchdog");
}

int ks_trial_watchdog_pick(const ks_root *root, const char *new_release, ks_trial_watchdog *ret)
{
    static const char *const lists[] = {"modules.dep", "modules.builtin"};
    _cleanup_strv_free_ char **names = NULL;
    ks_trial_watchdog wd = {.kind = KS_TRIAL_WATCHDOG_NONE};
    unsigned long softdogs_before = 0;

    /*
     * The names come sorted (ks_root_list_dir): watchdog0 before watchdog1. A softdog is left
     * out, and so is its number: the trial boot loads none before the node's own devices
     * register (a softdog an earlier trial loaded holds watchdog0 now and an i6300esb
     * watchdog1; on the trial boot the i6300esb is watchdog0).
     */
    if (ks_root_list_dir(root, "sys/class/watchdog", &names) >= 0)
        for (char **n = names; n && *n; n++) {
            if (!is_watchdog_name(*n))
                continue;
            if (ks_trial_watchdog_is_softdog(root, *n)) {
                softdogs_before++;
                continue;
            }
            wd.kind = KS_TRIAL_WATCHDOG_DEVICE;
            snprintf(wd.device, sizeof(wd.device), "/dev/watchdog%lu",
                     strtoul(*n + 8, NULL, 10) - softdogs_before);
            break;
        }
    for (size_t i = 0; wd.kind == KS_TRIAL_WATCHDOG_NONE && new_release && i < ARRAY_SIZE(lists);
         i++) {
        _cleanup_free_ char *path = ks_asprintf("lib/modules/%s/%s", new_release, lists[i]);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        if (!path)
            return -ENOMEM;
        if (ks_root_read_file(root, path, 64 << 20, &text, &len) < 0)
            continue;
        if (ks_trial_module_list_names_softdog(text)) {
            /* With no other device, softdog registers as the first one. */
            wd.kind = KS_TRIAL_WATCHDOG_SOFTDOG;
            strcpy(wd.device, "/dev/watchdog0");
        }
    }
    *ret = wd;
    return 0;
}

void ks_trial_id(const char *boot_id, char ret[static KS_TRIAL_ID_MAX])
{
    size_t n = 0;

    for (size_t i = 0; boot_id && boot_id[i] && n < KS_TRIAL_ID_MAX - 1; i++)
        if (isxdigit((unsigned char)boot_id[i]))
            ret[n++] = (char)tolower((unsigned char)boot_id[i]);
    if (n == 0)
        ret[n++] = '0';
    ret[n] = '\0';
}

char *ks_trial_args(const char *trial_id, int deadline_s, const ks_trial_watchdog *wd)
{
    const char *load = wd && wd->kind == KS_TRIAL_WATCHDOG_SOFTDOG ? " kswap.softdog=1" : "";
    _cleanup_free_ char *dog = NULL;

    /*
     * hung_task_panic and panic_on_warn stay off: a task blocked for 120 s on a slow VPS disk,
     * or a harmless WARN of a driver, would turn a good trial into a failed one; the boot
     * deadline catches a boot that really stays stuck (docs/kswap.8.scd, "Trial boot").
     * nmi_watchdog=panic only sets hardlockup_panic: a CPU the hard lockup detector finds
     * stuck with interrupts off panics (and panic= reboots) instead of printing a warning;
     * where the kernel has no such detector (no virtual PMU) it does nothing.
     */
    if (wd && wd->kind != KS_TRIAL_WATCHDOG_NONE && wd->device[0])
        dog = ks_asprintf("%s systemd.watchdog_device=%s systemd.watchdog_sec=%d", load, wd->device,
                          KS_TRIAL_WATCHDOG_SEC);
    else
        dog = strdup("");
    if (!dog)
        return NULL;
    return ks_asprintf("%s=%s kswap.deadline=%d oops=panic softlockup_panic=1 nmi_watchdog=panic "
                       "modprobe.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci%s",
                       KS_TRIAL_MARKER, trial_id, deadline_s, dog);
}

/* Appends to *buf; -ENOMEM. */
static int append(char **buf, size_t *len, const char *s, size_t n)
{
    char *p = realloc(*buf, *len + n + 1);
    if (!p)
        return -ENOMEM;
    memcpy(p + *len, s, n);
    *len += n;
    p[*len] = '\0';
    *buf = p;
    return 0;
}

/* Is this line (without its newline) a `linux` command? */
static bool is_linux_line(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return n - i > 5 && memcmp(s + i, "linux", 5) == 0 && (s[i + 5] == ' ' || s[i + 5] == '\t');
}

/* The body of e's menuentry; every linux line gets args appended when args is given. */
static int body_of(const ks_grub_cfg *cfg, const ks_grub_entry *e, const char *args, char **buf,
                   size_t *len, unsigned *n_linux)
{
    const ks_grub_node *node = e->node;
    const char *p, *end;
    int r;

    if (!node || node->body_end <= node->body_start || node->body_end > cfg->len)
        return -EINVAL;
    p = cfg->text + node->body_start;
    end = cfg->text + node->body_end;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t m = n;

        while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t' || p[m - 1] == '\r'))
            m--;
        if (args && is_linux_line(p, m)) {
            if (m > 0 && p[m - 1] == '\\')
                return -EINVAL;
            r = append(buf, len, p, m);
            if (r >= 0)
                r = append(buf, len, " ", 1);
            if (r >= 0)
                r = append(buf, len, args, strlen(args));
            (*n_linux)++;
        } else
            r = append(buf, len, p, n);
        if (r >= 0 && nl)
            r = append(buf, len, "\n", 1);
        if (r < 0)
            return r;
        p = nl ? nl + 1 : end;
    }
    if (*len == 0 || (*buf)[*len - 1] != '\n')
        return append(buf, len, "\n", 1);
    return 0;
}

int ks_trial_grubd_text(const ks_grub_cfg *cfg, const char *new_release, const char *old_release,
                        const char *args, char **ret, char **ret_detail)
{
    ks_grub_entry_path pn = {0}, po = {0};
    _cleanup_free_ char *head = NULL, *buf = NULL;
    size_t len = 0;
    unsigned n_linux = 0;
    int r;

    r = ks_grub_entry_path_find(cfg->entries, cfg->n_entries, new_release, &pn);
    if (r >= 0)
        r = ks_grub_entry_path_find(cfg->entries, cfg->n_entries, old_release, &po);
    if (r < 0) {
        if (ret_detail)
            *ret_detail = ks_asprintf("grub.cfg has no usable entry for %s",
                                      pn.entry ? old_release : new_release);
        goto out;
    }
    /*
     * GRUB's fallback takes menu positions only (grub-core/normal/menu.c of GRUB 2.06 and 2.12,
     * get_and_remove_first_entry_number: grub_strtoul; ids only in Fedora's patched GRUB), so
     * the way-back entry must have a position known at boot: this script runs right after
     * 00_header, which makes no entries, and the way-back entry is the first of the menu.
     */
    head = ks_asprintf(
        "#!/bin/sh\n"
        "exec tail -n +3 $0\n"
        "# Written by kswap while a trial of %s is armed; 'kswap pin' and 'kswap rollback'\n"
        "# remove it. The one-shot boot (next_entry=%s) starts the trial entry; when GRUB\n"
        "# cannot load or start its kernel, it goes on to entry 0, the old kernel (fallback),\n"
        "# instead of waiting for a key. saved_entry never names these entries.\n"
        "if [ \"${default}\" = \"%s\" ]; then\n"
        "  set fallback=\"0\"\n"
        "fi\n"
        "menuentry 'kswap way back: %s' --class gnu-linux --class os $menuentry_id_option '%s' {\n",
        new_release, KS_TRIAL_ENTRY_ID, KS_TRIAL_ENTRY_ID, old_release, KS_WAYBACK_ENTRY_ID);
    if (!head) {
        r = -ENOMEM;
        goto out;
    }
    r = append(&buf, &len, head, strlen(head));
    if (r >= 0)
        r = body_of(cfg, po.entry, NULL, &buf, &len, &n_linux);
    if (r < 0) {
        if (ret_detail && r == -EINVAL)
            *ret_detail = ks_asprintf("the entry of %s cannot be copied", old_release);
        goto out;
    }
    free(head);
    head = ks_asprintf("}\nmenuentry 'kswap trial: %s' --class gnu-linux --class os "
                       "$menuentry_id_option '%s' {\n",
                       new_release, KS_TRIAL_ENTRY_ID);
    r = head ? append(&buf, &len, head, strlen(head)) : -ENOMEM;
    if (r >= 0)
        r = body_of(cfg, pn.entry, args, &buf, &len, &n_linux);
    if (r >= 0 && n_linux == 0)
        r = -EINVAL;
    if (r >= 0)
        r = append(&buf, &len, "}\n", 2);
    if (r < 0) {
        if (ret_detail && r == -EINVAL)
            *ret_detail =
                ks_asprintf("the entry of %s has no linux line kswap can extend", new_release);
        goto out;
    }
    *ret = TAKE_PTR(buf);
out:
    ks_grub_entry_path_done(&pn);
    ks_grub_entry_path_done(&po);
    return r;
}

int ks_trial_grubd_write(const ks_root *root, const char *text)
{
    return ks_write_atomic(root, KS_TRIAL_GRUBD_PATH, text, strlen(text), 0755);
}

int ks_trial_grubd_remove(const ks_root *root)
{
    return ks_unlink_if_exists(root, KS_TRIAL_GRUBD_PATH);
}

bool ks_trial_grubd_exists(const ks_root *root)
{
    return ks_root_exists(root, KS_TRIAL_GRUBD_PATH);
}

/* The seconds field of a mark line (after its name), 0 when it has none that parses. */
static unsigned mark_seconds(const char *p, size_t n)
{
    char buf[16];
    size_t k;
    int v = 0;

    p += n;
    p += strspn(p, " \t");
    k = strspn(p, "0123456789");
    if (k == 0 || k >= sizeof(buf))
        return 0;
    memcpy(buf, p, k);
    buf[k] = '\0';
    return ks_safe_atoi(buf, &v) >= 0 && v >= 0 ? (unsigned)v : 0;
}

int ks_trial_stages_read(const ks_root *root, ks_trial_end *ret_end, unsigned *ret_seconds,
                         char **ret_last, char **ret_text)
{
    _cleanup_free_ char *text = NULL, *last = NULL, *mode = NULL;
    ks_trial_end end = KS_TRIAL_END_UNKNOWN;
    unsigned seconds = 0;
    size_t len = 0;
    int r;

    r = ks_root_read_file(root, KS_TRIAL_STAGES_PATH, 4096, &text, &len);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = strcspn(p, " \t\n");
        if (n > 0 && n < 32) {
            if (n == 8 && memcmp(p, "deadline", 8) == 0) {
                end = KS_TRIAL_END_DEADLINE;
                seconds = mark_seconds(p, n);
            } else if (n == 8 && memcmp(p, "returned", 8) == 0) {
                end = KS_TRIAL_END_RETURNED;
                seconds = mark_seconds(p, n);
            } else if ((n == 9 && memcmp(p, "emergency", 9) == 0) ||
                       (n == 6 && memcmp(p, "rescue", 6) == 0)) {
                /* The mode the boot sat in, whatever came after: the marks of units ordered
                 * after local-fs.target (userspace) may land after the emergency mark. */
                free(mode);
                mode = strndup(p, n);
                if (!mode)
                    return -ENOMEM;
            } else {
                free(last);
                last = strndup(p, n);
                if (!last)
                    return -ENOMEM;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    if (ret_end)
        *ret_end = end;
    if (ret_seconds)
        *ret_seconds = seconds;
    if (ret_last)
        *ret_last = mode ? TAKE_PTR(mode) : TAKE_PTR(last);
    if (ret_text)
        *ret_text = TAKE_PTR(text);
    return 1;
}

int ks_trial_stages_clear(const ks_root *root)
{
    return ks_unlink_if_exists(root, KS_TRIAL_STAGES_PATH);
}
