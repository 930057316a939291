/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <limits.h>

#include "grub/resolve.h"

#include "lib/basic/util.h"

int ks_grub_strtoull(const char *s, unsigned long long *ret)
{
    unsigned long long num = 0;
    unsigned base = 10;
    bool found = false;

    assert(s);
    assert(ret);
    while (*s && isspace((unsigned char)*s))
        s++;
    if (s[0] == '0') {
        if (s[1] == 'x') {
            base = 16;
            s += 2;
        } else if (s[1] >= '0' && s[1] <= '7') {
            base = 8;
        }
    }
    for (; *s; s++) {
        unsigned long digit = (unsigned long)(tolower((unsigned char)*s) - '0');
        if (digit >= (unsigned long)('a' - '0'))
            digit += '0' - 'a' + 10;
        else if (digit > 9)
            break;
        if (digit >= base)
            break;
        found = true;
        if (num > (ULLONG_MAX - digit) / base)
            return -ERANGE;
        num = num * base + digit;
    }
    if (!found)
        return -EINVAL;
    *ret = num;
    return 0;
}

/* menuentry_eq(): id against spec up to the first unescaped '>'. */
static bool menuentry_eq(const char *id, const char *spec)
{
    const char *p1 = id, *p2 = spec;
    for (;;) {
        if (*p2 == '>' && p2[1] != '>' && *p1 == 0)
            return true;
        if (*p2 == '>' && p2[1] != '>')
            return false;
        if (*p2 == '>')
            p2++;
        if (*p1 != *p2)
            return false;
        if (*p1 == 0)
            return true;
        p1++;
        p2++;
    }
}

int ks_grub_entry_number(const ks_grub_entry *menu, size_t n, const char *value,
                         ks_grub_level_how *ret_how)
{
    unsigned long long num;
    int r, entry;

    if (!value) {
        *ret_how = KS_GRUB_LEVEL_UNSET;
        return 0;
    }
    r = ks_grub_strtoull(value, &num);
    if (r == 0) {
        /* x86_64-efi: unsigned long is 64 bits (i386-pc would overflow earlier, same entry 0). */
        entry = (int)(unsigned long)num;
        if (entry < 0 || (size_t)entry >= n) {
            *ret_how = KS_GRUB_LEVEL_FALLBACK;
            return 0;
        }
        *ret_how = KS_GRUB_LEVEL_INDEX;
        return entry;
    }
    if (r == -EINVAL)
        for (size_t i = 0; i < n; i++)
            if (menuentry_eq(menu[i].title, value) ||
                menuentry_eq(ks_grub_entry_id(&menu[i]), value)) {
                *ret_how = KS_GRUB_LEVEL_MATCH;
                return (int)i;
            }
    *ret_how = KS_GRUB_LEVEL_FALLBACK;
    return 0;
}

char *ks_grub_default_rest(const char *value)
{
    const char *p;

    if (!value)
        return NULL;
    for (p = value; *p; p++) {
        if (p[0] == '>' && p[1] == '>') {
            p++;
            continue;
        }
        if (p[0] == '>')
            break;
    }
    if (p[0] && p[1])
        return strdup(p + 1);
    return NULL;
}

int ks_grub_resolve(const ks_grub_entry *menu, size_t n, const char *value, ks_grub_resolution *ret)
{
    ks_grub_resolution r = {0};
    _cleanup_free_ char *cur = value ? strdup(value) : NULL;

    if (value && !cur)
        return -ENOMEM;
    for (;;) {
        ks_grub_level_how how;
        int i;

        if (n == 0 || r.depth >= KS_GRUB_MAX_DEPTH)
            return -ENOENT;
        i = ks_grub_entry_number(menu, n, cur, &how);
        r.index[r.depth] = (size_t)i;
        r.how[r.depth] = how;
        r.depth++;
        if (how == KS_GRUB_LEVEL_FALLBACK)
            r.fell_back = true;
        if (!menu[i].submenu) {
            _cleanup_free_ char *rest = ks_grub_default_rest(cur);
            r.ignored_rest = rest != NULL;
            r.entry = &menu[i];
            break;
        }
        char *rest = ks_grub_default_rest(cur);
        free(cur);
        cur = rest;
        n = menu[i].n_children;
        menu = menu[i].children;
    }
    *ret = r;
    return 0;
}

int ks_grub_path_append(char **s, const char *comp)
{
    size_t ol, cl;
    char *p, *q;

    assert(s);
    assert(comp);
    ol = *s ? strlen(*s) : 0;
    cl = strlen(comp);
    p = realloc(*s, ol + 1 + 2 * cl + 1); /* '>', every char doubled at worst, NUL */
    if (!p)
        return -ENOMEM;
    q = p + ol;
    if (ol)
        *q++ = '>';
    for (const char *c = comp; *c; c++) {
        if (*c == '>')
            *q++ = '>';
        *q++ = *c;
    }
    *q = '\0';
    *s = p;
    return 0;
}

int ks_grub_resolution_paths(const ks_grub_entry *menu, const ks_grub_resolution *r,
                             char **ret_title_path, char **ret_id_path)
{
    _cleanup_free_ char *t = NULL, *id = NULL;

    for (size_t d = 0; d < r->depth; d++) {
        const ks_grub_entry *e = &menu[r->index[d]];
        if (ks_grub_path_append(&t, e->title) < 0 ||
            ks_grub_path_append(&id, ks_grub_entry_id(e)) < 0)
            return -ENOMEM;
        menu = e->children;
    }
    if (ret_title_path)
        *ret_title_path = TAKE_PTR(t);
    if (ret_id_path)
        *ret_id_path = TAKE_PTR(id);
    return 0;
}
