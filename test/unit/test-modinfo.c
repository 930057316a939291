/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <elf.h>

#include "lib/kernel/deb.h"
#include "lib/kernel/modinfo.h"
#include "lib/basic/util.h"
#include "test.h"

/* A minimal relocatable ELF64 LE object: null, .modinfo, .shstrtab; like a .ko. */
static size_t make_elf(unsigned char *buf, size_t cap, const char *info, size_t info_len)
{
    static const char shstr[] = "\0.modinfo\0.shstrtab";
    Elf64_Ehdr eh = {0};
    Elf64_Shdr sh[3] = {{0}};
    size_t off = sizeof(eh), info_off, str_off, sh_off;

    info_off = off;
    off += info_len;
    str_off = off;
    off += sizeof(shstr);
    off = (off + 7) & ~(size_t)7;
    sh_off = off;
    off += sizeof(sh);
    if (off > cap)
        return 0;
    memset(buf, 0, off);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_REL;
    eh.e_machine = EM_X86_64;
    eh.e_shoff = sh_off;
    eh.e_ehsize = sizeof(eh);
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 3;
    eh.e_shstrndx = 2;
    sh[1] = (Elf64_Shdr){
        .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_offset = info_off, .sh_size = info_len};
    sh[2] = (Elf64_Shdr){
        .sh_name = 10, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(shstr)};
    memcpy(buf, &eh, sizeof(eh));
    memcpy(buf + info_off, info, info_len);
    memcpy(buf + str_off, shstr, sizeof(shstr));
    memcpy(buf + sh_off, sh, sizeof(sh));
    return off;
}

static int count_cb(void *userdata, const char *module)
{
    char ***l = userdata;
    return ks_strv_extend(l, module);
}

static int info_cb(void *userdata, const char *module, const char *key, const char *value)
{
    char ***l = userdata;
    return ks_strv_push(l, ks_asprintf("%s|%s|%s", module, key, value));
}

int main(void)
{
    static const char info[] = "license=GPL\0depends=nfnetlink,libcrc32c\0\0version=3\0name=x";
    unsigned char elf[1024];
    const char *data;
    size_t len, dlen;
    _cleanup_free_ char *v = NULL, *name = NULL;
    _cleanup_strv_free_ char **names = NULL, **infos = NULL;
    char hdr[61], arname[17];
    uint64_t size;

    len = make_elf(elf, sizeof(elf), info, sizeof(info) - 1);
    CHECK(len > 0);
    CHECK(ks_elf_find_modinfo(elf, len, &data, &dlen) == 0);
    CHECK_INTEQ(dlen, sizeof(info) - 1);
    CHECK(ks_modinfo_get(data, dlen, "depends", &v) == 0);
    CHECK_STREQ(v, "nfnetlink,libcrc32c");
    free(TAKE_PTR(v));
    CHECK(ks_modinfo_get(data, dlen, "version", &v) == 0);
    CHECK_STREQ(v, "3");
    free(TAKE_PTR(v));
    /* The last string has no NUL: still found, not read past the end. */
    CHECK(ks_modinfo_get(data, dlen, "name", &v) == 0);
    CHECK_STREQ(v, "x");
    free(TAKE_PTR(v));
    CHECK(ks_modinfo_get(data, dlen, "vermagic", &v) == -ENOENT);
    CHECK(ks_modinfo_get(data, dlen, "licens", &v) == -ENOENT);

    /* Every truncation and every single-byte corruption is refused or parsed, never read
     * out of bounds (the sanitizer build checks the latter). */
    for (size_t n = 0; n < len; n++) {
        int r = ks_elf_find_modinfo(elf, n, &data, &dlen);
        CHECK(r < 0 || (size_t)(data - (const char *)elf) + dlen <= n);
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char m[1024];
        memcpy(m, elf, len);
        m[i] ^= 0xff;
        if (ks_elf_find_modinfo(m, len, &data, &dlen) == 0)
            CHECK((size_t)(data - (const char *)m) + dlen <= len);
    }
    CHECK(ks_elf_find_modinfo("\177ELF", 4, &data, &dlen) == -EBADMSG);
    CHECK(ks_elf_find_modinfo("not an elf file at all, no", 26, &data, &dlen) == -EBADMSG);
    /* No .modinfo section. */
    elf[sizeof(Elf64_Ehdr) + sizeof(info) - 1 + 2] = 'X';
    CHECK(ks_elf_find_modinfo(elf, len, &data, &dlen) == -ENOENT);

    /* Names. */
    CHECK(ks_module_name_from_path("kernel/arch/x86/crypto/curve25519-x86_64.ko.zst", &name) == 0);
    CHECK_STREQ(name, "curve25519_x86_64");
    free(TAKE_PTR(name));
    CHECK(ks_module_name_from_path("sch_cake.ko.xz", &name) == 0);
    CHECK_STREQ(name, "sch_cake");
    free(TAKE_PTR(name));
    CHECK(ks_module_name_from_path("x.ko.gz", &name) == -EINVAL);
    CHECK(ks_module_name_from_path("modules.order", &name) == -EINVAL);
    CHECK(ks_module_name_from_path(".ko", &name) == -EINVAL);
    CHECK(ks_is_module_path("a/b.ko"));
    CHECK(!ks_is_module_path("a/b.ko.sig"));

    /* modules.builtin and modules.builtin.modinfo as Debian ships them. */
    {
        static const char builtin[] = "kernel/net/ipv4/tcp_cubic.ko\n\nkernel/fs/ext4/ext4.ko\n"
                                      "kernel/drivers/x/some-thing.ko";
        static const char binfo[] = "tcp_cubic.license=GPL\0tcp_cubic.version=2.3\0"
                                    "bad-entry\0.x=y\0some-thing.description=a=b\0";
        CHECK(ks_builtin_foreach(builtin, sizeof(builtin) - 1, count_cb, &names) == 0);
        CHECK_INTEQ(ks_strv_length(names), 3);
        CHECK_STREQ(names[2], "some_thing");
        CHECK(ks_builtin_modinfo_foreach(binfo, sizeof(binfo) - 1, info_cb, &infos) == 0);
        CHECK_INTEQ(ks_strv_length(infos), 3);
        CHECK_STREQ(infos[1], "tcp_cubic|version|2.3");
        CHECK_STREQ(infos[2], "some_thing|description|a=b");
    }

    /* ar member headers as dpkg-deb and GNU ar write them. */
    snprintf(hdr, sizeof(hdr), "%-16s%-12s%-6s%-6s%-8s%-10s`\n", "data.tar.xz", "0", "0", "0",
             "100644", "70489744");
    CHECK(ks_ar_parse_header(hdr, arname, &size) == 0);
    CHECK_STREQ(arname, "data.tar.xz");
    CHECK_INTEQ(size, 70489744);
    snprintf(hdr, sizeof(hdr), "%-16s%-12s%-6s%-6s%-8s%-10s`\n", "debian-binary/", "0", "0", "0",
             "100644", "4");
    CHECK(ks_ar_parse_header(hdr, arname, &size) == 0);
    CHECK_STREQ(arname, "debian-binary");
    snprintf(hdr, sizeof(hdr), "%-16s%-12s%-6s%-6s%-8s%-10s`\n", "x", "0", "0", "0", "100644",
             "12a");
    CHECK(ks_ar_parse_header(hdr, arname, &size) == -EBADMSG);
    snprintf(hdr, sizeof(hdr), "%-16s%-12s%-6s%-6s%-8s%-10s`X", "x", "0", "0", "0", "100644", "1");
    CHECK(ks_ar_parse_header(hdr, arname, &size) == -EBADMSG);

    TEST_DONE();
}
