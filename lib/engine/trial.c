/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/basic/fileio.h"
#include "lib/engine/trial.h"
#include "lib/basic/util.h"

int ks_trial_flag_set(const ks_root *root, const char *release)
{
    _cleanup_free_ char *text = ks_asprintf("%s\n", strempty(release));

    if (!text)
        return -ENOMEM;
    return ks_write_atomic(root, KS_TRIAL_FLAG_PATH, text, strlen(text), 0644);
}

int ks_trial_flag_clear(const ks_root *root)
{
    return ks_unlink_if_exists(root, KS_TRIAL_FLAG_PATH);
}

int ks_motd_set(const ks_root *root, const char *line)
{
    _cleanup_free_ char *text = ks_asprintf("%s\n", line);

    if (!text)
        return -ENOMEM;
    return ks_write_atomic(root, KS_MOTD_PATH, text, strlen(text), 0644);
}

int ks_motd_clear(const ks_root *root)
{
    return ks_unlink_if_exists(root, KS_MOTD_PATH);
}
