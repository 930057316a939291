/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bootctl's promise check: a forecast that boots the right release from a recovery entry is
 * refused (the trial would run in recovery mode), the same default on the normal entry passes.
 * ks_boot_disarm() with no next_entry only checks the promise and writes nothing.
 */
#include "lib/engine/bootctl.h"
#include "grub-test-util.h"

#define UUID "3378f75a-e05c-4372-88dd-b98c02822c90"
#define ADV "gnulinux-advanced-" UUID
#define NORMAL ADV ">gnulinux-4.9.0-3-amd64-advanced-" UUID
#define RECOVERY ADV ">gnulinux-4.9.0-3-amd64-recovery-" UUID

static void test_recovery_refused(void)
{
    static const struct {
        const char *name;
        const char *default_value; /* what grub.cfg sets default to */
        int want;                  /* ks_boot_disarm's answer for "4.9.0-3-amd64" */
    } cases[] = {
        {"normal entry", NORMAL, 0},
        {"recovery entry", RECOVERY, -EPROTO},
        {"first entry", "0", 0},
    };
    _cleanup_free_ char *text = gt_read_fixture("debian-lvm.cfg", NULL);

    CHECK(text != NULL);
    if (!text)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *from = strdup("set default=\"0\"");
        _cleanup_free_ char *to = ks_asprintf("set default=\"%s\"", cases[i].default_value);
        _cleanup_free_ char *mut = from && to ? gt_replace(text, from, to) : NULL;
        _cleanup_free_ char *detail = NULL;
        ks_boot b = {.env_writable = true};

        CHECK_MSG(mut != NULL, "%s: mutation not applicable", cases[i].name);
        if (!mut)
            continue;
        b.cfg = gt_parse(mut);
        CHECK_MSG(b.cfg != NULL, "%s", cases[i].name);
        CHECK_INTEQ(ks_grubenv_new(&b.env), 0);
        if (!b.cfg || !b.env) {
            ks_boot_done(&b);
            continue;
        }
        CHECK_MSG(ks_boot_disarm(NULL, &b, "4.9.0-3-amd64", &detail) == cases[i].want, "%s: %s",
                  cases[i].name, strempty(detail));
        CHECK_MSG((cases[i].want < 0) == (detail != NULL), "%s: detail %s", cases[i].name,
                  strempty(detail));
        ks_boot_done(&b);
    }
}

int main(void)
{
    test_recovery_refused();
    TEST_DONE();
}
