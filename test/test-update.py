#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Day two's update awareness (lib/engine/plan-newer.c): on a copy of the example root swapped
to NEW and pinned (the fakes first on PATH), a newer release of the branch in apt's lists
(kernel.update-available) or installed but not the default (kernel.newer-not-default), as
plan (table, -q, --json with "update" and "command") and kswap.prom say it; what must not count
(another source's index, a release that is not newer, a swap in flight, a broken index).
Usage: test-update.py KSWAP"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-update.")
META = "linux-xanmod-lts-x64v3"
NEW2 = NEW.replace("6.18.45", "6.18.50")
LISTS = "var/lib/apt/lists"
# The names apt gives XanMod's indexes for noble (URItoFileName): what kswap reads.
XANMOD_INDEX = "deb.xanmod.org_dists_noble_main_binary-amd64_Packages"


def kswap(root, *args, **kw):
    return kstest.run_kswap(exe, root, *args, **kw)


def stanza(package, version, depends=None):
    s = f"Package: {package}\nVersion: {version}\nArchitecture: amd64\n"
    if depends:
        s += f"Depends: {depends}\n"
    return s + "Description: x\n continuation: not a field\n\n"


def write_index(root, name, text):
    os.makedirs(os.path.join(root, LISTS), exist_ok=True)
    with open(os.path.join(root, LISTS, name), "w") as f:
        f.write(text)


def plan(root, *args):
    p, d = kswap(root, "--json", "plan", *args)
    check(d is not None, "plan --json: one document", p.stderr + p.stdout)
    return d or {}


def finding(d, fid):
    return next((f for f in d.get("findings", []) if f["id"] == fid), None)


def metrics(root):
    with open(os.path.join(root, "var/lib/prometheus/node-exporter/kswap.prom")) as f:
        return f.read()


debs = os.path.join(work, "debs")
os.makedirs(debs)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW,
                os.path.join(debs, META + ".deb"), "--package", META, "--bbr", "builtin"],
               check=True, capture_output=True)
pinned = os.path.join(work, "pinned")
shutil.copytree(kstest.EXAMPLE_ROOT, pinned, symlinks=True)
os.makedirs(os.path.join(pinned, "var/lib/prometheus/node-exporter"), exist_ok=True)
p, d = kswap(pinned, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs)
check(p.returncode == 0 and d and d.get("state") == "armed", "day one: armed", p.stderr[-2000:])
with open(os.path.join(pinned, "proc/sys/kernel/osrelease"), "w") as f:
    f.write(NEW + "\n")
with open(os.path.join(pinned, "proc/sys/kernel/random/boot_id"), "w") as f:
    f.write("0badc0de-0000-4000-8000-000000000000\n")
p, d = kswap(pinned, "--json", "pin", "--force")
check(p.returncode == 0 and d and d.get("state") == "pinned", "day one: pinned", p.stderr[-2000:])


def tree(root):
    """Every file under root (but /proc, /run and the apt lists' private copies) by content."""
    out = {}
    for d, _, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if rel.startswith(("proc/", "run/")) or os.path.islink(p):
                continue
            with open(p, "rb") as f:
                out[rel] = hash(f.read())
    return out


def fresh(name):
    r = os.path.join(work, name)
    shutil.copytree(pinned, r, symlinks=True)
    return r


# 1. Up to date: the lists' newest metapackage brings the pinned kernel.
r = fresh("current")
write_index(r, XANMOD_INDEX, stanza(META, "1", f"linux-image-{NEW}, linux-headers-{NEW}"))
d = plan(r)
u = d.get("update") or {}
check(u.get("available") is False and u.get("current") == NEW and u.get("package") == META
      and u.get("command") is None, "up to date: update.available false, current NEW", u)
check(not finding(d, "kernel.update-available") and not finding(d, "kernel.newer-not-default"),
      "up to date: no update finding", d.get("findings"))
check(d.get("command") == "plan", "plan's document says its command", d.get("command"))

# 2. apt update brought metapackage 2 (Depends: linux-image-NEW2): plan says so, with the command
# that works when pasted (this root), and targets NEW2, not installed.
r = fresh("listed")
write_index(r, XANMOD_INDEX,
            stanza(META, "2", f"linux-image-{NEW2} (= {NEW2}-0~1), linux-headers-{NEW2}")
            + stanza(META, "1", f"linux-image-{NEW}") + stanza("linux-image-" + NEW2, NEW2))
d = plan(r)
u = d.get("update") or {}
f = finding(d, "kernel.update-available")
cmd = f"kswap --root {r} apply"
check(u.get("available") and u.get("newest") == NEW2 and not u.get("installed")
      and u.get("package_version") == "2" and u.get("seen_in") == f"/{LISTS}/{XANMOD_INDEX}"
      and u.get("command") == cmd, "listed: update object", u)
check(f and f["severity"] == "warn" and f["remedy"] == cmd and NEW2 in f["message"]
      and NEW in f["message"], "listed: kernel.update-available with the command", f)
t = d.get("target") or {}
check(t.get("release") == NEW2 and t.get("installed") is False and t.get("package") == META,
      "listed: the target is NEW2, not installed", t)
p, _ = kswap(r, "plan")
check(re.search(rf"^update  {re.escape(NEW2)} . in apt's lists .*{re.escape(cmd)}$", p.stdout, re.M),
      "listed: the table's update line names the command", p.stdout)
p, _ = kswap(r, "-q", "plan")
check(p.returncode == 0 and p.stdout.strip().splitlines() == [p.stdout.strip()]
      and p.stdout.startswith("verdict: warn"), "-q: the verdict line alone", p.stdout)
conf = os.path.join(work, "kswap.conf")
open(conf, "w").close()
p, _ = kswap(r, "--config", conf, "plan", "--json")
check(f"kswap --root {r} --config {conf} apply" in p.stdout,
      "the command keeps --config", p.stdout[-600:])
# Quoting: a root with a space pastes as one word.
spaced = os.path.join(work, "with space")
os.rename(r, spaced)
d = plan(spaced)
check((d.get("update") or {}).get("command") == f"kswap --root '{spaced}' apply",
      "a root with a space is quoted for the shell", d.get("update"))

# 2b. status says it too: the update line, next = the command with --yes, as it runs without a
# terminal (issue 31; exit 0: the node is healthy),
# JSON's update; -q: the state line and the next step only.
p, d = kswap(spaced, "--json", "status")
check(p.returncode == 0 and d and (d.get("update") or {}).get("newest") == NEW2
      and d.get("next") == f"kswap --root '{spaced}' apply --yes" and NEW2 in (d.get("next_reason") or ""),
      "status --json: update and next", d and {k: d.get(k) for k in ("update", "next", "next_reason")})
p, _ = kswap(spaced, "status")
check(p.returncode == 0 and re.search(rf"^update: {re.escape(NEW2)} . in apt's lists", p.stdout, re.M)
      and "next: kswap --root" in p.stdout and "nothing to do" not in p.stdout, "status: the update line", p.stdout)
p, _ = kswap(spaced, "-q", "status")
lines = p.stdout.strip().splitlines()
check(p.returncode == 0 and len(lines) == 2 and lines[0].startswith("state: pinned")
      and lines[1].startswith("next: kswap"), "status -q: the state line and the next step", p.stdout)
# apply on the pinned node takes the newest release through the whole trial path: the
# repository's metapackage brings NEW2, NEW (pinned, running) is the old kernel. The fake's
# package is version 2, as in the lists: version 1.0 is installed (apt would not reinstall it).
debs_new2 = os.path.join(work, "debs-new2")
os.makedirs(debs_new2)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW2,
                os.path.join(debs_new2, META + ".deb"), "--package", META, "--version", "2",
                "--bbr", "builtin"],
               check=True, capture_output=True)
# From the build folder without --key: the shipped key beside the build (build/data/).
p, d = kswap(spaced, "--json", "apply", "--yes", KSWAP_FAKE_DEBS=debs_new2)
check(p.returncode == 0 and d and d.get("state") == "armed" and d.get("old_kernel") == NEW
      and d.get("new_kernel") == NEW2, "apply on the pinned node: NEW2 on trial, NEW the way back",
      p.stderr[-1500:])

# 2c. The lists' newest is the pinned kernel: apply changes nothing (unchanged, exit 0).
r = fresh("newest")
write_index(r, XANMOD_INDEX, stanza(META, "1", f"linux-image-{NEW}"))
before = open(os.path.join(r, "var/lib/kswap/state.json")).read()
p, d = kswap(r, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs)
check(p.returncode == 0 and d and d.get("result") == "unchanged" and "newest release" in (d.get("error") or "")
      and open(os.path.join(r, "var/lib/kswap/state.json")).read() == before,
      "apply on the newest release: unchanged, the journal untouched", d)

# 2d. The lists' newest is older than the pinned XanMod kernel that runs: apply never moves the
# node back: unchanged (exit 0), nothing written. (The same from a repository whose index names
# the older kernel on a node whose XanMod kswap did not pin is refused: test-model found it.)
for name, journal, want_code, want_result in (("older-pinned", True, 0, "unchanged"),):
    r = fresh(name)
    if not journal:
        os.remove(os.path.join(r, "var/lib/kswap/state.json"))
    write_index(r, XANMOD_INDEX, stanza(META, "0.5", "linux-image-6.18.1-x64v3-xanmod1"))
    before = tree(r)
    p, d = kswap(r, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs)
    check(p.returncode == want_code and d and d.get("result") == want_result
          and os.path.exists(os.path.join(r, "var/lib/kswap/state.json")) == journal
          and tree(r) == before,
          f"{name}: the repository's newest is older than the running NEW: {want_result}, "
          "nothing written", (p.returncode, d and d.get("result"), d and d.get("error")))

# 3. What does not count: another source's index, a broken one, an older release.
r = fresh("other")
write_index(r, "mirror.example_dists_noble_main_binary-amd64_Packages",
            stanza(META, "9", f"linux-image-{NEW2}"))
write_index(r, XANMOD_INDEX, "Package: " + META + "\nVersion: 3\nDepends: \n\n\x00\xff garbage\n"
            + stanza(META, "0.5", "linux-image-6.18.1-x64v3-xanmod1"))
d = plan(r)
check(not (d.get("update") or {}).get("available") and not finding(d, "kernel.update-available"),
      "another source's index, an empty Depends and an older release: no update", d.get("update"))

# 4. NEW2 installed by apt (the fake's hook regenerates grub.cfg), not the default.
r = fresh("installed")
debs2 = os.path.join(work, "debs2")
os.makedirs(debs2)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW2,
                os.path.join(debs2, META + ".deb"), "--package", META, "--version", "2",
                "--bbr", "builtin"],
               check=True, capture_output=True)
subprocess.run([os.path.join(kstest.FAKES, "apt-get"), "install", "-y", os.path.join(debs2, META + ".deb")],
               env=kstest.env(KSWAP_ROOT=r), check=True, capture_output=True)
write_index(r, XANMOD_INDEX, stanza(META, "2", f"linux-image-{NEW2}"))
d = plan(r)
u = d.get("update") or {}
f = finding(d, "kernel.newer-not-default")
check(u.get("available") and u.get("installed") and u.get("newest") == NEW2, "installed: update", u)
check(f and f["remedy"] == f"kswap --root {r} apply" and NEW2 in f["message"],
      "installed: kernel.newer-not-default with the command", f)
check((d.get("target") or {}).get("installed") is True, "installed: the target says installed",
      d.get("target"))
# The metrics say it too, written with the next save of the journal (here: none yet); kswap
# metrics writes them now.
p, _ = kswap(r, "metrics")
check(p.returncode == 0, "kswap metrics: exit 0", p.stderr)
m = metrics(r)
check(re.search(r'^kswap_update_available\{current="%s",newest="%s",installed="true",package="%s"\} 1$'
                % (re.escape(NEW), re.escape(NEW2), META), m, re.M), "kswap.prom: update available", m)

# 4b. NEW2 runs, but NEW is pinned (a pin --force of the older kernel, its reboot to come):
# apply has nothing to swap to (NEW2 runs), so plan and status offer no update (test-model's
# seed 1039958258 found status naming an apply that then refused).
r4b = os.path.join(work, "runs-newer")
shutil.copytree(r, r4b, symlinks=True)
with open(os.path.join(r4b, "proc/sys/kernel/osrelease"), "w") as fh:
    fh.write(NEW2 + "\n")
d = plan(r4b)
check(not (d.get("update") or {}).get("available") and not finding(d, "kernel.newer-not-default"),
      "NEW2 runs, NEW pinned: no update", d.get("update"))
p, d = kswap(r4b, "--json", "status")
check(d and "apply" not in (d.get("next") or ""), "... status names no apply",
      d and (d.get("next"), d.get("next_reason")))

# 5. Once swapped to NEW2 (apply, trial, pin), nothing is newer.
p, d = kswap(r, "--json", "apply", "--yes", "--kernel", NEW2)
check(p.returncode == 0 and d and d.get("old_kernel") == NEW and d.get("new_kernel") == NEW2,
      "apply --kernel NEW2 from the pinned NEW", p.stderr[-1500:])
d = plan(r)
check(not (d.get("update") or {}).get("available") and (d.get("update") or {}).get("current") is None,
      "a swap in flight: no day two", d.get("update"))
with open(os.path.join(r, "proc/sys/kernel/osrelease"), "w") as f:
    f.write(NEW2 + "\n")
with open(os.path.join(r, "proc/sys/kernel/random/boot_id"), "w") as f:
    f.write("0badc0de-0000-4000-8000-000000000002\n")
p, d = kswap(r, "--json", "pin", "--force")
check(p.returncode == 0 and d and d.get("state") == "pinned", "pinned NEW2", p.stderr[-1500:])
d = plan(r)
u = d.get("update") or {}
check(u.get("current") == NEW2 and not u.get("available"), "pinned NEW2: up to date", u)
m = metrics(r)
check(re.search(r'^kswap_update_available\{current="%s",newest="",installed="false",package="%s"\} 0$'
                % (re.escape(NEW2), META), m, re.M), "kswap.prom: up to date", m)

# 6. A busy lock: the waiter names the holder (pid, and its command line from proc/PID/cmdline
# inside the root) and gives up after [apply] lock_timeout; -q leaves the line out.
import fcntl
r = fresh("locked")
conf = os.path.join(work, "lock.conf")
with open(conf, "w") as f:
    f.write("[apply]\nlock_timeout = 2\n")
holder = subprocess.Popen(["sleep", "30"])
os.makedirs(os.path.join(r, f"proc/{holder.pid}"), exist_ok=True)
with open(os.path.join(r, f"proc/{holder.pid}/cmdline"), "wb") as f:
    f.write(b"kswap\0apply\0--yes\0")
lock = open(os.path.join(r, "var/lib/kswap/lock"), "w")
fcntl.flock(lock, fcntl.LOCK_EX)
lock.write(f"{holder.pid}\n")
lock.flush()
p, _ = kswap(r, "--config", conf, "rollback")
lines = [l for l in p.stderr.splitlines() if "waiting for the lock" in l]
check(p.returncode == 1 and len(lines) == 1 and f"held by pid {holder.pid} (kswap apply --yes): 2 s left"
      in lines[0], "a busy lock: one line naming the holder, then exit 1", p.stderr)
p, _ = kswap(r, "-q", "--config", conf, "rollback")
check(p.returncode == 1 and "waiting" not in p.stderr and "error" in p.stderr,
      "-q: no waiting line, the error stays", p.stderr)
lock.close()
holder.kill()

shutil.rmtree(work, ignore_errors=True)
print("update:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
