/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "lib/host/cpu.h"
#include "lib/basic/util.h"

/*
 * The x86-64 psABI levels in /proc/cpuinfo names (glibc sysdeps/x86/get-isa-level.h).
 * "pni" is SSE3 and "abm" is LZCNT. v3 also needs "xsave": the kernel clears the AVX flags
 * when it does not enable XSAVE, but a hand-made dump may not, and XanMod's own check
 * requires it too.
 */
#define FLAG(name, level)                                                                          \
    {                                                                                              \
        name, sizeof(name) - 1, level                                                              \
    }
static const struct {
    const char *name;
    size_t len;
    int level;
} level_flags[] = {
    FLAG("lm", 1),       FLAG("cmov", 1),     FLAG("cx8", 1),      FLAG("fpu", 1),
    FLAG("fxsr", 1),     FLAG("mmx", 1),      FLAG("syscall", 1),  FLAG("sse", 1),
    FLAG("sse2", 1),     FLAG("cx16", 2),     FLAG("lahf_lm", 2),  FLAG("popcnt", 2),
    FLAG("pni", 2),      FLAG("ssse3", 2),    FLAG("sse4_1", 2),   FLAG("sse4_2", 2),
    FLAG("avx", 3),      FLAG("avx2", 3),     FLAG("bmi1", 3),     FLAG("bmi2", 3),
    FLAG("f16c", 3),     FLAG("fma", 3),      FLAG("abm", 3),      FLAG("movbe", 3),
    FLAG("xsave", 3),    FLAG("avx512f", 4),  FLAG("avx512bw", 4), FLAG("avx512cd", 4),
    FLAG("avx512dq", 4), FLAG("avx512vl", 4),
};

/* Bit i: level_flags[i] is present; bit 63: "hypervisor". */
#define HYPERVISOR_BIT (UINT64_C(1) << 63)

/*
 * One pass over a white-space separated list, whole tokens only ("lm" must not match
 * "lahf_lm"): a dump has 16+ flags lines of 100+ tokens, so each is read once.
 */
static uint64_t flag_bits(const char *list, size_t len)
{
    uint64_t bits = 0;
    size_t i = 0;

    while (i < len) {
        const char *tok;
        size_t start, n;

        while (i < len && isspace((unsigned char)list[i]))
            i++;
        start = i;
        while (i < len && !isspace((unsigned char)list[i]))
            i++;
        n = i - start;
        if (n == 0)
            break;
        tok = list + start;
        for (size_t f = 0; f < ARRAY_SIZE(level_flags); f++)
            if (level_flags[f].len == n && level_flags[f].name[0] == tok[0] &&
                memcmp(level_flags[f].name, tok, n) == 0)
                bits |= UINT64_C(1) << f;
        if (n == strlen("hypervisor") && memcmp(tok, "hypervisor", n) == 0)
            bits |= HYPERVISOR_BIT;
    }
    return bits;
}

/* The table is ordered by level: the first missing flag decides. */
static int level_of(uint64_t bits)
{
    for (size_t f = 0; f < ARRAY_SIZE(level_flags); f++)
        if (!(bits & (UINT64_C(1) << f)))
            return level_flags[f].level - 1;
    return 4;
}

int ks_cpu_level_from_flags(const char *flags)
{
    if (!flags)
        return 0;
    return level_of(flag_bits(flags, strlen(flags)));
}

void ks_cpuinfo_done(ks_cpuinfo *c)
{
    if (!c)
        return;
    free(c->vendor_id);
    free(c->model_name);
    memset(c, 0, sizeof(*c));
}

/* One processor block while it is being read. */
typedef struct block {
    bool seen; /* has a "processor" or "flags" line */
    bool has_processor;
    bool has_flags;
    int level;
    bool hypervisor;
} block;

/* Folds a finished block into the result; a processor without flags proves no level. */
static void end_block(block *b, ks_cpuinfo *c, bool *any_flags)
{
    if (b->seen) {
        int level = b->has_flags ? b->level : 0;

        if (c->n_processors == 0 || level < c->level)
            c->level = level;
        if (c->n_processors == 0)
            c->hypervisor = b->hypervisor;
        else
            c->hypervisor = c->hypervisor && b->hypervisor;
        c->n_processors++;
        if (b->has_flags)
            *any_flags = true;
    }
    *b = (block){};
}

/* "key<tabs> : value": returns false when the line has no colon. */
static bool split_line(const char *line, size_t n, const char **key, size_t *klen,
                       const char **value, size_t *vlen)
{
    const char *colon = memchr(line, ':', n);
    size_t k, vs;

    if (!colon)
        return false;
    k = (size_t)(colon - line);
    while (k > 0 && isspace((unsigned char)line[k - 1]))
        k--;
    vs = (size_t)(colon - line) + 1;
    while (vs < n && isspace((unsigned char)line[vs]))
        vs++;
    *key = line;
    *klen = k;
    *value = line + vs;
    *vlen = n - vs;
    return true;
}

static bool key_is(const char *key, size_t klen, const char *name)
{
    return klen == strlen(name) && memcmp(key, name, klen) == 0;
}

static int set_once(char **slot, const char *value, size_t vlen)
{
    if (*slot)
        return 0;
    *slot = strndup(value, vlen);
    return *slot ? 0 : -ENOMEM;
}

int ks_cpuinfo_parse(const char *text, size_t len, ks_cpuinfo *ret)
{
    ks_cpuinfo c = {};
    block b = {};
    bool any_flags = false;
    const char *line, *prev_flags = NULL;
    size_t prev_len = 0;
    uint64_t prev_bits = 0;
    size_t pos = 0, n;
    int r;

    if (!text && len > 0)
        return -EINVAL;

    while (ks_next_line(text, len, &pos, &line, &n)) {
        const char *key, *value;
        size_t klen, vlen, i;
        uint64_t bits;

        /* CRLF and trailing blanks are not part of the value. */
        while (n > 0 && isspace((unsigned char)line[n - 1]))
            n--;
        for (i = 0; i < n && isspace((unsigned char)line[i]); i++)
            ;
        if (i == n) {
            end_block(&b, &c, &any_flags); /* a blank line ends a processor block */
            continue;
        }
        if (!split_line(line, n, &key, &klen, &value, &vlen))
            continue; /* garbage or a truncated line */

        if (key_is(key, klen, "processor")) {
            /* A second "processor" line without a blank line before it starts a block. */
            if (b.has_processor)
                end_block(&b, &c, &any_flags);
            b.seen = true;
            b.has_processor = true;
        } else if (key_is(key, klen, "flags")) {
            if (b.has_flags)
                end_block(&b, &c, &any_flags); /* two flags lines: two processors */
            b.seen = true;
            b.has_flags = true;
            /* Processors of one machine share their flags: read a repeated line once. */
            if (prev_flags && vlen == prev_len && memcmp(value, prev_flags, vlen) == 0) {
                bits = prev_bits;
            } else {
                bits = flag_bits(value, vlen);
                prev_flags = value;
                prev_len = vlen;
                prev_bits = bits;
            }
            b.level = level_of(bits);
            b.hypervisor = bits & HYPERVISOR_BIT;
        } else if (key_is(key, klen, "vendor_id")) {
            r = set_once(&c.vendor_id, value, vlen);
            if (r < 0)
                goto fail;
        } else if (key_is(key, klen, "model name")) {
            r = set_once(&c.model_name, value, vlen);
            if (r < 0)
                goto fail;
        }
    }
    end_block(&b, &c, &any_flags);

    if (!any_flags) {
        r = -EBADMSG;
        goto fail;
    }
    *ret = c;
    return 0;

fail:
    ks_cpuinfo_done(&c);
    return r;
}

#if defined(__x86_64__)

/* XCR0 state components (Intel SDM vol. 1, 13.1), named as in glibc's cpu-features.h. */
#define XSTATE_XMM (1U << 1)
#define XSTATE_YMM (1U << 2)
#define XSTATE_OPMASK (1U << 5)
#define XSTATE_ZMM0_15 (1U << 6)
#define XSTATE_ZMM16_31 (1U << 7)

#define BIT(n) (1U << (n))

static bool all(uint32_t reg, uint32_t mask)
{
    return (reg & mask) == mask;
}

int ks_cpu_level_live(void)
{
    uint32_t eax, ebx, ecx1 = 0, edx1 = 0, ebx7 = 0, ecx81 = 0, max, max_ext;
    uint32_t xcr0 = 0, ecx_x, edx_x;
    bool avx = false, avx512f = false;

    max = __get_cpuid_max(0, NULL);
    if (max < 1)
        return 0;
    __cpuid(1, eax, ebx, ecx1, edx1);
    if (max >= 7)
        __cpuid_count(7, 0, eax, ebx7, ecx_x, edx_x);
    max_ext = __get_cpuid_max(0x80000000U, NULL);
    if (max_ext >= 0x80000001U)
        __cpuid(0x80000001U, eax, ebx, ecx81, edx_x);
    (void)ecx_x;

    /* glibc calls XGETBV only when the OS has set CR4.OSXSAVE. */
    if (ecx1 & BIT(27)) {
        uint32_t xcr_high;

        __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr_high) : "c"(0));
        (void)xcr_high;
    }
    if (all(xcr0, XSTATE_XMM | XSTATE_YMM)) {
        /* AVX usable; AVX2, FMA and F16C are usable only with it. */
        avx = ecx1 & BIT(28);
        /* AVX-512 also needs the opmask and both ZMM halves enabled. */
        if (all(xcr0, XSTATE_OPMASK | XSTATE_ZMM0_15 | XSTATE_ZMM16_31))
            avx512f = ebx7 & BIT(16);
    }

    /* Baseline: CMOV CX8 FPU FXSR MMX SSE SSE2 (leaf 1 EDX). */
    if (!all(edx1, BIT(15) | BIT(8) | BIT(0) | BIT(24) | BIT(23) | BIT(25) | BIT(26)))
        return 0;
    /* v2: CX16 POPCNT SSE3 SSSE3 SSE4_1 SSE4_2 (leaf 1 ECX), LAHF64 (0x80000001 ECX). */
    if (!all(ecx1, BIT(13) | BIT(23) | BIT(0) | BIT(9) | BIT(19) | BIT(20)) || !(ecx81 & BIT(0)))
        return 1;
    /* v3: AVX AVX2 FMA F16C usable, BMI1 BMI2 (leaf 7 EBX), LZCNT (0x80000001), MOVBE. */
    if (!avx || !all(ebx7, BIT(5) | BIT(3) | BIT(8)) || !all(ecx1, BIT(12) | BIT(29)) ||
        !(ecx81 & BIT(5)) || !(ecx1 & BIT(22)))
        return 2;
    /* v4: AVX512F usable, then CD BW DQ VL (leaf 7 EBX). */
    if (!avx512f || !all(ebx7, BIT(28) | BIT(30) | BIT(17) | BIT(31)))
        return 3;
    return 4;
}

int ks_cpuid_hypervisor(bool *ret_present, char **ret_vendor)
{
    uint32_t eax, ebx, ecx, edx;
    union {
        uint32_t w[3];
        char text[13];
    } sig = {};
    char *vendor = NULL;
    bool present;

    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0)
        return -EOPNOTSUPP;
    present = ecx & BIT(31);
    if (present) {
        /* Leaf 0x40000000 exists only when the hypervisor bit is set. */
        __cpuid(0x40000000U, eax, sig.w[0], sig.w[1], sig.w[2]);
        if (sig.text[0]) {
            vendor = strdup(sig.text);
            if (!vendor)
                return -ENOMEM;
        }
    }
    if (ret_present)
        *ret_present = present;
    if (ret_vendor)
        *ret_vendor = vendor;
    else
        free(vendor);
    return 0;
}

#else

int ks_cpu_level_live(void)
{
    return -EOPNOTSUPP;
}

int ks_cpuid_hypervisor(bool *ret_present, char **ret_vendor)
{
    return -EOPNOTSUPP;
}

#endif
