/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The trial boot's generator (checks/kswap-trial-generator, as built: $KS_BUILD_ROOT) on its
 * one input, the kernel command line (issue 34, items 7 and 8). The input's first byte says
 * whether the journal of the root it runs in has a trial armed; the rest is the command line
 * (NUL bytes and newlines become spaces, as no command line holds them). Whatever it holds:
 * the generator exits 0, writes its units exactly when the last kswap.trial= is the armed
 * trial's id, and then a RuntimeMaxSec= of whole seconds from 30 to 86400 (what systemd
 * parses and kswap allows). Each input runs sh once: slow as fuzzing goes (about 200 inputs a
 * second), but it is the script itself that is fuzzed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "lib/basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ARMED_BOOT "0123abcd-ef01-4a00-8b00-00000000c0de"
#define TRIAL_ID "0123abcdef01"

static char base[] = "/tmp/kswap-fuzz-generator-XXXXXX";

static void remove_base(void)
{
    _cleanup_free_ char *rm = ks_asprintf("rm -rf '%s'", base);
    if (rm && system(rm) != 0)
        fprintf(stderr, "cannot remove %s\n", base);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0)
        abort();
}

/* The value of the last kswap.trial= word of cmdline, split as sh splits it; NULL: none. */
static char *last_marker(const char *cmdline)
{
    _cleanup_strv_free_ char **words = NULL;
    char *last = NULL;

    if (ks_strv_split(cmdline, " \t\n", &words) < 0)
        abort();
    for (char **w = words; *w; w++) {
        const char *v = ks_startswith(*w, "kswap.trial=");
        if (v) {
            free(last);
            last = strdup(v);
        }
    }
    return last;
}

static int run_generator(const char *gen, const char *out, const char *run, const char *root,
                         const char *cmdline)
{
    int status = 0;
    pid_t pid = fork();

    if (pid < 0)
        abort();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        setenv("SYSTEMD_PROC_CMDLINE", cmdline, 1);
        setenv("KSWAP_GENERATOR_RUN", run, 1);
        setenv("KSWAP_GENERATOR_ROOT", root, 1);
        execl("/bin/sh", "sh", gen, out, out, out, (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid)
        abort();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* RuntimeMaxSec= of the deadline unit in seconds; -1 when it is not whole seconds. */
static long runtime_max(const char *unit)
{
    _cleanup_free_ char *text = NULL;
    FILE *f = fopen(unit, "re");
    size_t cap = 0, len;
    const char *p;
    char *end;
    long v;

    if (!f)
        abort();
    len = getdelim(&text, &cap, '\0', f);
    fclose(f);
    if (len == (size_t)-1 || !(p = strstr(text, "\nRuntimeMaxSec=")))
        return -1;
    p += strlen("\nRuntimeMaxSec=");
    errno = 0;
    v = strtol(p, &end, 10);
    return errno == 0 && end > p && end[0] == 's' && end[1] == '\n' ? v : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char gen[4096];
    _cleanup_free_ char *cmdline = NULL, *marker = NULL, *out = NULL, *run = NULL, *root = NULL,
                        *journal = NULL, *unit = NULL, *rm = NULL;
    bool armed, want, got;
    struct stat st;
    int rc;

    if (!gen[0]) {
        const char *b = getenv("KS_BUILD_ROOT");
        snprintf(gen, sizeof(gen), "%s/checks/kswap-trial-generator", b ? b : "build");
        if (!mkdtemp(base))
            abort();
        atexit(remove_base);
    }
    if (size == 0 || size > 4096)
        return 0;
    armed = data[0] & 1;
    /* not strndup: it would stop at the first NUL, and the loop below runs to size - 1 */
    cmdline = malloc(size);
    if (!cmdline)
        abort();
    memcpy(cmdline, data + 1, size - 1);
    for (size_t i = 0; i < size - 1; i++)
        if (cmdline[i] == '\0' || cmdline[i] == '\n')
            cmdline[i] = ' ';
    cmdline[size - 1] = '\0';

    out = ks_asprintf("%s/out", base);
    run = ks_asprintf("%s/run", base);
    root = ks_asprintf("%s/root", base);
    journal = ks_asprintf("%s/root/var/lib/kswap/state.json", base);
    unit = ks_asprintf("%s/out/kswap-trial-deadline.service", base);
    rm = ks_asprintf("rm -rf '%s/out' '%s/run' '%s/root' && mkdir -p '%s/out' "
                     "'%s/root/var/lib/kswap'",
                     base, base, base, base, base);
    if (!out || !run || !root || !journal || !unit || !rm || system(rm) != 0)
        abort();
    put(journal, armed ? "{\n  \"version\": 1,\n  \"state\": \"armed\",\n"
                         "  \"armed_boot_id\": \"" ARMED_BOOT "\",\n"
                         "  \"armed_btime\": 1700000000\n}\n"
                       : "{\n  \"version\": 1,\n  \"state\": \"idle\"\n}\n");

    rc = run_generator(gen, out, run, root, cmdline);
    if (rc != 0) {
        fprintf(stderr, "the generator exited %d on '%s'\n", rc, cmdline);
        abort();
    }
    marker = last_marker(cmdline);
    want = armed && marker && streq(marker, TRIAL_ID);
    got = stat(unit, &st) == 0;
    if (got != want) {
        fprintf(stderr, "units %s for '%s' (armed: %d)\n", got ? "written" : "missing", cmdline,
                armed);
        abort();
    }
    if (got) {
        long v = runtime_max(unit);
        if (v < 30 || v > 86400) {
            fprintf(stderr, "RuntimeMaxSec %ld for '%s'\n", v, cmdline);
            abort();
        }
    }
    return 0;
}
