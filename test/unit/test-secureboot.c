/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/host/secureboot.h"
#include "lib/basic/util.h"
#include "test.h"

#define V "sys/firmware/efi/efivars/"
#define SB V "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define SM V "SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define MOK V "MokSBStateRT-605dab50-e046-4300-abb6-3dd810dd8b23"
/* efivarfs: 4 attribute bytes (NV|BS|RT = 0x06 here), then the data */
#define VAR(path, byte) "printf '\\006\\000\\000\\000\\" byte "' > " path ";"

static const struct {
    const char *name, *setup;
    bool efi, enabled, shim_off;
} cases[] = {
    {"BIOS boot", "true;", false, false, false},
    {"UEFI without efivars", "mkdir -p sys/firmware/efi;", true, false, false},
    {"Secure Boot on", "mkdir -p " V ";" VAR(SB, "001") VAR(SM, "000"), true, true, false},
    {"setup mode", "mkdir -p " V ";" VAR(SB, "001") VAR(SM, "001"), true, false, false},
    {"Secure Boot off", "mkdir -p " V ";" VAR(SB, "000") VAR(SM, "000"), true, false, false},
    {"no SetupMode variable", "mkdir -p " V ";" VAR(SB, "001"), true, true, false},
    {"SecureBoot without data", "mkdir -p " V "; printf '\\006\\000\\000\\000' > " SB ";", true,
     false, false},
    {"value 2 is not 1", "mkdir -p " V ";" VAR(SB, "002") VAR(SM, "000"), true, false, false},
    {"shim validation disabled", "mkdir -p " V ";" VAR(SB, "001") VAR(SM, "000") VAR(MOK, "001"),
     true, true, true},
};

int main(void)
{
    char base[] = "/tmp/kswap-test-secureboot.XXXXXX";
    _cleanup_free_ char *rm = NULL;

    CHECK(mkdtemp(base) != NULL);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *dir = ks_asprintf("%s/%zu", base, i), *cmd = NULL;
        _cleanup_root_ ks_root *root = NULL;
        ks_secureboot sb = {.efi = !cases[i].efi};

        cmd = ks_asprintf("mkdir -p %s && cd %s && %s", dir, dir, cases[i].setup);
        CHECK_MSG(system(cmd) == 0, "%s", cmd);
        CHECK(ks_root_open(dir, &root) == 0);
        CHECK(ks_secureboot_read(root, &sb) == 0);
        CHECK_MSG(sb.efi == cases[i].efi, "%s", cases[i].name);
        CHECK_MSG(sb.enabled == cases[i].enabled, "%s", cases[i].name);
        CHECK_MSG(sb.shim_validation_off == cases[i].shim_off, "%s", cases[i].name);
    }
    rm = ks_asprintf("rm -rf %s", base);
    CHECK(system(rm) == 0);
    TEST_DONE();
}
