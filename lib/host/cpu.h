/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* What kswap needs to know of the processors. */
typedef struct ks_cpuinfo {
    unsigned n_processors; /* processor blocks seen */
    int level;             /* x86-64 level 0..4, the minimum over all blocks; 0 = below v1 */
    bool hypervisor;       /* "hypervisor" flag present (in every block) */
    char *vendor_id;       /* of the first block, may be NULL */
    char *model_name;      /* of the first block, may be NULL */
} ks_cpuinfo;

/*
 * Parses /proc/cpuinfo text: blocks separated by blank lines, "flags" lines matched as whole
 * tokens. -EBADMSG when no block has a "flags" line.
 */
int ks_cpuinfo_parse(const char *text, size_t len, ks_cpuinfo *ret);
void ks_cpuinfo_done(ks_cpuinfo *c);
/* Level 0..4 of one space-separated flags list (whole tokens; v3 needs xsave). */
int ks_cpu_level_from_flags(const char *flags);
/*
 * The live level from CPUID and XGETBV as glibc computes it (the OS must enable AVX state for
 * v3 and AVX-512 state for v4). -EOPNOTSUPP on a non-x86-64 build.
 */
int ks_cpu_level_live(void);
/*
 * Live hypervisor identification from CPUID: *ret_present = leaf 1 ECX bit 31; *ret_vendor
 * = the 12-byte leaf 0x40000000 signature ("KVMKVMKVM", "TCGTCGTCGTCG", ...) or NULL.
 */
int ks_cpuid_hypervisor(bool *ret_present, char **ret_vendor);
