/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

/*
 * Optional heavy libraries are loaded with dlopen() when a command needs them, so that the
 * common read-only commands start fast: libarchive drags in libxml2, ICU, libcrypto and
 * libstdc++; libkmod drags in libcrypto. Their symbols are called through sym_* pointers
 * (systemd does the same for its optional libraries).
 */
typedef struct ks_dl_symbol {
    const char *name;
    void **ptr;
} ks_dl_symbol;

#define KS_DL_SYMBOL(name)                                                                         \
    {                                                                                              \
#name, (void **)&sym_##name                                                                \
    }

typedef struct ks_dl_library {
    const char *soname;  /* the one the headers were built against */
    const char *package; /* what to install when it is missing */
    const ks_dl_symbol *symbols;
    size_t n_symbols;
    int state; /* 0 not tried, 1 loaded, negative errno */
    char *error;
} ks_dl_library;

/* 0, or -EOPNOTSUPP with *ret_error ("libkmod.so.2 cannot be loaded: ...; install libkmod2"). */
int ks_dlopen_library(ks_dl_library *lib, const char **ret_error);
