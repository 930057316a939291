/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs a libFuzzer target over files given on the command line (or every file in the given
 * directories) without libFuzzer: the plain and sanitizer builds replay the seed corpus this way.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/basic/alloc-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f) {
        perror(path);
        return 1;
    }
    do {
        if (len == cap && !GREEDY_REALLOC(buf, cap, len + 65536))
            abort();
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            perror(argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *de;
            while (d && (de = readdir(d))) {
                char p[4096];
                if (de->d_name[0] == '.')
                    continue;
                snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
                if (run_file(p))
                    return 1;
                runs++;
            }
            if (d)
                closedir(d);
        } else {
            if (run_file(argv[i]))
                return 1;
            runs++;
        }
    }
    /* Also the empty input and a lone NUL, which seed corpora tend to forget. */
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    LLVMFuzzerTestOneInput((const uint8_t *)"\0", 1);
    fprintf(stderr, "replayed %d inputs\n", runs + 2);
    return 0;
}
