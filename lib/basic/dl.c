/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dlfcn.h>

#include "lib/basic/dl.h"
#include "lib/basic/util.h"

int ks_dlopen_library(ks_dl_library *lib, const char **ret_error)
{
    void *h;

    if (lib->state == 0) {
        h = dlopen(lib->soname, RTLD_NOW | RTLD_NODELETE);
        if (!h)
            lib->error = ks_asprintf("%s cannot be loaded (%s); install %s", lib->soname, dlerror(),
                                     lib->package);
        for (size_t i = 0; h && i < lib->n_symbols; i++) {
            *lib->symbols[i].ptr = dlsym(h, lib->symbols[i].name);
            if (!*lib->symbols[i].ptr) {
                lib->error = ks_asprintf("%s lacks %s; install %s", lib->soname,
                                         lib->symbols[i].name, lib->package);
                dlclose(h);
                h = NULL;
            }
        }
        lib->state = h ? 1 : -EOPNOTSUPP;
    }
    if (lib->state < 0 && ret_error)
        *ret_error = lib->error ? lib->error : "cannot load a library";
    return lib->state < 0 ? lib->state : 0;
}
