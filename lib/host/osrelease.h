/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

#include "lib/basic/root.h"

/* The fields of os-release(5) kswap uses; any may be NULL. */
typedef struct ks_os_release {
    char *id; /* "ubuntu", "debian" */
    char *id_like;
    char *name;
    char *pretty_name;
    char *version_id;       /* "24.04", "12"; NULL on Debian testing */
    char *version_codename; /* "noble", "bookworm" */
    char *ubuntu_codename;
} ks_os_release;

/*
 * Parses os-release text (shell-like KEY=VALUE lines, quotes and backslash escapes as
 * os-release(5) says). Unknown keys are ignored. -EBADMSG when the text has no ID= at all or
 * is not text (NUL bytes).
 */
int ks_os_release_parse(const char *text, size_t len, ks_os_release *ret);
void ks_os_release_done(ks_os_release *o);
/* Reads etc/os-release, falling back to usr/lib/os-release; *ret_path names the file read. */
int ks_os_release_load(const ks_root *root, ks_os_release *ret, const char **ret_path);
