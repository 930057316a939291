/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * This machine as the reference: the live x86-64 level must equal what the dynamic loader
 * reports, and the virtualization word what systemd-detect-virt prints. Only the test runs
 * these tools; kswap itself never does. Exit 77 (skip) only when neither tool exists.
 */
#include <sys/wait.h>

#include "lib/host/cpu.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "lib/host/virt.h"
#include "test.h"

#define LDSO "/lib64/ld-linux-x86-64.so.2"

/* Runs a shell command; returns its stdout (NULL when it could not start) and exit status. */
static char *run(const char *cmd, int *ret_status)
{
    FILE *p = popen(cmd, "r");
    char *out = NULL;
    size_t len = 0, n;
    int status;

    if (!p)
        return NULL;
    out = malloc(1 << 16);
    if (!out)
        abort();
    while ((n = fread(out + len, 1, (1 << 16) - 1 - len, p)) > 0)
        len += n;
    out[len] = '\0';
    status = pclose(p);
    *ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

/* Highest "x86-64-vN (supported" line of ld.so --help; 1 when it lists levels but none is. */
static int ldso_level(const char *help)
{
    const char *p = help;
    int level = 0;
    bool listed = false;

    while ((p = strstr(p, "x86-64-v"))) {
        int n = p[8] - '0';

        if (n >= 2 && n <= 4) {
            listed = true;
            if (ks_startswith(p + 9, " (supported") && n > level)
                level = n;
        }
        p += 8;
    }
    if (!listed)
        return -1;
    return level ? level : 1;
}

static int check_level(void)
{
    _cleanup_free_ char *help = NULL;
    int status = 0, want, got;

    if (access(LDSO, X_OK) < 0) {
        fprintf(stderr, "%s absent: level not compared\n", LDSO);
        return 0;
    }
    help = run(LDSO " --help 2>/dev/null", &status);
    CHECK_MSG(help != NULL, "cannot run %s", LDSO);
    if (!help)
        return 1;
    want = ldso_level(help);
    if (want < 0) {
        /* glibc before 2.33 prints no hwcaps levels: no reference to compare with. */
        fprintf(stderr, "%s --help lists no x86-64 levels: level not compared\n", LDSO);
        return 0;
    }
    got = ks_cpu_level_live();
    fprintf(stderr, "ld.so says x86-64-v%d, kswap says v%d\n", want, got);
    CHECK_INTEQ(got, want);
    return 1;
}

static int check_virt(void)
{
    _cleanup_free_ char *out = NULL, *word = NULL, *evidence = NULL;
    _cleanup_root_ ks_root *r = NULL;
    int status = 0;

    out = run("systemd-detect-virt 2>/dev/null", &status);
    /* The shell says 127 when the command does not exist. */
    if (!out || status == 127) {
        fprintf(stderr, "systemd-detect-virt absent: virtualization not compared\n");
        return 0;
    }
    out[strcspn(out, "\n")] = '\0';
    CHECK_MSG(*out, "systemd-detect-virt printed nothing (exit %d)", status);

    CHECK_INTEQ(ks_root_open("/", &r), 0);
    if (!r)
        return 1;
    CHECK(ks_root_is_host(r));
    CHECK_INTEQ(ks_virt_detect(r, &word, &evidence), 0);
    fprintf(stderr, "systemd-detect-virt says %s, kswap says %s (%s)\n", out, strempty(word),
            strempty(evidence));
    CHECK_STREQ(word, out);
    /* systemd-detect-virt exits 0 exactly when it found some virtualization. */
    CHECK_INTEQ(status == 0, !streq_ptr(word, "none"));
    return 1;
}

int main(void)
{
    int compared = 0;

    compared += check_level();
    compared += check_virt();
    if (compared == 0) {
        fprintf(stderr, "no reference tool on this machine\n");
        return 77;
    }
    TEST_DONE();
}
