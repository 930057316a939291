/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/util.h"
#include "lib/host/dpkg.h"
#include "test.h"

#define IMG "linux-image-6.18.45-x64v3-xanmod1"

/* Status text -> the unfinished packages as "PKG STATE[ reinstreq][ configurable]", ';'. */
static const struct {
    const char *name;
    const char *text;
    const char *want;
} cases[] = {
    {"all installed",
     "Package: a\nStatus: install ok installed\n\nPackage: b\nStatus: install ok installed\n", ""},
    {"half-configured after a failed postinst (/boot full)",
     "Package: a\nStatus: install ok installed\n\nPackage: " IMG
     "\nStatus: install ok half-configured\nVersion: 1.0\n",
     IMG " half-configured configurable"},
    {"half-installed with reinstreq (unpack cut)",
     "Package: " IMG "\nStatus: install reinstreq half-installed\n\n",
     IMG " half-installed reinstreq"},
    {"unpacked, not configured", "Package: x\nStatus: install ok unpacked\n",
     "x unpacked configurable"},
    {"triggers",
     "Package: t1\nStatus: install ok triggers-pending\n\nPackage: t2\nStatus: install ok "
     "triggers-awaited\n",
     "t1 triggers-pending configurable;t2 triggers-awaited configurable"},
    {"removed packages are no business",
     "Package: r\nStatus: deinstall ok config-files\n\nPackage: n\nStatus: purge ok "
     "not-installed\n",
     ""},
    {"Status before Package, CRLF, blanks",
     "Status:  install ok half-configured \r\nPackage:  crlf \r\n\r\nPackage: b\nStatus: install "
     "ok installed\n",
     "crlf half-configured configurable"},
    {"a stanza without Status, one with two words",
     "Package: a\n\nPackage: b\nStatus: install ok\n", ""},
    {"no final newline", "Package: z\nStatus: hold reinstreq installed", "z installed reinstreq"},
    {"empty", "", ""},
};

int main(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_dpkg_unfinished_list l = {0};
        char got[1024] = "";

        CHECK(ks_dpkg_status_unfinished(cases[i].text, strlen(cases[i].text), &l) == 0);
        for (size_t j = 0; j < l.n; j++) {
            size_t o = strlen(got);
            snprintf(got + o, sizeof(got) - o, "%s%s %s%s%s", j ? ";" : "", l.v[j].package,
                     l.v[j].state, l.v[j].reinstreq ? " reinstreq" : "",
                     ks_dpkg_unfinished_is_configurable(&l.v[j]) ? " configurable" : "");
        }
        CHECK_MSG(streq(got, cases[i].want), "%s: '%s', want '%s'", cases[i].name, got,
                  cases[i].want);
        ks_dpkg_unfinished_list_done(&l);
    }
    TEST_DONE();
}
