#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kswap.prom for node_exporter's textfile collector on copies of the example root, with the
fakes first on PATH: apply --reboot, the simulated trial boot and accept, pin and rollback
--reboot each leave a file whose values match the state journal, and that Prometheus' own
promtool accepts; no file without the directory or with "textfile_dir =" empty; an unwritable
directory is a warning (metrics.unwritable) and the swap still succeeds.
Usage: test-metrics.py KSWAP [SCENARIO...]. Exit 77 when promtool (Debian: prometheus) is missing."""
import calendar
import os
import shutil
import subprocess
import sys
import tempfile
import time

import kstest
from kstest import NEW, OLD, check

exe = os.path.abspath(sys.argv[1])
only = sys.argv[2:]
promtool = shutil.which("promtool")
if not promtool:
    print("promtool not installed (Debian package prometheus): skipped")
    sys.exit(77)
work = tempfile.mkdtemp(prefix="kswap-metrics.")
TEXTDIR = "var/lib/prometheus/node-exporter"


def kswap(root, *args, **kw):
    return kstest.run_kswap(exe, root, *args, **kw)


def scenario(name):
    return not only or name in only


def fresh_root(name, textdir=TEXTDIR):
    r = os.path.join(work, name)
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    if textdir:
        os.makedirs(os.path.join(r, textdir))
    return r


def boot_into(root, release):
    with open(os.path.join(root, "proc/sys/kernel/osrelease"), "w") as f:
        f.write(release + "\n")
    with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w") as f:
        f.write("%08x-0000-4000-8000-000000000000\n" % int(time.time() * 1e6 % 2**32))


def put(root, path, text):
    f = os.path.join(root, path)
    os.makedirs(os.path.dirname(f), exist_ok=True)
    with open(f, "w") as fh:
        fh.write(text)


def journal(root):
    import json
    with open(os.path.join(root, "var/lib/kswap/state.json")) as f:
        return json.load(f)


def utc(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def parse_prom(text):
    """{name: [(labels dict, value)]}: the samples of the text format as kswap writes it
    (label values without commas or braces except escaped quotes), plus the HELP/TYPE names."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
            continue
        if line.startswith("#") or not line:
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            body, value = rest.rsplit("} ", 1)
            labels = {}
            for part in body.split('",'):
                k, v = part.split('="', 1)
                labels[k] = v.rstrip('"')
        else:
            name, value = line.split(" ", 1)
            labels = {}
        samples.setdefault(name, []).append((labels, float(value)))
    return samples, types


def check_prom(root, what, textdir=TEXTDIR, **want):
    """kswap.prom passes promtool and holds what the journal says; want: info labels, reboots,
    duration (None: absent)."""
    path = os.path.join(root, textdir, "kswap.prom")
    if not os.path.exists(path):
        check(False, f"{what}: kswap.prom written")
        return None
    text = open(path).read()
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    check(p.returncode == 0, f"{what}: promtool check metrics accepts kswap.prom",
          p.stdout + p.stderr + "\n" + text)
    samples, types = parse_prom(text)
    check(types.get("kswap_info") == "gauge" and types.get("kswap_reboots_requested_total") == "counter"
          and types.get("kswap_last_change_timestamp_seconds") == "gauge",
          f"{what}: families typed (gauge, counter)", types)
    j = journal(root)
    info = samples.get("kswap_info", [({}, 0)])
    labels, value = info[0]
    expect = {"state": j["state"], "outcome": j.get("outcome") or "",
              "old_kernel": j.get("old_kernel") or "", "new_kernel": j.get("new_kernel") or ""}
    expect.update({k: v for k, v in want.items() if k in ("running_kernel", "pinned_kernel", "state",
                                                          "outcome")})
    got = {k: labels.get(k) for k in expect}
    check(len(info) == 1 and value == 1 and got == expect, f"{what}: kswap_info {expect}", (info, j["state"]))
    last = samples.get("kswap_last_change_timestamp_seconds", [({}, None)])[0][1]
    check(last == utc(j["updated"]), f"{what}: last change = the journal's updated ({j['updated']})",
          (last, j["updated"]))
    reboots = samples.get("kswap_reboots_requested_total", [({}, None)])[0][1]
    check(reboots == want["reboots"] == j.get("reboots_requested"),
          f"{what}: kswap_reboots_requested_total {want['reboots']}", (reboots, j.get("reboots_requested")))
    dur = samples.get("kswap_trial_duration_seconds")
    if want.get("duration", None) is None:
        check(dur is None and "kswap_trial_duration_seconds" not in text,
              f"{what}: no trial duration without a verdict", dur)
    else:
        expect_d = utc(j["outcome_at"]) - utc(j["armed_at"])
        check(dur and dur[0][1] == expect_d >= 0, f"{what}: trial duration = outcome_at - armed_at ({expect_d} s)",
              (dur, j.get("armed_at"), j.get("outcome_at")))
    return text


def leftovers(root, textdir=TEXTDIR):
    d = os.path.join(root, textdir)
    return [n for n in os.listdir(d) if n != "kswap.prom"] if os.path.isdir(d) else []


deb = os.path.join(work, "xanmod.deb")
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr", "builtin",
                "--compress", "zst"], check=True, capture_output=True)

if scenario("flow"):
    r = fresh_root("flow")
    p, d = kswap(r, "--json", "apply", "--deb", deb, "--yes", "--reboot")
    check(p.returncode == 0 and d and d.get("result") != "error", "apply --reboot arms the trial", p.stderr)
    check_prom(r, "apply --reboot", state="armed", outcome="", running_kernel=OLD, pinned_kernel=OLD,
               reboots=1, duration=None)
    check(not leftovers(r), "no temporary file left beside kswap.prom", leftovers(r))

    boot_into(r, NEW)
    p, d = kswap(r, "--json", "accept", "--no-pin")
    check(p.returncode == 0 and d and d["outcome"] == "trial-ok", "the trial boot: accept says trial-ok",
          p.stderr[-2000:])
    check_prom(r, "accept (trial-ok, not pinned)", state="trial-booted", outcome="trial-ok",
               running_kernel=NEW, pinned_kernel=OLD, reboots=1, duration=True)

    p, d = kswap(r, "--json", "pin")
    check(p.returncode == 0, "pin", p.stderr)
    check_prom(r, "pin", state="pinned", outcome="trial-ok", running_kernel=NEW, pinned_kernel=NEW,
               reboots=1, duration=True)

    p, d = kswap(r, "--json", "rollback", "--reboot")
    check(p.returncode == 0, "rollback --reboot", p.stderr)
    check_prom(r, "rollback --reboot", state="rolled-back", running_kernel=NEW, pinned_kernel=OLD,
               reboots=2, duration=True)

    # A new swap keeps the counter: it never goes down.
    boot_into(r, OLD)
    p, d = kswap(r, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "a second apply (no reboot)", p.stderr)
    check_prom(r, "second apply", state="armed", outcome="", running_kernel=OLD, pinned_kernel=OLD,
               reboots=2, duration=None)
    check(not leftovers(r), "still no temporary file", leftovers(r))

if scenario("health-failed"):
    # accept's reboot back into the old kernel is a reboot kswap asked for.
    r = fresh_root("health")
    p, _ = kswap(r, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "apply arms the trial", p.stderr)
    check_prom(r, "apply", state="armed", reboots=0, duration=None)
    put(r, "etc/kswap/kswap.conf", "[accept]\nservices = nothere.service\ntimeout = 2\ninterval = 1\n")
    boot_into(r, NEW)
    p, d = kswap(r, "--json", "accept")
    check(p.returncode == 3 and d and d["outcome"] == "health-failed" and d["reboot"],
          "a failing check: health-failed, one reboot", p.stderr[-2000:])
    check_prom(r, "health-failed and its reboot", state="rolled-back", outcome="health-failed",
               running_kernel=NEW, pinned_kernel=OLD, reboots=1, duration=True)

if scenario("trial-hung"):
    # The trial boot's deadline rebooted it by force: counted when accept learns of it.
    r = fresh_root("hung")
    p, _ = kswap(r, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "apply arms the trial", p.stderr)
    boot_into(r, OLD)
    put(r, "var/lib/kswap/trial-stages", "userspace 4\nemergency 19\ndeadline 60 emergency mode\n")
    p, d = kswap(r, "--json", "accept")
    check(p.returncode == 3 and d and d["outcome"] == "trial-hung", "accept: trial-hung", p.stderr[-2000:])
    check_prom(r, "trial-hung", state="rolled-back", outcome="trial-hung", running_kernel=OLD,
               pinned_kernel=OLD, reboots=1, duration=True)

if scenario("no-dir"):
    r = fresh_root("nodir", textdir=None)
    p, d = kswap(r, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "apply without the textfile directory", p.stderr)
    check(not os.path.exists(os.path.join(r, "var/lib/prometheus")),
          "no directory: none created, no kswap.prom")
    check(d and not any(f["id"] == "metrics.unwritable" for f in d.get("findings", [])),
          "no directory: no warning either", d and d.get("findings"))

if scenario("empty"):
    r = fresh_root("empty")
    put(r, "etc/kswap/kswap.conf", "[metrics]\ntextfile_dir =\n")
    p, d = kswap(r, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "apply with textfile_dir set empty", p.stderr)
    check(os.listdir(os.path.join(r, TEXTDIR)) == [], "textfile_dir empty: no kswap.prom",
          os.listdir(os.path.join(r, TEXTDIR)))

if scenario("custom"):
    r = fresh_root("custom", textdir="srv/metrics")
    os.makedirs(os.path.join(r, TEXTDIR))
    put(r, "etc/kswap/kswap.conf", "[metrics]\ntextfile_dir = /srv/metrics\n")
    p, d = kswap(r, "--json", "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "apply with textfile_dir = /srv/metrics", p.stderr)
    check_prom(r, "textfile_dir = /srv/metrics", textdir="srv/metrics", state="armed", reboots=0,
               duration=None)
    check(os.listdir(os.path.join(r, TEXTDIR)) == [], "the default directory is not written then")
    put(r, "etc/kswap/kswap.conf", "[metrics]\ntextfile_dir = srv/metrics\n")
    p, d = kswap(r, "--json", "rollback")
    check(p.returncode != 0 and "textfile_dir = srv/metrics is not valid (an absolute path)" in (p.stderr + p.stdout),
          "a relative textfile_dir is refused when the configuration is read", p.stderr + p.stdout)

if scenario("unwritable"):
    # The directory belongs to root and kswap runs as another user who owns the rest of the
    # root: the directory is there (metrics on) but cannot be written.
    r = fresh_root("unwritable")
    nobody = 65534
    for dirpath, dirnames, filenames in os.walk(r):
        for n in dirnames + filenames:
            os.lchown(os.path.join(dirpath, n), nobody, nobody)
    os.lchown(r, nobody, nobody)
    os.chown(os.path.join(r, TEXTDIR), 0, 0)
    os.chmod(os.path.join(r, TEXTDIR), 0o755)
    os.chmod(work, 0o755)
    os.chmod(deb, 0o644)
    as_nobody = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups"]
    # The build and source trees may sit below a folder only root can enter (a clone in a
    # mktemp -d folder): the other user runs copies of kswap and the fakes from work instead.
    mine = os.path.join(work, "as-nobody")
    shutil.copytree(kstest.FAKES, os.path.join(mine, "fakes"), symlinks=True)
    shutil.copy2(exe, os.path.join(mine, "kswap"))
    for dirpath, dirnames, filenames in os.walk(mine):
        os.chmod(dirpath, 0o755)
    env = kstest.env(HOME=r)
    env["PATH"] = os.path.join(mine, "fakes") + ":" + env["PATH"]
    exe = os.path.join(mine, "kswap")
    p = subprocess.run(as_nobody + [exe, "--root", r, "--json", "apply", "--deb", deb, "--yes"],
                       capture_output=True, text=True, env=env, timeout=300)
    import json
    try:
        d = json.loads(p.stdout)
    except ValueError:
        d = None
    found = [f for f in (d or {}).get("findings", []) if f["id"] == "metrics.unwritable"]
    check(p.returncode == 0 and d and journal(r)["state"] == "armed",
          "unwritable directory: apply still arms the trial, exit 0", p.stderr[-2000:])
    check(len(found) == 1 and found[0]["severity"] == "warn" and
          f"/{TEXTDIR}/kswap.prom" in found[0]["message"] and "Permission denied" in found[0]["message"],
          "... with the warning finding metrics.unwritable naming the file and the reason", found)
    check(os.listdir(os.path.join(r, TEXTDIR)) == [], "nothing written there")
    p = subprocess.run(as_nobody + [exe, "--root", r, "apply", "--deb", deb, "--yes"],
                       capture_output=True, text=True, env=env, timeout=300)
    # Armed already: nothing saved, so nothing to warn about.
    check(p.returncode == 0, "apply again (armed already) exits 0", p.stderr)
    boot_into(r, NEW)
    p = subprocess.run(as_nobody + [exe, "--root", r, "accept", "--no-pin"],
                       capture_output=True, text=True, env=env, timeout=300)
    check(p.returncode == 0 and journal(r)["outcome"] == "trial-ok",
          "unwritable directory: accept still judges trial-ok", p.stderr[-2000:])
    check("metrics.unwritable" in p.stderr and "Permission denied" in p.stderr,
          "accept warns on stderr (no findings list there)", p.stderr[-2000:])

sys.exit(1 if kstest.failed else 0)
