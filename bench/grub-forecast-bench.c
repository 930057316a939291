/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Benchmark (not a test): parse + 3-boot forecast of a grub.cfg (what apply and status do), and
 * parse + the countdowns of grub/timeouts.h (what plan does), repeated; prints the medians and
 * the slowest runs in microseconds and the peak RSS.
 *   grub-forecast-bench FILE [RUNS]
 */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "grub/cfg.h"
#include "grub/forecast.h"
#include "grub/timeouts.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    _cleanup_root_ ks_root *r = NULL;
    _cleanup_free_ char *text = NULL;
    ks_grubenv *env = NULL;
    size_t len = 0;
    int runs = argc > 2 ? atoi(argv[2]) : 200;
    double *t, *u;
    struct rusage ru;

    if (argc < 2 || runs < 1 || ks_root_open("/", &r) < 0 ||
        ks_root_read_file(r, argv[1], 256u << 20, &text, &len) < 0) {
        fprintf(stderr, "usage: grub-forecast-bench FILE [RUNS]\n");
        return 2;
    }
    t = calloc((size_t)runs, sizeof(*t));
    u = calloc((size_t)runs, sizeof(*u));
    if (!t || !u || ks_grubenv_new(&env) < 0)
        return 1;
    for (int i = 0; i < runs; i++) {
        struct timespec a, b;
        ks_grub_cfg *c = NULL;
        ks_grub_forecast f = {0};
        ks_grub_error err;
        ks_grub_timeouts to;

        clock_gettime(CLOCK_MONOTONIC, &a);
        if (ks_grub_cfg_parse(text, len, &c, &err) < 0) {
            fprintf(stderr, "%u:%u: %s\n", err.line, err.column, err.message);
            return 1;
        }
        if (ks_grub_forecast_run(c, env, true, false, 3, &f) < 0)
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
        ks_grub_forecast_done(&f);
        ks_grub_cfg_free(c);
        c = NULL;

        clock_gettime(CLOCK_MONOTONIC, &a);
        if (ks_grub_cfg_parse(text, len, &c, &err) < 0 || ks_grub_timeouts_run(c, &to) < 0)
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        u[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
        ks_grub_cfg_free(c);
    }
    qsort(t, (size_t)runs, sizeof(*t), cmp);
    qsort(u, (size_t)runs, sizeof(*u), cmp);
    getrusage(RUSAGE_SELF, &ru);
    printf("%s: %zu bytes, %d runs: forecast median %.0f us, max %.0f us; plan's countdowns "
           "median %.0f us, max %.0f us; peak RSS %ld KiB\n",
           argv[1], len, runs, t[runs / 2], t[runs - 1], u[runs / 2], u[runs - 1], ru.ru_maxrss);
    ks_grubenv_free(env);
    free(t);
    free(u);
    return 0;
}
