/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The trial boot's arguments and GRUB entries (lib/engine/trialboot.c): which watchdog a trial
 * arms from what the root shows (sys/class/watchdog, the new kernel's module lists), the exact
 * command line of the trial entry, and that the way-back entry carries none of it.
 */
#include <errno.h>
#include <sys/stat.h>

#include "grub/cfg.h"
#include "lib/basic/fileio.h"
#include "lib/basic/util.h"
#include "lib/engine/trialboot.h"
#include "test.h"

#define OLD "6.1.0-55-amd64"
#define NEW "6.12.30-x64v3-xanmod1"
#define U "0f6c1b4e-8d4e-4a3b-9c27-5d2f1e0a9b11"
#define BASE_ARGS                                                                                  \
    "kswap.trial=0123abcd kswap.deadline=900 oops=panic softlockup_panic=1 nmi_watchdog=panic "    \
    "modprobe.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci"

static const char grub_cfg[] =
    "menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-" U "' {\n"
    "\tlinux\t/boot/vmlinuz-" OLD " root=UUID=" U " ro quiet panic=10\n"
    "\tinitrd\t/boot/initrd.img-" OLD "\n"
    "}\n"
    "submenu 'Advanced options' $menuentry_id_option 'gnulinux-advanced-" U "' {\n"
    "\tmenuentry 'Debian, with Linux " NEW "' $menuentry_id_option 'gnulinux-" NEW "-advanced-" U
    "' {\n"
    "\t\tlinux\t/boot/vmlinuz-" NEW " root=UUID=" U " ro quiet panic=10\n"
    "\t\tinitrd\t/boot/initrd.img-" NEW "\n"
    "\t}\n"
    "\tmenuentry 'Debian, with Linux " OLD "' $menuentry_id_option 'gnulinux-" OLD "-advanced-" U
    "' {\n"
    "\t\tlinux\t/boot/vmlinuz-" OLD " root=UUID=" U " ro quiet panic=10\n"
    "\t\tinitrd\t/boot/initrd.img-" OLD "\n"
    "\t}\n"
    "}\n";

static const struct {
    const char *name;
    const char *devices;  /* names under sys/class/watchdog, space separated */
    const char *softdogs; /* of those, the ones whose identity is softdog's ("Software Watchdog") */
    const char *new_dep;  /* lib/modules/NEW/modules.dep, NULL: no file */
    const char *new_bin;  /* lib/modules/NEW/modules.builtin, NULL: no file */
    const char *old_dep;  /* lib/modules/OLD/modules.dep, NULL: no file */
    ks_trial_watchdog_kind kind;
    const char *device; /* the device the trial arms, "" with none */
    const char *args;   /* the trial's whole argument string */
} cases[] = {
    {"i6300esb on KVM (and softdog in the new kernel: the device wins)", "watchdog0", "",
     "kernel/drivers/watchdog/softdog.ko:\n", NULL, NULL, KS_TRIAL_WATCHDOG_DEVICE,
     "/dev/watchdog0", BASE_ARGS " systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60"},
    {"only watchdog1 (watchdog0 went away)", "watchdog1", "", NULL, NULL, NULL,
     KS_TRIAL_WATCHDOG_DEVICE, "/dev/watchdog1",
     BASE_ARGS " systemd.watchdog_device=/dev/watchdog1 systemd.watchdog_sec=60"},
    {"two devices: the first in order", "watchdog1 watchdog0", "", NULL, NULL, NULL,
     KS_TRIAL_WATCHDOG_DEVICE, "/dev/watchdog0",
     BASE_ARGS " systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60"},
    {"no device, softdog a module of the new kernel (zstd)", "", "",
     "kernel/fs/ext4/ext4.ko.zst: kernel/lib/crc16.ko.zst\n"
     "kernel/drivers/watchdog/softdog.ko.zst:\n",
     NULL, NULL, KS_TRIAL_WATCHDOG_SOFTDOG, "/dev/watchdog0",
     BASE_ARGS " kswap.softdog=1 systemd.watchdog_device=/dev/watchdog0 "
               "systemd.watchdog_sec=60"},
    {"no device, softdog built into the new kernel", "", "", "kernel/fs/ext4/ext4.ko:\n",
     "kernel/fs/ext4/ext4.ko\nkernel/drivers/watchdog/softdog.ko\n", NULL,
     KS_TRIAL_WATCHDOG_SOFTDOG, "/dev/watchdog0",
     BASE_ARGS " kswap.softdog=1 systemd.watchdog_device=/dev/watchdog0 "
               "systemd.watchdog_sec=60"},
    {"no device, softdog only in the old kernel", "", "", "kernel/fs/ext4/ext4.ko:\n", "",
     "kernel/drivers/watchdog/softdog.ko:\n", KS_TRIAL_WATCHDOG_NONE, "", BASE_ARGS},
    {"no device, a look-alike module name", "", "",
     "kernel/drivers/watchdog/xsoftdog.ko:\nkernel/drivers/watchdog/softdog.ko.bak:\n", NULL, NULL,
     KS_TRIAL_WATCHDOG_NONE, "", BASE_ARGS},
    {"look-alike names under sys/class/watchdog", "watchdog watchdogX watchdog12345 foo", "", NULL,
     NULL, NULL, KS_TRIAL_WATCHDOG_NONE, "", BASE_ARGS},
    {"softdog an earlier trial loaded (watchdog0), softdog in the new kernel: loaded again",
     "watchdog0", "watchdog0", "kernel/drivers/watchdog/softdog.ko:\n", NULL, NULL,
     KS_TRIAL_WATCHDOG_SOFTDOG, "/dev/watchdog0",
     BASE_ARGS " kswap.softdog=1 systemd.watchdog_device=/dev/watchdog0 "
               "systemd.watchdog_sec=60"},
    {"softdog watchdog0 and an i6300esb watchdog1: the i6300esb, as watchdog0 on the trial",
     "watchdog0 watchdog1", "watchdog0", "kernel/drivers/watchdog/softdog.ko:\n", NULL, NULL,
     KS_TRIAL_WATCHDOG_DEVICE, "/dev/watchdog0",
     BASE_ARGS " systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60"},
    {"only a softdog, none in the new kernel", "watchdog0", "watchdog0",
     "kernel/fs/ext4/ext4.ko:\n", "", NULL, KS_TRIAL_WATCHDOG_NONE, "", BASE_ARGS},
    {"nothing at all (no module lists either)", "", "", NULL, NULL, NULL, KS_TRIAL_WATCHDOG_NONE,
     "", BASE_ARGS},
};

static void put(const char *base, const char *rel, const char *text)
{
    _cleanup_free_ char *path = ks_asprintf("%s/%s", base, rel);
    _cleanup_free_ char *cmd = ks_asprintf("mkdir -p \"$(dirname '%s')\"", path);
    FILE *f;

    if (!path || !cmd || system(cmd) != 0)
        abort();
    f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

/* Whether the space-separated list names word. */
static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);

    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return true;
    return false;
}

static unsigned count(const char *text, const char *needle)
{
    unsigned n = 0;

    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The linux line of the menuentry whose title starts with title, NULL when none. */
static char *linux_line_of(const char *text, const char *title)
{
    const char *e = strstr(text, title), *l, *nl;

    if (!e)
        return NULL;
    l = strstr(e, "\tlinux\t");
    if (!l)
        return NULL;
    l++;
    nl = strchr(l, '\n');
    return nl ? strndup(l, (size_t)(nl - l)) : strdup(l);
}

static void test_cases(void)
{
    _cleanup_grub_cfg_ ks_grub_cfg *cfg = NULL;

    CHECK(ks_grub_cfg_parse(grub_cfg, strlen(grub_cfg), &cfg, NULL) == 0);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char base[] = "/tmp/kswap-trialboot.XXXXXX";
        _cleanup_root_ ks_root *root = NULL;
        _cleanup_free_ char *args = NULL, *text = NULL, *detail = NULL, *trial = NULL, *back = NULL,
                            *want = NULL, *devs = NULL, *cmd = NULL;
        ks_trial_watchdog wd = {.kind = _KS_TRIAL_WATCHDOG_KIND_INVALID};

        if (!mkdtemp(base))
            abort();
        put(base, "sys/class/watchdog/.keep", "");
        devs = strdup(cases[i].devices);
        for (char *save = NULL, *d = strtok_r(devs, " ", &save); d;
             d = strtok_r(NULL, " ", &save)) {
            _cleanup_free_ char *rel = ks_asprintf("sys/class/watchdog/%s/identity", d);
            put(base, rel,
                has_word(cases[i].softdogs, d) ? "Software Watchdog\n" : "i6300ESB timer\n");
        }
        if (cases[i].new_dep)
            put(base, "lib/modules/" NEW "/modules.dep", cases[i].new_dep);
        if (cases[i].new_bin)
            put(base, "lib/modules/" NEW "/modules.builtin", cases[i].new_bin);
        if (cases[i].old_dep)
            put(base, "lib/modules/" OLD "/modules.dep", cases[i].old_dep);
        CHECK(ks_root_open(base, &root) == 0);

        CHECK(ks_trial_watchdog_pick(root, NEW, &wd) == 0);
        CHECK_MSG(wd.kind == cases[i].kind, "%s: kind %s, expected %s", cases[i].name,
                  strempty(ks_trial_watchdog_kind_to_string(wd.kind)),
                  ks_trial_watchdog_kind_to_string(cases[i].kind));
        CHECK_STREQ(wd.device, cases[i].device);

        args = ks_trial_args("0123abcd", 900, &wd);
        CHECK_MSG(streq_ptr(args, cases[i].args), "%s:\n  got  '%s'\n  want '%s'", cases[i].name,
                  strempty(args), cases[i].args);

        CHECK(ks_trial_grubd_text(cfg, NEW, OLD, args, &text, &detail) == 0);
        trial = text ? linux_line_of(text, "menuentry 'kswap trial: " NEW "'") : NULL;
        back = text ? linux_line_of(text, "menuentry 'kswap way back: " OLD "'") : NULL;
        want = ks_asprintf("linux\t/boot/vmlinuz-" NEW " root=UUID=" U " ro quiet panic=10 %s",
                           cases[i].args);
        CHECK_MSG(streq_ptr(trial, want), "%s: trial line '%s'", cases[i].name, strempty(trial));
        CHECK_MSG(streq_ptr(back, "linux\t/boot/vmlinuz-" OLD " root=UUID=" U " ro quiet panic=10"),
                  "%s: the way-back line '%s' must be the old entry's own", cases[i].name,
                  strempty(back));
        /* One marker, and the watchdog's arguments once at most: on the trial entry alone. */
        CHECK_INTEQ(count(text, "kswap.trial="), 1);
        CHECK_INTEQ(count(text, "nmi_watchdog=panic"), 1);
        CHECK_INTEQ(count(text, "systemd.watchdog_sec="),
                    cases[i].kind == KS_TRIAL_WATCHDOG_NONE ? 0 : 1);
        cmd = ks_asprintf("rm -rf '%s'", base);
        if (!cmd || system(cmd) != 0)
            abort();
    }
}

/* No watchdog given (NULL) is the same as none. */
static void test_null(void)
{
    _cleanup_free_ char *args = ks_trial_args("1", 60, NULL);

    CHECK_STREQ(args, "kswap.trial=1 kswap.deadline=60 oops=panic softlockup_panic=1 "
                      "nmi_watchdog=panic modprobe.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci");
    CHECK_STREQ(ks_trial_watchdog_kind_to_string(KS_TRIAL_WATCHDOG_SOFTDOG), "softdog");
    CHECK(ks_trial_watchdog_kind_to_string(_KS_TRIAL_WATCHDOG_KIND_MAX) == NULL);
}

int main(void)
{
    test_cases();
    test_null();
    TEST_DONE();
}
