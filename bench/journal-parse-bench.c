/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Benchmark (not a test): ks_journal_parse() of a journal file, what every kswap command does
 * first (accept at boot included), or its refusal; prints the median and slowest CPU time of
 * the runs and the peak RSS. bench/journal-parse.py makes the large journals and runs it.
 *   journal-parse-bench FILE [RUNS]
 */
#include <stdio.h>
#include <time.h>

#include "lib/basic/fileio.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"
#include "checks/snapshot.h"
#include "lib/engine/journal.h"

/* CPU time of this process: on a shared machine the wall time says more about the others. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int runs = argc > 2 ? atoi(argv[2]) : 3;
    double t[64];
    _cleanup_free_ char *status = NULL;
    const char *hwm;

    if (argc < 2 || runs < 1 || runs > 64 || ks_root_open("/", &root) < 0 ||
        ks_root_read_file(root, argv[1], 64u << 20, &text, &len) < 0) {
        fprintf(stderr, "usage: journal-parse-bench FILE [RUNS (1-64)]\n");
        return 2;
    }
    for (int i = 0; i < runs; i++) {
        _cleanup_free_ char *err = NULL;
        ks_journal *j = NULL;
        double t0 = now();
        int r = ks_journal_parse(text, len, &j, &err);

        t[i] = now() - t0;
        if (i == 0 && r < 0)
            printf("refused: %s\n", err ? err : strerror(-r));
        else if (i == 0)
            printf("%zu steps, %zu changes, %zu items\n", ks_journal_n_steps(j),
                   ks_journal_n_changes(j),
                   ks_journal_running(j) ? ks_strv_length(ks_journal_running(j)->items) : 0);
        ks_journal_free(j);
    }
    qsort(t, (size_t)runs, sizeof(t[0]), cmp);
    /* VmHWM, not getrusage(): ru_maxrss keeps the peak of the image before exec (python's). */
    (void)ks_root_read_file(root, "/proc/self/status", 65536, &status, NULL);
    hwm = status ? strstr(status, "VmHWM:") : NULL;
    printf("CPU median %.3f s, slowest %.3f s over %d runs; peak RSS %ld KiB\n", t[runs / 2],
           t[runs - 1], runs, hwm ? strtol(hwm + 6, NULL, 10) : -1L);
    return 0;
}
