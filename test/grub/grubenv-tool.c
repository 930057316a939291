/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test helper: edits a grubenv file with kswap's code, with grub-editenv's argument shape:
 *   grubenv-tool FILE create | list | set NAME=VALUE... | unset NAME...
 * Paths are taken relative to "/" through a root, as kswap does.
 */
#include <stdio.h>

#include "grub/grubenv.h"
#include "lib/basic/root.h"
#include "lib/basic/util.h"

int main(int argc, char **argv)
{
    _cleanup_root_ ks_root *root = NULL;
    _cleanup_grubenv_ ks_grubenv *e = NULL;
    int r;

    if (argc < 3) {
        fprintf(stderr, "usage: grubenv-tool FILE create|list|set|unset ...\n");
        return 2;
    }
    r = ks_root_open("/", &root);
    if (r < 0)
        return 1;
    if (streq(argv[2], "create"))
        r = ks_grubenv_new(&e);
    else
        r = ks_grubenv_load(root, argv[1], &e);
    if (r < 0) {
        fprintf(stderr, "grubenv-tool: %s: %s\n", argv[1], strerror(-r));
        return 1;
    }
    if (streq(argv[2], "list")) {
        for (size_t i = 0; i < ks_grubenv_count(e); i++)
            printf("%s=%s\n", ks_grubenv_name(e, i), ks_grubenv_value(e, i));
        return 0;
    }
    for (int i = 3; i < argc; i++) {
        if (streq(argv[2], "set")) {
            char *eq = strchr(argv[i], '=');
            if (!eq)
                return 2;
            *eq = '\0';
            r = ks_grubenv_set(e, argv[i], eq + 1);
        } else if (streq(argv[2], "unset")) {
            r = ks_grubenv_unset(e, argv[i]);
        } else {
            return 2;
        }
        if (r < 0) {
            fprintf(stderr, "grubenv-tool: %s: %s\n", argv[i], strerror(-r));
            return 1;
        }
    }
    r = ks_grubenv_save(e, root, argv[1]);
    if (r < 0) {
        fprintf(stderr, "grubenv-tool: cannot write %s: %s\n", argv[1], strerror(-r));
        return 1;
    }
    return 0;
}
