/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Debian version order, as dpkg compares versions (lib/dpkg/version.c: parseversion,
 * verrevcmp): [epoch:]upstream[-revision], '~' before everything. Kernel releases
 * (lib/host/kernels.h) and the versions of a Packages index (lib/repo/packages-index.h) are
 * compared with it. -1, 0 or 1.
 */
int ks_deb_version_compare(const char *a, const char *b);
