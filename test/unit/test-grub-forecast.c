/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "grub/forecast.h"
#include "grub-test-util.h"

#define U24 "f93ca2dd-74af-4ee8-b478-970b29be5ca3"
#define ADV24 "gnulinux-advanced-" U24
#define K48 "gnulinux-6.8.0-48-generic-advanced-" U24
#define K45 "gnulinux-6.8.0-45-generic-advanced-" U24
#define U22 "b78b2f9f-3a08-427a-ad4e-4a04f235761c"
#define ADV22 "gnulinux-advanced-" U22
#define K1026 "gnulinux-5.15.0-1026-aws-advanced-" U22

typedef struct expect {
    const char *kernel; /* NULL: waits / no kernel */
    bool one_shot, waits, fell_back;
    const char *after;       /* a change that must be listed, or NULL */
    bool recovery;           /* the entry booted is a recovery entry (bootctl refuses it) */
    const char *wait_reason; /* when it waits: why ("timeout", "password"); NULL: not checked */
} expect;

static const char *change_list(char **l)
{
    static char buf[1024];
    buf[0] = '\0';
    for (; l && *l; l++) {
        strncat(buf, *l, sizeof(buf) - strlen(buf) - 3);
        strcat(buf, "; ");
    }
    return buf;
}

/* efi: the forecast for GRUB x86_64-efi ($grub_platform "efi"), else i386-pc. */
static void run_platform(const char *name, const char *fixture, const char *from, const char *to,
                         const char *from2, const char *to2, const char *const *vars, bool writable,
                         bool efi, const expect *want, size_t n_want)
{
    _cleanup_free_ char *text = gt_read_fixture(fixture, NULL);
    _cleanup_free_ char *mut = NULL;
    _cleanup_grubenv_ ks_grubenv *env = NULL;
    ks_grub_forecast f = {0};
    ks_grub_cfg *c;

    CHECK_MSG(text != NULL, "%s", fixture);
    if (!text)
        return;
    if (from) {
        mut = gt_replace(text, from, to);
        CHECK_MSG(mut != NULL, "%s: mutation not applicable", name);
        if (!mut)
            return;
    }
    if (from2 && mut) {
        char *m2 = gt_replace(mut, from2, to2);
        CHECK_MSG(m2 != NULL, "%s: second mutation not applicable", name);
        free(mut);
        mut = m2;
        if (!mut)
            return;
    }
    c = gt_parse(mut ? mut : text);
    CHECK_MSG(c != NULL, "%s", name);
    if (!c)
        return;
    env = vars ? gt_env(vars) : NULL;
    CHECK_MSG(ks_grub_forecast_run(c, env, writable, efi, 3, &f) == 0, "%s", name);
    CHECK_MSG(f.n == n_want, "%s: %zu boots, want %zu", name, f.n, n_want);
    for (size_t i = 0; i < f.n && i < n_want; i++) {
        const ks_grub_forecast_boot *b = &f.v[i];
        CHECK_MSG(streq_ptr(b->kernel, want[i].kernel), "%s boot %zu: kernel %s, want %s", name,
                  i + 1, strempty(b->kernel), strempty(want[i].kernel));
        CHECK_MSG(b->one_shot == want[i].one_shot, "%s boot %zu: one_shot %d", name, i + 1,
                  b->one_shot);
        CHECK_MSG(b->waits == want[i].waits, "%s boot %zu: waits %d", name, i + 1, b->waits);
        CHECK_MSG(b->fell_back == want[i].fell_back, "%s boot %zu: fell_back %d", name, i + 1,
                  b->fell_back);
        CHECK_MSG(b->recovery == want[i].recovery, "%s boot %zu: recovery %d", name, i + 1,
                  b->recovery);
        if (want[i].wait_reason)
            CHECK_MSG(streq_ptr(b->wait_reason, want[i].wait_reason),
                      "%s boot %zu: wait_reason %s, want %s", name, i + 1, strempty(b->wait_reason),
                      want[i].wait_reason);
        if (want[i].after)
            CHECK_MSG(ks_strv_contains(b->changes, want[i].after), "%s boot %zu: changes [%s]",
                      name, i + 1, change_list(b->changes));
        if (getenv("KS_DUMP"))
            fprintf(stderr, "%s #%zu: %s %s%s [%s] id=%s\n", name, i + 1, strempty(b->kernel),
                    b->one_shot ? "one-shot " : "", b->waits ? "waits" : "",
                    change_list(b->changes), strempty(b->id_path));
    }
    ks_grub_forecast_done(&f);
    ks_grub_cfg_free(c);
}

static void run_case2(const char *name, const char *fixture, const char *from, const char *to,
                      const char *from2, const char *to2, const char *const *vars, bool writable,
                      const expect *want, size_t n_want)
{
    run_platform(name, fixture, from, to, from2, to2, vars, writable, false, want, n_want);
}

static void run_case(const char *name, const char *fixture, const char *from, const char *to,
                     const char *const *vars, bool writable, const expect *want, size_t n_want)
{
    run_case2(name, fixture, from, to, NULL, NULL, vars, writable, want, n_want);
}

static void test_ubuntu_24_04(void)
{
    const char *f = "ubuntu-24.04-two-kernels.cfg";
    static const char *const none[] = {NULL};
    static const char *const by_id[] = {"next_entry=" ADV24 ">" K45, NULL};
    static const char *const by_title[] = {
        "next_entry=Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-45-generic", NULL};
    static const char *const bare_title[] = {"next_entry=Ubuntu, with Linux 6.8.0-45-generic",
                                             NULL};
    static const char *const saved[] = {"saved_entry=" ADV24 ">" K45, NULL};
    static const char *const saved_and_next[] = {"saved_entry=" ADV24 ">" K45,
                                                 "next_entry=" ADV24 ">" K48, NULL};
    static const char *const recordfail[] = {"recordfail=1", NULL};
    static const char *const prev_saved[] = {"prev_saved_entry=" ADV24 ">" K45, NULL};

    run_case("plain", f, NULL, NULL, none, true,
             (expect[]){{"6.8.0-48-generic", false, false, false, "recordfail: unset -> '1'"},
                        {"6.8.0-48-generic", false, false, false, NULL},
                        {"6.8.0-48-generic", false, false, false, NULL}},
             3);
    run_case("no grubenv", f, NULL, NULL, NULL, true,
             (expect[]){{"6.8.0-48-generic"}, {"6.8.0-48-generic"}, {"6.8.0-48-generic"}}, 3);
    run_case("one-shot by id path", f, NULL, NULL, by_id, true,
             (expect[]){
                 {"6.8.0-45-generic", true, false, false, "next_entry: '" ADV24 ">" K45 "' -> ''"},
                 {"6.8.0-48-generic", false, false, false, "recordfail: unset -> '1'"},
                 {"6.8.0-48-generic"}},
             3);
    run_case("one-shot by title path", f, NULL, NULL, by_title, true,
             (expect[]){{"6.8.0-45-generic", true}, {"6.8.0-48-generic"}, {"6.8.0-48-generic"}}, 3);
    run_case("one-shot bare title falls back", f, NULL, NULL, bare_title, true,
             (expect[]){{"6.8.0-48-generic", true, false, true},
                        {"6.8.0-48-generic"},
                        {"6.8.0-48-generic"}},
             3);
    run_case("one-shot, env unwritable: repeats", f, NULL, NULL, by_id, false,
             (expect[]){{"6.8.0-45-generic", true},
                        {"6.8.0-45-generic", true},
                        {"6.8.0-45-generic", true}},
             3);
    /* GRUB_DEFAULT=saved: 00_header writes default="${saved_entry}". */
    run_case("saved default", f, "set default=\"0\"", "set default=\"${saved_entry}\"", saved, true,
             (expect[]){{"6.8.0-45-generic"}, {"6.8.0-45-generic"}, {"6.8.0-45-generic"}}, 3);
    run_case("saved default plus one-shot", f, "set default=\"0\"",
             "set default=\"${saved_entry}\"", saved_and_next, true,
             (expect[]){{"6.8.0-48-generic", true}, {"6.8.0-45-generic"}, {"6.8.0-45-generic"}}, 3);
    run_case("saved default unset falls back", f, "set default=\"0\"",
             "set default=\"${saved_entry}\"", none, true,
             (expect[]){{"6.8.0-48-generic", false, false, true},
                        {"6.8.0-48-generic", false, false, true},
                        {"6.8.0-48-generic", false, false, true}},
             3);
    /* recordfail left by a failed boot: timeout 30, still boots (headless: a delay). */
    run_case("recordfail set", f, NULL, NULL, recordfail, true,
             (expect[]){{"6.8.0-48-generic"}, {"6.8.0-48-generic"}, {"6.8.0-48-generic"}}, 3);
    /* GRUB_RECORDFAIL_TIMEOUT=-1 waits forever after a failed boot. */
    run_case("recordfail timeout -1 waits", f, "set timeout=30", "set timeout=-1", recordfail, true,
             (expect[]){{NULL, false, true, .wait_reason = "timeout"}}, 1);
    /* A GRUB password (superusers) and entries without --unrestricted: it asks and waits. */
    run_case("superusers", f, "### END /etc/grub.d/00_header ###",
             "set superusers=root\n### END /etc/grub.d/00_header ###", none, true,
             (expect[]){{NULL, false, true, .wait_reason = "password"}}, 1);
    run_case("superusers unrestricted", f, "menuentry 'Ubuntu' --class",
             "set superusers=root\nmenuentry 'Ubuntu' --unrestricted --class", none, true,
             (expect[]){{"6.8.0-48-generic"}, {"6.8.0-48-generic"}, {"6.8.0-48-generic"}}, 3);
    /* Old grub-reboot style: prev_saved_entry is copied into saved_entry (boot_once too). */
    run_case("prev_saved_entry", f, "set default=\"0\"", "set default=\"${saved_entry}\"",
             prev_saved, true,
             (expect[]){{"6.8.0-48-generic", true, false, true,
                         "prev_saved_entry: '" ADV24 ">" K45 "' -> ''"},
                        {"6.8.0-45-generic"},
                        {"6.8.0-45-generic"}},
             3);
    /* Numeric defaults: "1>2" descends into the submenu; out of range falls back. */
    run_case("numeric path", f, "set default=\"0\"", "set default=\"1>2\"", none, true,
             (expect[]){{"6.8.0-45-generic"}, {"6.8.0-45-generic"}, {"6.8.0-45-generic"}}, 3);
    run_case("numeric hex", f, "set default=\"0\"", "set default=\"0x1>0x2\"", none, true,
             (expect[]){{"6.8.0-45-generic"}, {"6.8.0-45-generic"}, {"6.8.0-45-generic"}}, 3);
    run_case("numeric out of range", f, "set default=\"0\"", "set default=\"9\"", none, true,
             (expect[]){{"6.8.0-48-generic", false, false, true},
                        {"6.8.0-48-generic", false, false, true},
                        {"6.8.0-48-generic", false, false, true}},
             3);
    run_case("memtest by id", f, "set default=\"0\"", "set default=\"memtest86+\"", none, true,
             (expect[]){{NULL}, {NULL}, {NULL}}, 3);
}

/*
 * $grub_platform: 30_uefi-firmware adds "UEFI Firmware Settings" (id uefi-firmware, fwsetup:
 * a reset into the firmware's setup UI, which waits) after memtest only on EFI, so entry 4 is
 * that entry on EFI and 40_custom's "Linux with custom options" on BIOS (GRUB 2.12 x86_64-efi
 * under OVMF and i386-pc agree: test/grub/qemu-grub.py platform-entry-4).
 */
static void test_platform(void)
{
    const char *f = "ubuntu-24.04-two-kernels.cfg";
    static const char *const four[] = {"saved_entry=4", NULL};
    static const char *const none[] = {NULL};
    const char *from = "set default=\"0\"", *to = "set default=\"${saved_entry}\"";

    run_platform("entry 4 on pc", f, from, to, NULL, NULL, four, true, false,
                 (expect[]){{NULL}, {NULL}, {NULL}}, 3);
    /* A forecast stops at a boot that waits. */
    run_platform("entry 4 on efi", f, from, to, NULL, NULL, four, true, true,
                 (expect[]){{NULL, false, true, .wait_reason = "firmware-setup"}}, 1);
    run_platform("uefi-firmware id on pc", f, "set default=\"0\"", "set default=\"uefi-firmware\"",
                 NULL, NULL, none, true, false,
                 (expect[]){{"6.8.0-48-generic", false, false, true},
                            {"6.8.0-48-generic", false, false, true},
                            {"6.8.0-48-generic", false, false, true}},
                 3);
    run_platform("uefi-firmware id on efi", f, "set default=\"0\"", "set default=\"uefi-firmware\"",
                 NULL, NULL, none, true, true,
                 (expect[]){{NULL, false, true, .wait_reason = "firmware-setup"}}, 1);
    /* Everything else of the Ubuntu menu is the same on both platforms. */
    run_platform("plain on efi", f, NULL, NULL, NULL, NULL, none, true, true,
                 (expect[]){{"6.8.0-48-generic", false, false, false, "recordfail: unset -> '1'"},
                            {"6.8.0-48-generic"},
                            {"6.8.0-48-generic"}},
                 3);
}

static void test_initrdfail(void)
{
    const char *f = "ubuntu-22.04-aws-force-partuuid-two-kernels.cfg";
    static const char *const sub[] = {"next_entry=" ADV22 ">" K1026, NULL};
    static const char *const flat[] = {"next_entry=" K1026, NULL};
    static const char *const none[] = {NULL};

    /* In the submenu have_grubenv is not exported: initrdfail does nothing. */
    run_case("initrdfail submenu", f, NULL, NULL, sub, true,
             (expect[]){{"5.15.0-1026-aws", true},
                        {"5.15.0-1028-aws", false, false, false, "initrdfail: unset -> '1'"},
                        {"5.15.0-1028-aws"}},
             3);
    /* Flat menu (entries at top level, GRUB_DISABLE_SUBMENU=true shape): initrdfail runs,
     * but menu.c unset "default" before the entry ran (no '>' rest), so prev_entry is saved
     * empty and the one-shot is not re-armed. */
    run_case2("initrdfail flat", f,
              "submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-" U22
              "' {",
              "if true; then", "}\n\n### END /etc/grub.d/10_linux ###",
              "fi\n\n### END /etc/grub.d/10_linux ###", flat, true,
              (expect[]){{"5.15.0-1026-aws", true, false, false, "prev_entry: unset -> ''"},
                         {"5.15.0-1028-aws", false, false, false,
                          "initrdless_boot_fallback_triggered: unset -> '1'"},
                         {"5.15.0-1028-aws", false, false, false, "recordfail: unset -> '1'"}},
              3);
    /* A one-shot path with a rest after a top-level entry: "default" keeps the rest inside the
     * entry, prev_entry gets it, and the next boot re-arms next_entry from it (once). */
    static const char *const rest[] = {"next_entry=" K1026 ">2", NULL};
    run_case2("initrdfail re-arm", f,
              "submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-" U22
              "' {",
              "if true; then", "}\n\n### END /etc/grub.d/10_linux ###",
              "fi\n\n### END /etc/grub.d/10_linux ###", rest, true,
              (expect[]){{"5.15.0-1026-aws", true, false, false, "prev_entry: unset -> '2'"},
                         /* flat menu entry 2 is 1028's recovery entry */
                         {"5.15.0-1028-aws", true, false, false, "initrdfail: '1' -> '2'",
                          .recovery = true},
                         {"5.15.0-1028-aws", false, false, false, "initrdfail: '2' -> '1'"}},
              3);
    (void)none;
}

static void test_debian(void)
{
    static const char *const none[] = {NULL};
    static const char *const one[] = {
        "next_entry=gnulinux-advanced-3378f75a-e05c-4372-88dd-b98c02822c90>"
        "gnulinux-4.9.0-3-amd64-recovery-3378f75a-e05c-4372-88dd-b98c02822c90",
        NULL};
    run_case("debian", "debian-lvm.cfg", NULL, NULL, none, true,
             (expect[]){{"4.9.0-3-amd64"}, {"4.9.0-3-amd64"}, {"4.9.0-3-amd64"}}, 3);
    run_case("debian one-shot recovery", "debian-lvm.cfg", NULL, NULL, one, true,
             (expect[]){{"4.9.0-3-amd64", true, false, false, NULL, .recovery = true},
                        {"4.9.0-3-amd64"},
                        {"4.9.0-3-amd64"}},
             3);
}

int main(void)
{
    test_ubuntu_24_04();
    test_platform();
    test_initrdfail();
    test_debian();
    TEST_DONE();
}
