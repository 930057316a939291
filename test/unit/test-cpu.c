/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>

#include "lib/host/cpu.h"
#include "lib/basic/util.h"
#include "test.h"

#define V1 "fpu cx8 cmov mmx fxsr sse sse2 syscall lm"
#define V2 V1 " cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2"
#define V3 V2 " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
#define V4 V3 " avx512f avx512bw avx512cd avx512dq avx512vl"

/* Every real dump in test/fixtures/cpuinfo; the level is also in the file name. */
static const struct {
    const char *file;
    int level;
    unsigned n;
    bool hypervisor;
    const char *vendor;
} fixtures[] = {
    {"aws-ec2-hvm-xeon-e5-2676v3-haswell-v3.txt", 3, 1, true, "GenuineIntel"},
    {"aws-ec2-nitro-kvm-xeon-8259cl-cascadelake-v4.txt", 4, 2, true, "GenuineIntel"},
    {"azure-hyperv-xeon-e5-2673v3-v3-empty-bugs.txt", 3, 1, true, "GenuineIntel"},
    {"baremetal-desktop-i5-6500-skylake-v3-single-block.txt", 3, 1, false, "GenuineIntel"},
    {"baremetal-desktop-i7-2600-sandybridge-v2.txt", 2, 8, false, "GenuineIntel"},
    {"baremetal-laptop-i5-m560-westmere-arrandale-v2.txt", 2, 4, false, "GenuineIntel"},
    {"baremetal-laptop-i7-7700hq-kabylake-v3-leading-blank-line.txt", 3, 2, false, "GenuineIntel"},
    {"baremetal-server-2x-xeon-e5620-westmere-ep-v2-no-final-newline.txt", 2, 16, false,
     "GenuineIntel"},
    {"baremetal-xeon-netburst-3.8ghz-v1-no-lahf.txt", 1, 2, false, "GenuineIntel"},
    {"kvm-guest-default-qemu64-below-v2.txt", 1, 2, true, "AuthenticAMD"},
    {"kvm-guest-qemu-model-haswell-noTSX-ibrs-v3.txt", 3, 2, true, "GenuineIntel"},
    {"kvm-guest-qemu-model-skylake-client-ibrs-v3.txt", 3, 2, true, "GenuineIntel"},
    {"virtualbox-guest-ivybridge-host-below-v2-no-hypervisor-flag.txt", 1, 2, false,
     "GenuineIntel"},
};

static const struct {
    const char *flags;
    int level;
} flag_cases[] = {
    {"", 0},
    {"   \t ", 0},
    {V1, 1},
    {V2, 2},
    {V3, 3},
    {V4, 4},
    {"\t" V4 "  \t", 4},
    /* Whole tokens: lahf_lm is not lm, avx2 is not avx, sse2 is not sse, xsaveopt no xsave. */
    {"fpu cx8 cmov mmx fxsr sse sse2 syscall lahf_lm", 0},
    {"fpu cx8 cmov mmx fxsr sse2 syscall lm", 0},
    {"fpu cx8 cmov mmx fxsr sse sse2x syscall lm", 0},
    {"fpu cx8 cmov mmx fxsr sse xsse2 syscall lm", 0},
    {V1 " cx16 lahf_lm popcnt sse3 ssse3 sse4_1 sse4_2", 1}, /* SSE3 is "pni" */
    {V1 " cx16 lahf_lm popcnt ssse3 sse4_1 sse4_2", 1},      /* XanMod's script omits pni */
    {V1 " cx16 popcnt pni ssse3 sse4_1 sse4_2", 1},          /* no lahf_lm */
    {V1 " cx16 lahf_lm popcnt pni ssse3 sse4_1 sse4_2x", 1},
    {V2 " avx2 bmi1 bmi2 f16c fma abm movbe xsave", 2}, /* avx2 without avx */
    {V2 " avx avx2 bmi1 bmi2 f16c fma abm movbe", 2},   /* no xsave */
    {V2 " avx avx2 bmi1 bmi2 f16c fma abm movbe xsaveopt xsaves", 2},
    {V2 " avx avx2 bmi1 bmi2 f16c fma movbe xsave", 2}, /* no abm (lzcnt) */
    {V2 " avx avx2 bmi1 f16c fma abm movbe xsave", 2},  /* no bmi2 */
    {V3 " avx512f avx512bw avx512cd avx512dq", 3},      /* no avx512vl */
    {V3 " avx512f avx512bw avx512cd avx512dq avx512vlx", 3},
    {V2 " avx512f avx512bw avx512cd avx512dq avx512vl", 2}, /* v4 needs v3 */
    {"avx512f avx512bw avx512cd avx512dq avx512vl", 0},
};

static const struct {
    const char *name;
    const char *text;
    int ret;
    int level;
    unsigned n;
    bool hypervisor;
    const char *vendor, *model;
} text_cases[] = {
    {"two blocks, second weaker",
     "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: A\nflags\t\t: " V3
     " hypervisor\n\nprocessor\t: 1\nvendor_id\t: Other\nmodel name\t: B\nflags\t\t: " V2
     " hypervisor\n\n",
     0, 2, 2, true, "GenuineIntel", "A"},
    {"first block weaker", "processor : 0\nflags : " V1 "\n\nprocessor : 1\nflags : " V4 "\n", 0, 1,
     2, false, NULL, NULL},
    {"hypervisor in one block only",
     "processor : 0\nflags : " V3 " hypervisor\n\nprocessor : 1\nflags : " V3 "\n", 0, 3, 2, false,
     NULL, NULL},
    {"hypervisor in the last block only",
     "processor : 0\nflags : " V3 "\n\nprocessor : 1\nflags : " V3 " hypervisor\n", 0, 3, 2, false,
     NULL, NULL},
    {"block without flags (truncated)",
     "processor : 0\nflags : " V3 "\n\nprocessor : 1\nvendor_id : GenuineIntel\n", 0, 0, 2, false,
     "GenuineIntel", NULL},
    {"truncated flags line", "processor : 0\nflags : fpu cx8 cm", 0, 0, 1, false, NULL, NULL},
    {"no blank line between blocks",
     "processor : 0\nflags : " V3 "\nprocessor : 1\nflags : " V1 "\n", 0, 1, 2, false, NULL, NULL},
    {"flags lines without processor lines", "flags : " V2 "\nflags : " V4 "\n", 0, 2, 2, false,
     NULL, NULL},
    {"CRLF",
     "processor\t: 0\r\nflags\t\t: " V4 "\r\n\r\nprocessor\t: 1\r\nflags\t\t: " V4 "\r\n\r\n", 0, 4,
     2, false, NULL, NULL},
    {"leading blank lines, no final newline", "\n\n \t\nprocessor : 0\nflags : " V2, 0, 2, 1, false,
     NULL, NULL},
    {"blank lines made of spaces",
     "processor : 0\nflags : " V2 "\n  \t\nprocessor : 1\nflags : " V3 "\n", 0, 2, 2, false, NULL,
     NULL},
    {"vmx flags is not flags", "processor : 0\nvmx flags : " V4 "\nflags : " V1 "\n", 0, 1, 1,
     false, NULL, NULL},
    {"empty flags value", "processor : 0\nflags\t\t:\n", 0, 0, 1, false, NULL, NULL},
    {"garbage lines around", "%%%\n\x01\x02\x03\nprocessor : 0\n::::\nflags : " V3 "\nnonsense\n",
     0, 3, 1, false, NULL, NULL},
    {"empty vendor value", "vendor_id :\nflags : " V1 "\n", 0, 1, 1, false, "", NULL},
    {"only vmx flags", "processor : 0\nvmx flags : " V4 "\n", -EBADMSG},
    {"no flags line", "processor\t: 0\nvendor_id\t: GenuineIntel\n\n", -EBADMSG},
    {"flags without colon", "processor 0\nflags " V4 "\n", -EBADMSG},
    {"empty", "", -EBADMSG},
    {"only blank lines", "\n\n\r\n  \n", -EBADMSG},
    {"binary garbage",
     "\x7f"
     "ELF\x02\x01\x01\xff\xfe\x80\x90:\xa0",
     -EBADMSG},
};

/* The level a fixture's name states: "-vN" (or "below-v2", which is v1). */
static int level_from_name(const char *name)
{
    const char *p;

    if (strstr(name, "below-v2"))
        return 1;
    for (p = strstr(name, "-v"); p; p = strstr(p + 1, "-v"))
        if (p[2] >= '1' && p[2] <= '4' && (p[3] == '-' || p[3] == '.'))
            return p[2] - '0';
    return -1;
}

/* Text with every "\n" turned into "\r\n". */
static char *to_crlf(const char *text)
{
    size_t n = strlen(text), extra = 0;
    char *out, *o;

    for (size_t i = 0; i < n; i++)
        extra += text[i] == '\n';
    out = malloc(n + extra + 1);
    if (!out)
        return NULL;
    o = out;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '\n')
            *o++ = '\r';
        *o++ = text[i];
    }
    *o = '\0';
    return out;
}

static bool is_flags_line(const char *l)
{
    return strncmp(l, "flags", 5) == 0 && (l[5] == '\t' || l[5] == ' ' || l[5] == ':');
}

/*
 * Removes the whole token from "flags" lines (only the last such line when last_only): a
 * real dump with one processor made weaker, or with XSAVE gone.
 */
static char *drop_flag(const char *text, const char *token, bool last_only)
{
    char *out = strdup(text), *lines[256];
    size_t tl = strlen(token), n = 0;

    if (!out)
        abort();
    for (char *l = out; l;) {
        char *e = strchr(l, '\n');
        if (is_flags_line(l) && n < ARRAY_SIZE(lines))
            lines[n++] = l;
        l = e ? e + 1 : NULL;
    }
    /* Back to front, so that the earlier line pointers stay valid. */
    for (size_t i = n; i-- > 0;) {
        char *eol = strchr(lines[i], '\n');

        if (!eol)
            eol = lines[i] + strlen(lines[i]);
        for (char *p = lines[i] + 5; p + tl <= eol; p++)
            if (memcmp(p, token, tl) == 0 && isspace((unsigned char)p[-1]) &&
                (p + tl == eol || isspace((unsigned char)p[tl]))) {
                memmove(p - 1, p + tl, strlen(p + tl) + 1);
                break;
            }
        if (last_only)
            break;
    }
    return out;
}

static void check_parse(const char *what, const char *text, size_t len, int level, unsigned n,
                        bool hypervisor, const char *vendor)
{
    ks_cpuinfo c = {};
    int r = ks_cpuinfo_parse(text, len, &c);

    CHECK_MSG(r == 0, "%s: parse gave %d", what, r);
    CHECK_MSG(c.level == level, "%s: level %d, want %d", what, c.level, level);
    CHECK_MSG(c.n_processors == n, "%s: %u processors, want %u", what, c.n_processors, n);
    CHECK_MSG(c.hypervisor == hypervisor, "%s: hypervisor %d", what, c.hypervisor);
    if (vendor)
        CHECK_STREQ(c.vendor_id, vendor);
    ks_cpuinfo_done(&c);
}

static void test_fixtures(void)
{
    _cleanup_free_ char *dir = ks_asprintf("%s/cpuinfo", ks_fixture_dir());
    _cleanup_strv_free_ char **seen = NULL;
    _cleanup_closedir_ DIR *d = NULL;
    struct dirent *de;

    for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++) {
        _cleanup_free_ char *path = ks_asprintf("%s/%s", dir, fixtures[i].file);
        _cleanup_free_ char *text = NULL, *crlf = NULL, *lead = NULL, *weak = NULL;
        size_t len = 0;

        text = ks_test_slurp(path, &len);
        CHECK_MSG(text != NULL, "cannot read %s", path);
        if (!text)
            continue;
        ks_strv_extend(&seen, fixtures[i].file);
        CHECK_MSG(level_from_name(fixtures[i].file) == fixtures[i].level, "%s: name says %d",
                  fixtures[i].file, level_from_name(fixtures[i].file));
        check_parse(fixtures[i].file, text, len, fixtures[i].level, fixtures[i].n,
                    fixtures[i].hypervisor, fixtures[i].vendor);
        {
            ks_cpuinfo c = {};
            CHECK(ks_cpuinfo_parse(text, len, &c) == 0);
            CHECK_MSG(c.model_name && *c.model_name, "%s: no model name", fixtures[i].file);
            ks_cpuinfo_done(&c);
        }

        /* The same dump with CRLF line ends, and with blank lines in front. */
        crlf = to_crlf(text);
        check_parse("crlf", crlf, strlen(crlf), fixtures[i].level, fixtures[i].n,
                    fixtures[i].hypervisor, fixtures[i].vendor);
        lead = ks_asprintf("\n\n \n%s", text);
        check_parse("leading blanks", lead, strlen(lead), fixtures[i].level, fixtures[i].n,
                    fixtures[i].hypervisor, fixtures[i].vendor);
        /* Cut at the first byte of the last line: a dump that ends early. */
        if (len > 1) {
            size_t cut = len - 1;
            while (cut > 0 && text[cut - 1] != '\n')
                cut--;
            if (cut > 0) {
                ks_cpuinfo c = {};
                CHECK(ks_cpuinfo_parse(text, cut, &c) == 0);
                CHECK(c.level <= fixtures[i].level);
                ks_cpuinfo_done(&c);
            }
        }

        /* One processor without SSE3 pulls the whole machine down to v1. */
        if (fixtures[i].level >= 2) {
            weak = drop_flag(text, "pni", true);
            check_parse("last block without pni", weak, strlen(weak), 1, fixtures[i].n,
                        fixtures[i].hypervisor, fixtures[i].vendor);
            free(TAKE_PTR(weak));
        }
        /* Without XSAVE no v3, whatever the AVX flags say. */
        if (fixtures[i].level >= 3) {
            weak = drop_flag(text, "xsave", false);
            CHECK(strstr(weak, " xsave ") == NULL);
            check_parse("without xsave", weak, strlen(weak), 2, fixtures[i].n,
                        fixtures[i].hypervisor, fixtures[i].vendor);
            free(TAKE_PTR(weak));
            /* avx gone, avx2 still there: a substring match would keep v3. */
            weak = drop_flag(text, "avx", true);
            CHECK(strstr(weak, "avx2") != NULL);
            check_parse("without avx", weak, strlen(weak), 2, fixtures[i].n, fixtures[i].hypervisor,
                        fixtures[i].vendor);
            free(TAKE_PTR(weak));
        }
        /* lm gone, lahf_lm still there. */
        weak = drop_flag(text, "lm", false);
        if (strstr(fixtures[i].file, "no-lahf") == NULL)
            CHECK(strstr(weak, "lahf_lm") != NULL);
        check_parse("without lm", weak, strlen(weak), 0, fixtures[i].n, fixtures[i].hypervisor,
                    fixtures[i].vendor);
    }

    d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    while (d && (de = readdir(d))) {
        if (!ks_endswith(de->d_name, ".txt"))
            continue;
        CHECK_MSG(ks_strv_contains(seen, de->d_name), "fixture %s has no expectation", de->d_name);
    }
    CHECK_INTEQ(ks_strv_length(seen), ARRAY_SIZE(fixtures));
}

static void test_flags(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(flag_cases); i++)
        CHECK_MSG(ks_cpu_level_from_flags(flag_cases[i].flags) == flag_cases[i].level,
                  "'%s': %d, want %d", flag_cases[i].flags,
                  ks_cpu_level_from_flags(flag_cases[i].flags), flag_cases[i].level);
    CHECK_INTEQ(ks_cpu_level_from_flags(NULL), 0);
}

static void test_texts(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(text_cases); i++) {
        ks_cpuinfo c = {.level = -7};
        int r = ks_cpuinfo_parse(text_cases[i].text, strlen(text_cases[i].text), &c);

        CHECK_MSG(r == text_cases[i].ret, "%s: got %d, want %d", text_cases[i].name, r,
                  text_cases[i].ret);
        if (r < 0) {
            CHECK_MSG(c.level == -7 && !c.vendor_id, "%s: output touched", text_cases[i].name);
            continue;
        }
        CHECK_MSG(c.level == text_cases[i].level, "%s: level %d, want %d", text_cases[i].name,
                  c.level, text_cases[i].level);
        CHECK_MSG(c.n_processors == text_cases[i].n, "%s: %u processors, want %u",
                  text_cases[i].name, c.n_processors, text_cases[i].n);
        CHECK_MSG(c.hypervisor == text_cases[i].hypervisor, "%s: hypervisor %d", text_cases[i].name,
                  c.hypervisor);
        if (text_cases[i].vendor)
            CHECK_STREQ(c.vendor_id, text_cases[i].vendor);
        if (text_cases[i].model)
            CHECK_STREQ(c.model_name, text_cases[i].model);
        ks_cpuinfo_done(&c);
    }
    /* Only len bytes count: the flags after len are not read. */
    {
        static const char t[] = "flags : " V4;
        ks_cpuinfo c = {};
        CHECK_INTEQ(ks_cpuinfo_parse(t, strlen(t) - strlen(" avx512vl"), &c), 0);
        CHECK_INTEQ(c.level, 3);
        ks_cpuinfo_done(&c);
        ks_cpuinfo_done(NULL);
    }
}

static void test_live(void)
{
#if defined(__x86_64__)
    bool present = false;
    char *vendor = NULL;
    int level = ks_cpu_level_live();

    /* This test itself runs x86-64 code: at least the baseline. */
    CHECK_MSG(level >= 1 && level <= 4, "live level %d", level);
    CHECK_INTEQ(ks_cpuid_hypervisor(&present, &vendor), 0);
    if (!present)
        CHECK(vendor == NULL);
    free(vendor);
    CHECK_INTEQ(ks_cpuid_hypervisor(NULL, NULL), 0);
#else
    CHECK_INTEQ(ks_cpu_level_live(), -EOPNOTSUPP);
#endif
}

int main(void)
{
    test_flags();
    test_texts();
    test_fixtures();
    test_live();
    TEST_DONE();
}
