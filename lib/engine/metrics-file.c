/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kswap.prom: the metrics collected, rendered and written (lib/engine/metrics-file.h). */
#include <assert.h>
#include <fcntl.h>

#include "lib/basic/fileio.h"
#include "lib/basic/time-util.h"
#include "lib/engine/bootctl.h"
#include "lib/engine/metrics-file.h"
#include "lib/engine/tcp-report.h"
#include "lib/host/kernels.h"

void ks_metrics_values_done(ks_metrics_values *v)
{
    free(v->running);
    free(v->pinned);
    ks_update_done(&v->update);
    *v = (ks_metrics_values){0};
}

/* What GRUB's saved default starts: the forecast as `kswap status` shows it, past a one-shot. */
static char *pinned_kernel(const ks_root *root)
{
    ks_grub_forecast f = {0};
    ks_boot b = {0};
    char *kernel = NULL;

    if (ks_boot_load(root, &b, NULL) >= 0 && ks_boot_forecast(&b, &f) >= 0)
        for (size_t i = 0; i < f.n; i++)
            if (!f.v[i].one_shot) {
                kernel = f.v[i].kernel ? strdup(f.v[i].kernel) : NULL;
                break;
            }
    ks_grub_forecast_done(&f);
    ks_boot_done(&b);
    return kernel;
}

/* The swap's TCP figures from the journal's recorded samples (no live sample here). */
static void collect_tcp(const ks_journal *j, ks_metrics_values *v)
{
    ks_tcp_compare c;

    ks_tcp_compare_of(ks_journal_tcp(j), ks_journal_get(j, KS_JF_NEW_KERNEL), NULL, &c);
    v->tcp_before = c.before;
    v->tcp_after = c.after;
    v->m.tcp_before = c.has_before ? &v->tcp_before : NULL;
    v->m.tcp_after = c.has_after ? &v->tcp_after : NULL;
}

int ks_metrics_collect(const ks_root *root, const ks_journal *j, const ks_config *cfg,
                       ks_metrics_values *ret)
{
    ks_metrics_values v = {0};
    ks_outcome o = ks_journal_outcome(j);
    time_t armed, judged, updated;

    assert(root);
    assert(j);
    assert(ret);
    (void)ks_running_kernel(root, &v.running);
    v.pinned = pinned_kernel(root);
    v.m = (ks_metrics){
        .state = ks_state_to_string(ks_journal_state(j)),
        .outcome = ks_outcome_to_string(o),
        .running_kernel = v.running,
        .pinned_kernel = v.pinned,
        .old_kernel = ks_journal_get(j, KS_JF_OLD_KERNEL),
        .new_kernel = ks_journal_get(j, KS_JF_NEW_KERNEL),
        .reboots_requested = ks_journal_reboots_requested(j),
    };
    if (ks_parse_utc(ks_journal_updated(j), &updated) >= 0) {
        v.m.has_last_change = true;
        v.m.last_change = (int64_t)updated;
    }
    /* A verdict on the trial, not "no reboot yet": arming to that verdict. */
    if (o != KS_OUTCOME_NONE && o != KS_OUTCOME_NO_REBOOT &&
        ks_parse_utc(ks_journal_armed_at(j), &armed) >= 0 &&
        ks_parse_utc(ks_journal_outcome_at(j), &judged) >= 0 && judged >= armed) {
        v.m.has_trial_duration = true;
        v.m.trial_duration = (int64_t)(judged - armed);
    }
    if (ks_update_check_node(root, cfg, &v.update) == -ENOMEM) {
        ks_metrics_values_done(&v);
        return -ENOMEM;
    }
    v.m.update_current = v.update.current;
    v.m.update_newest = v.update.newest;
    v.m.update_package = v.update.package;
    v.m.update_installed = v.update.installed;
    *ret = v;
    collect_tcp(j, ret);
    return 0;
}

const char *ks_metrics_textfile_dir(const ks_config *cfg)
{
    if (ks_config_is_set(cfg, "metrics", "textfile_dir"))
        return ks_config_get_string(cfg, "metrics", "textfile_dir", NULL);
    return KS_METRICS_DEFAULT_TEXTFILE_DIR;
}

int ks_metrics_write(const ks_root *root, const char *dir, const ks_journal *j,
                     const ks_config *cfg, char **ret_error)
{
    _cleanup_(ks_metrics_values_done) ks_metrics_values v = {0};
    _cleanup_free_ char *text = NULL;
    _cleanup_close_ int dfd = -EBADF;
    const char *rel = dir;
    int r;

    assert(root);
    assert(dir);
    assert(j);
    while (*rel == '/')
        rel++;
    /* Never created: an absent directory means no node_exporter reads it. */
    dfd = ks_root_open_at(root, *rel ? rel : ".", O_RDONLY | O_DIRECTORY, 0);
    if (dfd == -ENOENT)
        return 0;
    r = dfd < 0 ? dfd : ks_metrics_collect(root, j, cfg, &v);
    if (r >= 0)
        r = ks_metrics_render(&v.m, &text);
    if (r >= 0)
        r = ks_write_atomic_at(dfd, KS_METRICS_FILE, text, strlen(text), 0644);
    if (r < 0) {
        if (ret_error)
            *ret_error = ks_asprintf("cannot write '%s/%s': %s", streq(dir, "/") ? "" : dir,
                                     KS_METRICS_FILE, ks_strerror(r));
        return r;
    }
    return 1;
}

typedef struct sink {
    const ks_root *root;
    const ks_config *cfg;
    char *dir;
    char *error; /* the first failure */
} sink;

static void sink_free(void *data)
{
    sink *s = data;

    if (!s)
        return;
    free(s->dir);
    free(s->error);
    free(s);
}

static void metrics_saved(const ks_journal *j, void *data)
{
    _cleanup_free_ char *err = NULL;
    sink *s = data;

    if (ks_metrics_write(s->root, s->dir, j, s->cfg, &err) < 0 && !s->error)
        s->error = err ? TAKE_PTR(err) : strdup("cannot write the metrics: out of memory");
}

int ks_metrics_attach(ks_journal *j, const ks_root *root, const ks_config *cfg)
{
    const char *dir = ks_metrics_textfile_dir(cfg);
    sink *s;

    assert(j);
    assert(root);
    if (!dir || !*dir)
        return 0;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->root = root;
    s->cfg = cfg;
    s->dir = strdup(dir);
    if (!s->dir) {
        sink_free(s);
        return -ENOMEM;
    }
    ks_journal_on_save(j, metrics_saved, s, sink_free);
    return 0;
}

const char *ks_metrics_error(const ks_journal *j)
{
    const sink *s = ks_journal_on_save_data(j, metrics_saved);
    return s ? s->error : NULL;
}

int ks_metrics_add_finding(const ks_journal *j, ks_findings *f)
{
    const char *err = ks_metrics_error(j);

    if (!err || ks_findings_get(f, "metrics.unwritable"))
        return 0;
    return ks_findings_add(f, "metrics.unwritable", KS_SEV_WARN,
                           "make the directory writable for root, or set '[metrics] "
                           "textfile_dir =' empty in kswap.conf to turn the metrics off",
                           "%s; kswap went on without them", err);
}
