/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <string.h>

#include "lib/basic/util.h"
#include "lib/repo/apt-status.h"

static const char *const phase_table[_KS_APT_PHASE_MAX] = {
    [KS_APT_PHASE_DOWNLOAD] = "download", [KS_APT_PHASE_UNPACK] = "unpack",
    [KS_APT_PHASE_SETUP] = "setup",       [KS_APT_PHASE_TRIGGERS] = "triggers",
    [KS_APT_PHASE_REMOVE] = "remove",
};

const char *ks_apt_phase_to_string(ks_apt_phase p)
{
    return p >= 0 && p < _KS_APT_PHASE_MAX ? phase_table[p] : NULL;
}

static const char *const kind_table[_KS_APT_STATUS_KIND_MAX] = {
    [KS_APT_STATUS_DL] = "dlstatus",
    [KS_APT_STATUS_PM] = "pmstatus",
    [KS_APT_STATUS_PMERROR] = "pmerror",
    [KS_APT_STATUS_PMCONFFILE] = "pmconffile",
    [KS_APT_STATUS_MEDIA_CHANGE] = "media-change",
};

const char *ks_apt_status_kind_to_string(ks_apt_status_kind k)
{
    return k >= 0 && k < _KS_APT_STATUS_KIND_MAX ? kind_table[k] : NULL;
}

void ks_apt_status_done(ks_apt_status *s)
{
    free(s->subject);
    free(s->message);
    *s = (ks_apt_status){0};
}

/* "45", "45.4545", "100.0000": digits, an optional '.' and digits; 0 to 100; C locale. */
static int parse_percent(const char *s, size_t n, double *ret)
{
    double v = 0, scale = 1;
    bool dot = false, digits = false;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.' && !dot) {
            dot = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9' || (!dot && v > 1000))
            return -EBADMSG;
        digits = true;
        if (dot) {
            scale /= 10;
            v += (s[i] - '0') * scale;
        } else
            v = v * 10 + (s[i] - '0');
    }
    if (!digits || v > 100)
        return -EBADMSG;
    *ret = v;
    return 0;
}

/* The phase a dpkg message belongs to, by apt's (untranslated) words. */
static ks_apt_phase pm_phase(const char *m)
{
    static const struct {
        const char *prefix;
        ks_apt_phase phase;
    } words[] = {
        /* the longer "Preparing ..." forms before "Preparing %s" */
        {"Preparing to configure ", KS_APT_PHASE_SETUP},
        {"Preparing for removal of ", KS_APT_PHASE_REMOVE},
        {"Preparing to completely remove ", KS_APT_PHASE_REMOVE},
        {"Preparing ", KS_APT_PHASE_UNPACK},
        {"Unpacking ", KS_APT_PHASE_UNPACK},
        {"Installing ", KS_APT_PHASE_UNPACK},
        {"Configuring ", KS_APT_PHASE_SETUP},
        {"Installed ", KS_APT_PHASE_SETUP},
        {"Running post-installation trigger ", KS_APT_PHASE_TRIGGERS},
        {"Removing ", KS_APT_PHASE_REMOVE},
        {"Removed ", KS_APT_PHASE_REMOVE},
        {"Completely removing ", KS_APT_PHASE_REMOVE},
        {"Completely removed ", KS_APT_PHASE_REMOVE},
        {"Noting disappearance of ", KS_APT_PHASE_REMOVE},
    };

    for (size_t i = 0; i < ARRAY_SIZE(words); i++)
        if (ks_startswith(m, words[i].prefix))
            return words[i].phase;
    return KS_APT_PHASE_NONE;
}

int ks_apt_status_parse(const char *line, size_t len, ks_apt_status *ret)
{
    const char *f[4];
    size_t flen[4], nf = 0, start = 0;
    ks_apt_status s = {.phase = KS_APT_PHASE_NONE};
    int r;

    assert(line || len == 0);
    assert(ret);
    if (len > 0 && line[len - 1] == '\n')
        len--;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            return -EBADMSG;
    /* Three colons split the four fields; the message keeps any further ones. */
    for (size_t i = 0; i <= len && nf < 4; i++)
        if (i == len || (line[i] == ':' && nf < 3)) {
            f[nf] = line + start;
            flen[nf++] = i - start;
            start = i + 1;
        }
    if (nf != 4)
        return -EBADMSG;
    s.kind = _KS_APT_STATUS_KIND_INVALID;
    for (int i = 0; i < _KS_APT_STATUS_KIND_MAX; i++)
        if (flen[0] == strlen(kind_table[i]) && memcmp(f[0], kind_table[i], flen[0]) == 0)
            s.kind = i;
    if (s.kind < 0 || flen[1] == 0)
        return -EBADMSG;
    if (s.kind == KS_APT_STATUS_MEDIA_CHANGE)
        s.percent = -1;
    else if (parse_percent(f[2], flen[2], &s.percent) < 0)
        return -EBADMSG;
    s.subject = strndup(f[1], flen[1]);
    /* media-change's third field is the label: kept in the message with the drive. */
    s.message = s.kind == KS_APT_STATUS_MEDIA_CHANGE
                    ? ks_asprintf("%.*s:%.*s", (int)flen[2], f[2], (int)flen[3], f[3])
                    : strndup(f[3], flen[3]);
    if (!s.subject || !s.message) {
        ks_apt_status_done(&s);
        return -ENOMEM;
    }
    r = 0;
    if (s.kind == KS_APT_STATUS_DL)
        s.phase = KS_APT_PHASE_DOWNLOAD;
    else if (s.kind == KS_APT_STATUS_PM)
        s.phase = pm_phase(s.message);
    *ret = s;
    return r;
}

static void one_line(ks_apt_status_stream *st, const char *line, size_t len, ks_apt_status_fn fn,
                     void *userdata)
{
    ks_apt_status s;

    st->n_lines++;
    if (ks_apt_status_parse(line, len, &s) < 0) {
        st->n_bad++;
        return;
    }
    if (fn)
        fn(userdata, &s);
    ks_apt_status_done(&s);
}

int ks_apt_status_feed(ks_apt_status_stream *st, const char *data, size_t n, ks_apt_status_fn fn,
                       void *userdata)
{
    assert(st);
    for (size_t i = 0; i < n; i++) {
        char c = data[i];

        if (c == '\n') {
            if (st->overlong) {
                st->n_lines++;
                st->n_bad++;
            } else
                one_line(st, st->buf, st->len, fn, userdata);
            st->len = 0;
            st->overlong = false;
            continue;
        }
        if (st->overlong)
            continue;
        if (st->len >= sizeof(st->buf)) {
            st->overlong = true;
            continue;
        }
        st->buf[st->len++] = c;
    }
    return 0;
}
