/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <elf.h>
#include <stdint.h>

#include "lib/kernel/modinfo.h"
#include "lib/basic/util.h"

typedef struct elf_reader {
    const unsigned char *p;
    size_t len;
    bool is64, big;
} elf_reader;

static bool rd(const elf_reader *e, uint64_t off, unsigned size, uint64_t *ret)
{
    uint64_t v = 0;
    if (off > e->len || size > e->len - off)
        return false;
    for (unsigned i = 0; i < size; i++) {
        unsigned shift = e->big ? 8 * (size - 1 - i) : 8 * i;
        v |= (uint64_t)e->p[off + i] << shift;
    }
    *ret = v;
    return true;
}

/* Reads field at offset o32/o64 of size s32/s64 in a structure at base. */
static bool field(const elf_reader *e, uint64_t base, unsigned o32, unsigned s32, unsigned o64,
                  unsigned s64, uint64_t *ret)
{
    return e->is64 ? rd(e, base + o64, s64, ret) : rd(e, base + o32, s32, ret);
}

int ks_elf_find_modinfo(const void *buf, size_t len, const char **ret_data, size_t *ret_len)
{
    elf_reader e = {.p = buf, .len = len};
    uint64_t shoff, shentsize, shnum, shstrndx, str_off, str_size;
    uint64_t ehsize_min;

    if (len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0)
        return -EBADMSG;
    if (e.p[EI_CLASS] != ELFCLASS32 && e.p[EI_CLASS] != ELFCLASS64)
        return -EBADMSG;
    if (e.p[EI_DATA] != ELFDATA2LSB && e.p[EI_DATA] != ELFDATA2MSB)
        return -EBADMSG;
    e.is64 = e.p[EI_CLASS] == ELFCLASS64;
    e.big = e.p[EI_DATA] == ELFDATA2MSB;
    ehsize_min = e.is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
    if (len < ehsize_min)
        return -EBADMSG;

    if (!field(&e, 0, offsetof(Elf32_Ehdr, e_shoff), 4, offsetof(Elf64_Ehdr, e_shoff), 8, &shoff) ||
        !field(&e, 0, offsetof(Elf32_Ehdr, e_shentsize), 2, offsetof(Elf64_Ehdr, e_shentsize), 2,
               &shentsize) ||
        !field(&e, 0, offsetof(Elf32_Ehdr, e_shnum), 2, offsetof(Elf64_Ehdr, e_shnum), 2, &shnum) ||
        !field(&e, 0, offsetof(Elf32_Ehdr, e_shstrndx), 2, offsetof(Elf64_Ehdr, e_shstrndx), 2,
               &shstrndx))
        return -EBADMSG;
    if (shentsize < (e.is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)) || shoff == 0)
        return -EBADMSG;
    /* Many sections: the real counts live in section header 0. */
    if (shnum == 0 && !field(&e, shoff, offsetof(Elf32_Shdr, sh_size), 4,
                             offsetof(Elf64_Shdr, sh_size), 8, &shnum))
        return -EBADMSG;
    if (shstrndx == SHN_XINDEX && !field(&e, shoff, offsetof(Elf32_Shdr, sh_link), 4,
                                         offsetof(Elf64_Shdr, sh_link), 4, &shstrndx))
        return -EBADMSG;
    if (shnum == 0 || shnum > len / shentsize || shstrndx >= shnum || shoff > len ||
        shnum * shentsize > len - shoff)
        return -EBADMSG;

    if (!field(&e, shoff + shstrndx * shentsize, offsetof(Elf32_Shdr, sh_offset), 4,
               offsetof(Elf64_Shdr, sh_offset), 8, &str_off) ||
        !field(&e, shoff + shstrndx * shentsize, offsetof(Elf32_Shdr, sh_size), 4,
               offsetof(Elf64_Shdr, sh_size), 8, &str_size) ||
        str_off > len || str_size > len - str_off)
        return -EBADMSG;

    for (uint64_t i = 1; i < shnum; i++) {
        uint64_t base = shoff + i * shentsize, name, off, size, type;
        static const char want[] = ".modinfo";

        if (!field(&e, base, offsetof(Elf32_Shdr, sh_name), 4, offsetof(Elf64_Shdr, sh_name), 4,
                   &name) ||
            !field(&e, base, offsetof(Elf32_Shdr, sh_type), 4, offsetof(Elf64_Shdr, sh_type), 4,
                   &type) ||
            !field(&e, base, offsetof(Elf32_Shdr, sh_offset), 4, offsetof(Elf64_Shdr, sh_offset), 8,
                   &off) ||
            !field(&e, base, offsetof(Elf32_Shdr, sh_size), 4, offsetof(Elf64_Shdr, sh_size), 8,
                   &size))
            return -EBADMSG;
        if (name >= str_size || str_size - name < sizeof(want) ||
            memcmp(e.p + str_off + name, want, sizeof(want)) != 0)
            continue;
        if (type == SHT_NOBITS || off > len || size > len - off)
            return -EBADMSG;
        *ret_data = (const char *)e.p + off;
        *ret_len = (size_t)size;
        return 0;
    }
    return -ENOENT;
}

int ks_modinfo_get(const char *info, size_t len, const char *key, char **ret)
{
    size_t klen = strlen(key), pos = 0;

    while (pos < len) {
        const char *s = info + pos;
        const char *nul = memchr(s, '\0', len - pos);
        size_t slen = nul ? (size_t)(nul - s) : len - pos;

        if (slen > klen && memcmp(s, key, klen) == 0 && s[klen] == '=') {
            char *v = strndup(s + klen + 1, slen - klen - 1);
            if (!v)
                return -ENOMEM;
            *ret = v;
            return 0;
        }
        pos += slen + 1;
    }
    return -ENOENT;
}

/* No .ko.gz: Debian's kmod is built without zlib and cannot load them. */
static const char *const module_suffixes[] = {".ko", ".ko.xz", ".ko.zst"};

bool ks_is_module_path(const char *path)
{
    for (size_t i = 0; i < ARRAY_SIZE(module_suffixes); i++)
        if (ks_endswith(path, module_suffixes[i]))
            return true;
    return false;
}

int ks_module_name_from_path(const char *path, char **ret)
{
    const char *base = strrchr(path, '/');
    char *name;

    base = base ? base + 1 : path;
    for (size_t i = 0; i < ARRAY_SIZE(module_suffixes); i++) {
        size_t bl = strlen(base), sl = strlen(module_suffixes[i]);
        if (bl > sl && ks_endswith(base, module_suffixes[i])) {
            name = strndup(base, bl - sl);
            if (!name)
                return -ENOMEM;
            ks_module_name_normalize(name);
            *ret = name;
            return 0;
        }
    }
    return -EINVAL;
}

int ks_builtin_modinfo_foreach(const char *data, size_t len, ks_builtin_modinfo_fn fn,
                               void *userdata)
{
    size_t pos = 0;

    while (pos < len) {
        const char *s = data + pos, *nul = memchr(s, '\0', len - pos), *dot, *eq;
        size_t slen = nul ? (size_t)(nul - s) : len - pos;
        _cleanup_free_ char *entry = NULL;
        int r;

        pos += slen + 1;
        if (slen == 0)
            continue;
        entry = strndup(s, slen);
        if (!entry)
            return -ENOMEM;
        dot = strchr(entry, '.');
        eq = strchr(entry, '=');
        if (!dot || !eq || eq < dot || dot == entry)
            continue;
        entry[dot - entry] = '\0';
        entry[eq - entry] = '\0';
        ks_module_name_normalize(entry);
        r = fn(userdata, entry, dot + 1, eq + 1);
        if (r < 0)
            return r;
    }
    return 0;
}

int ks_builtin_foreach(const char *data, size_t len, ks_builtin_fn fn, void *userdata)
{
    size_t pos = 0, llen;
    const char *line;

    while (ks_next_line(data, len, &pos, &line, &llen)) {
        _cleanup_free_ char *path = strndup(line, llen), *name = NULL;
        int r;

        if (!path)
            return -ENOMEM;
        ks_strstrip(path);
        if (!*path || ks_module_name_from_path(path, &name) < 0)
            continue;
        r = fn(userdata, name);
        if (r < 0)
            return r;
    }
    return 0;
}
