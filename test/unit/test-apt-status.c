/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>

#include "lib/basic/util.h"
#include "lib/repo/apt-status.h"
#include "test.h"

/* Lines as apt 2.6 to 2.9 write them to APT::Status-Fd, and mutations of them. */
static void test_parse(void)
{
    static const struct {
        const char *name, *line;
        int ret;
        ks_apt_status_kind kind;
        const char *subject;
        double percent;
        const char *message;
        ks_apt_phase phase;
    } cases[] = {
        {"download", "dlstatus:1:20.2374:Retrieving file 1 of 2 (2s remaining)\n", 0,
         KS_APT_STATUS_DL, "1", 20.2374, "Retrieving file 1 of 2 (2s remaining)",
         KS_APT_PHASE_DOWNLOAD},
        {"download-int", "dlstatus:2:100:Retrieving file 2 of 2", 0, KS_APT_STATUS_DL, "2", 100,
         "Retrieving file 2 of 2", KS_APT_PHASE_DOWNLOAD},
        {"dpkg-exec", "pmstatus:dpkg-exec:0.0000:Running dpkg\n", 0, KS_APT_STATUS_PM, "dpkg-exec",
         0, "Running dpkg", KS_APT_PHASE_NONE},
        {"preparing",
         "pmstatus:linux-image-6.1.0-56-amd64:9.0909:Preparing linux-image-6.1.0-56-amd64", 0,
         KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 9.0909,
         "Preparing linux-image-6.1.0-56-amd64", KS_APT_PHASE_UNPACK},
        {"unpacking",
         "pmstatus:linux-image-6.1.0-56-amd64:18.1818:Unpacking linux-image-6.1.0-56-amd64 "
         "(6.1.158-1)",
         0, KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 18.1818,
         "Unpacking linux-image-6.1.0-56-amd64 (6.1.158-1)", KS_APT_PHASE_UNPACK},
        {"prep-configure",
         "pmstatus:linux-image-6.1.0-56-amd64:36.3636:Preparing to configure "
         "linux-image-6.1.0-56-amd64",
         0, KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 36.3636,
         "Preparing to configure linux-image-6.1.0-56-amd64", KS_APT_PHASE_SETUP},
        {"configuring",
         "pmstatus:linux-image-6.1.0-56-amd64:45.4545:Configuring linux-image-6.1.0-56-amd64", 0,
         KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 45.4545,
         "Configuring linux-image-6.1.0-56-amd64", KS_APT_PHASE_SETUP},
        {"installed",
         "pmstatus:linux-image-6.1.0-56-amd64:54.5454:Installed linux-image-6.1.0-56-amd64", 0,
         KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 54.5454,
         "Installed linux-image-6.1.0-56-amd64", KS_APT_PHASE_SETUP},
        {"trigger",
         "pmstatus:initramfs-tools:90.9090:Running post-installation trigger initramfs-tools", 0,
         KS_APT_STATUS_PM, "initramfs-tools", 90.909,
         "Running post-installation trigger initramfs-tools", KS_APT_PHASE_TRIGGERS},
        {"removal",
         "pmstatus:linux-image-6.1.0-56-amd64:0.0000:Preparing for removal of "
         "linux-image-6.1.0-56-amd64",
         0, KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 0,
         "Preparing for removal of linux-image-6.1.0-56-amd64", KS_APT_PHASE_REMOVE},
        {"purged",
         "pmstatus:linux-image-6.1.0-56-amd64:100.0000:Completely removed "
         "linux-image-6.1.0-56-amd64",
         0, KS_APT_STATUS_PM, "linux-image-6.1.0-56-amd64", 100,
         "Completely removed linux-image-6.1.0-56-amd64", KS_APT_PHASE_REMOVE},
        {"pmerror",
         "pmerror:linux-image-6.1.0-56-amd64:45.4545:installed linux-image-6.1.0-56-amd64 package "
         "post-installation script subprocess returned error exit status 1",
         0, KS_APT_STATUS_PMERROR, "linux-image-6.1.0-56-amd64", 45.4545,
         "installed linux-image-6.1.0-56-amd64 package post-installation script subprocess "
         "returned error exit status 1",
         KS_APT_PHASE_NONE},
        {"conffile",
         "pmconffile:/etc/default/grub:50.0000:'/etc/default/grub' '/etc/default/grub.dpkg-new' 1 "
         "1",
         0, KS_APT_STATUS_PMCONFFILE, "/etc/default/grub", 50,
         "'/etc/default/grub' '/etc/default/grub.dpkg-new' 1 1", KS_APT_PHASE_NONE},
        {"colon-in-message", "pmstatus:foo:10:Unpacking foo (1:2.3-4)", 0, KS_APT_STATUS_PM, "foo",
         10, "Unpacking foo (1:2.3-4)", KS_APT_PHASE_UNPACK},
        {"media", "media-change:Debian 12:Debian GNU/Linux 12:/media/cdrom", 0,
         KS_APT_STATUS_MEDIA_CHANGE, "Debian 12", -1, "Debian GNU/Linux 12:/media/cdrom",
         KS_APT_PHASE_NONE},
        {"unknown-words", "pmstatus:foo:10:Frobbing foo", 0, KS_APT_STATUS_PM, "foo", 10,
         "Frobbing foo", KS_APT_PHASE_NONE},
        {"empty-message", "pmstatus:foo:10:", 0, KS_APT_STATUS_PM, "foo", 10, "",
         KS_APT_PHASE_NONE},
        /* refused */
        {"empty", "", -EBADMSG},
        {"plain-output", "Unpacking foo (1.0) ...", -EBADMSG},
        {"unknown-prefix", "xxstatus:1:10:msg", -EBADMSG},
        {"prefix-case", "PMSTATUS:foo:10:msg", -EBADMSG},
        {"three-fields", "pmstatus:foo:10", -EBADMSG},
        {"no-subject", "pmstatus::10:Unpacking foo", -EBADMSG},
        {"percent-empty", "pmstatus:foo::Unpacking foo", -EBADMSG},
        {"percent-word", "pmstatus:foo:ten:Unpacking foo", -EBADMSG},
        {"percent-negative", "pmstatus:foo:-1:Unpacking foo", -EBADMSG},
        {"percent-over", "dlstatus:1:100.5:Retrieving file 1 of 1", -EBADMSG},
        {"percent-huge", "dlstatus:1:99999999999999999999:x", -EBADMSG},
        {"percent-comma", "dlstatus:1:20,5:Retrieving file 1 of 1", -EBADMSG},
        {"percent-two-dots", "dlstatus:1:2.0.5:x", -EBADMSG},
        {"percent-dot-only", "dlstatus:1:.:x", -EBADMSG},
        {"percent-exp", "dlstatus:1:1e2:x", -EBADMSG},
        {"control-byte", "pmstatus:foo:10:Unpacking \033[31mfoo", -EBADMSG},
        {"carriage-return", "pmstatus:foo:10:Unpacking foo\r", -EBADMSG},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        ks_apt_status s = {0};
        int r = ks_apt_status_parse(cases[i].line, strlen(cases[i].line), &s);

        CHECK_MSG(r == cases[i].ret, "%s: returns %d, expected %d", cases[i].name, r, cases[i].ret);
        if (r < 0 || cases[i].ret < 0)
            continue;
        CHECK_MSG(s.kind == cases[i].kind, "%s: kind %d", cases[i].name, s.kind);
        CHECK_MSG(streq_ptr(s.subject, cases[i].subject), "%s: subject '%s'", cases[i].name,
                  strempty(s.subject));
        CHECK_MSG(fabs(s.percent - cases[i].percent) < 1e-3, "%s: percent %f", cases[i].name,
                  s.percent);
        CHECK_MSG(streq_ptr(s.message, cases[i].message), "%s: message '%s'", cases[i].name,
                  strempty(s.message));
        CHECK_MSG(s.phase == cases[i].phase, "%s: phase %d, expected %d", cases[i].name, s.phase,
                  cases[i].phase);
        ks_apt_status_done(&s);
    }
}

typedef struct seen {
    char phases[256];
    size_t n;
} seen;

static void record(void *userdata, const ks_apt_status *s)
{
    seen *x = userdata;
    if (x->n + 2 < sizeof(x->phases))
        x->phases[x->n++] = s->phase == KS_APT_PHASE_NONE ? '-' : "dustr"[s->phase];
    x->phases[x->n] = '\0';
}

/* A stream cut at every byte gives the same lines as one write; bad and overlong lines are
 * counted, never delivered. */
static void test_stream(void)
{
    static const char text[] = "dlstatus:1:0:Retrieving file 1 of 1\n"
                               "dlstatus:1:100:Retrieving file 1 of 1\n"
                               "garbage line\n"
                               "pmstatus:dpkg-exec:0.0000:Running dpkg\n"
                               "pmstatus:p:20.0000:Preparing p\n"
                               "pmstatus:p:40.0000:Unpacking p (1)\n"
                               "pmstatus:p:60.0000:Configuring p\n"
                               "pmstatus:initramfs-tools:80.0000:Running post-installation "
                               "trigger initramfs-tools\n"
                               "pmstatus:p:100.0000:Installed p\n"
                               "pmstatus:p:100:cut without its newline";
    for (size_t step = 1; step <= sizeof(text); step++) {
        ks_apt_status_stream st = {0};
        seen x = {{0}, 0};

        for (size_t off = 0; off < sizeof(text) - 1; off += step)
            ks_apt_status_feed(&st, text + off,
                               off + step > sizeof(text) - 1 ? sizeof(text) - 1 - off : step,
                               record, &x);
        CHECK_MSG(streq(x.phases, "dd-uusts"), "step %zu: phases '%s'", step, x.phases);
        CHECK_MSG(st.n_lines == 9 && st.n_bad == 1, "step %zu: %zu lines, %zu bad", step,
                  st.n_lines, st.n_bad);
    }
    {
        ks_apt_status_stream st = {0};
        seen x = {{0}, 0};
        char big[6000];

        memset(big, 'a', sizeof(big));
        memcpy(big, "pmstatus:p:1:", 13);
        ks_apt_status_feed(&st, big, sizeof(big), record, &x);
        ks_apt_status_feed(&st, "\npmstatus:p:2:Unpacking p\n", 26, record, &x);
        CHECK_MSG(streq(x.phases, "u") && st.n_bad == 1, "overlong line dropped whole: '%s'",
                  x.phases);
    }
}

int main(void)
{
    test_parse();
    test_stream();
    CHECK_STREQ(ks_apt_phase_to_string(KS_APT_PHASE_TRIGGERS), "triggers");
    CHECK(ks_apt_phase_to_string(KS_APT_PHASE_NONE) == NULL);
    TEST_DONE();
}
