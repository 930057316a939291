#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The swap history (var/lib/kswap/history.json) and `kswap status --history`: apply, accept,
pin and rollback on copies of a fixture root with the fakes first on PATH, as test-apply.py
runs them. Usage: test-history.py KSWAP"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import kstest
from kstest import NEW, NEW_PATH, OLD, OLD_PATH, check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-history.")
# Who asked comes from the environment: none of the caller's own may leak into the records.
CLEAN = {"SUDO_USER": "", "INVOCATION_ID": ""}


def kswap(root, *args, **kw):
    return kstest.run_kswap(exe, root, *args, **{**CLEAN, **kw})


def fresh_root(name):
    r = os.path.join(work, name)
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    return r


def boot_into(root, release):
    with open(os.path.join(root, "proc/sys/kernel/osrelease"), "w") as f:
        f.write(release + "\n")
    with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w") as f:
        f.write("%08x-0000-4000-8000-000000000000\n" % int(time.time() * 1000 % 2**32))


def history_file(root):
    with open(os.path.join(root, "var/lib/kswap/history.json")) as f:
        return json.load(f)


def history(root):
    p, d = kswap(root, "--json", "status", "--history")
    check(p.returncode == 0 and d is not None, "status --history --json: exit 0, one document",
          p.stderr + p.stdout)
    return (d or {}).get("history") or []


deb = os.path.join(work, "xanmod.deb")
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                "builtin", "--compress", "zst"], check=True, capture_output=True)

# 1. accept from kswap-accept.service pins: one record, by the unit, with both id paths.
r = fresh_root("accepted")
os.makedirs(os.path.join(r, "proc/self"), exist_ok=True)
with open(os.path.join(r, "proc/self/cgroup"), "w") as f:
    f.write("0::/system.slice/kswap-accept.service\n")
p, _ = kswap(r, "apply", "--deb", deb, "--yes")
check(p.returncode == 0, "apply arms", p.stderr)
check(not os.path.exists(os.path.join(r, "var/lib/kswap/history.json")),
      "an armed swap has not ended: no history yet")
boot_into(r, NEW)
p, d = kswap(r, "--json", "accept", INVOCATION_ID="0123456789abcdef0123456789abcdef")
check(p.returncode == 0 and d and d.get("pinned"), "accept judges and pins", p.stderr)
h = history(r)
check(len(h) == 1, "one swap in the history", h)
if h:
    x = h[0]
    check(x["id"] == 1 and x["outcome"] == "pinned" and x["by"] == "kswap-accept.service",
          "pinned, asked by kswap-accept.service (INVOCATION_ID and the cgroup)", x)
    check(x["from"] == {"release": OLD, "id_path": OLD_PATH} and
          x["to"] == {"release": NEW, "id_path": NEW_PATH},
          "from and to: release and GRUB id path", x)
    check(x["reason"] is None and x["version"] and x["started"] <= x["ended"],
          "no reason, kswap's version, started before ended", x)
p, _ = kswap(r, "status", "--history")
lines = p.stdout.splitlines()
check(p.returncode == 0 and len(lines) == 2 and lines[0].split()[:4] == ["ID", "STARTED", "ENDED", "OUTCOME"]
      and f"{OLD} -> {NEW}" in lines[1] and "pinned" in lines[1]
      and lines[1].endswith("kswap-accept.service"), "the table: a header and the swap", p.stdout)

# 2. two swaps rolled back by sudo users: newest first, a resumed or re-noted swap once. The
# second starts in the same second as the first (its journal's 'created', 1 s resolution, is
# set to the first's, as on a fast machine): a swap is known by its swap_id, not by that stamp.
r = fresh_root("rolled")
journal_path = os.path.join(r, "var/lib/kswap/state.json")
first_created = None
for n, user in ((1, "alice"), (2, "bob")):
    p, _ = kswap(r, "apply", "--deb", deb, "--yes", SUDO_USER=user)
    check(p.returncode == 0, f"apply {n}", p.stderr)
    with open(journal_path) as f:
        j = json.load(f)
    if first_created is None:
        first_created = j["created"]
    else:
        j["created"] = first_created
        with open(journal_path, "w") as f:
            json.dump(j, f)
    p, d = kswap(r, "--json", "rollback", SUDO_USER=user)
    check(p.returncode == 0 and d and d.get("state") == "rolled-back", f"rollback {n}", p.stderr)
    p, _ = kswap(r, "rollback", SUDO_USER="carol")
h = history(r)
check([(x["id"], x["outcome"], x["by"]) for x in h] == [(2, "rolled-back", "bob"), (1, "rolled-back", "alice")],
      "two records, newest first, though both started in the same second; a second rollback of "
      "the same swap adds none", h)
check(len(h) == 2 and h[0]["started"] == h[1]["started"] and
      all(len(x.get("swap_id") or "") == 32 for x in h) and h[0]["swap_id"] != h[1]["swap_id"],
      "each record has its swap's own swap_id (32 hex digits)", h)
check(history_file(r)["version"] == 1 and [x["id"] for x in history_file(r)["swaps"]] == [1, 2],
      "the file keeps them oldest first under 'swaps'")

# 3. a damaged history never stops a swap: moved aside, a new one started, a warning.
r = fresh_root("damaged")
os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
junk = '{"version": 1, "swaps": [{"id": "one"}]}\n'
with open(os.path.join(r, "var/lib/kswap/history.json"), "w") as f:
    f.write(junk)
p, d = kswap(r, "--json", "status", "--history")
check(p.returncode == 1 and d and d.get("state") == "error" and d.get("history") is None and
      "history.json" in (d.get("error") or ""), "status --history on a damaged file: exit 1, named",
      p.stdout + p.stderr)
p, _ = kswap(r, "apply", "--deb", deb, "--yes")
check(p.returncode == 0, "apply with a damaged history", p.stderr)
p, d = kswap(r, "--json", "rollback")
ids = [f["id"] for f in (d or {}).get("findings", [])]
check(p.returncode == 0 and "history.damaged" in ids, "rollback: exit 0, finding history.damaged",
      p.stdout + p.stderr)
check(open(os.path.join(r, "var/lib/kswap/history.json.damaged")).read() == junk,
      "the damaged file is kept aside, byte for byte")
check([x["outcome"] for x in history(r)] == ["rolled-back"], "a new history holds the swap")

# 4. apply over a finished journal that is not in the history (an older kswap wrote it).
r = fresh_root("replaced")
p, _ = kswap(r, "apply", "--deb", deb, "--yes")
p, _ = kswap(r, "rollback")
os.unlink(os.path.join(r, "var/lib/kswap/history.json"))
p, _ = kswap(r, "apply", "--deb", deb, "--yes", SUDO_USER="dave")
check(p.returncode == 0, "a second apply", p.stderr)
h = history(r)
check([(x["outcome"], x["by"]) for x in h] == [("rolled-back", "dave")],
      "the finished swap it replaced went into the history first", h)

# 5. Day two: the pinned XanMod and a newer one of its flavour that apt brought: kswap list
# shows both, plan warns kernel.newer-not-default and targets the newer one, and a plain
# `kswap apply` (the repository path) arms it with the pinned kernel as the old one.
NEW2 = NEW.replace("6.18.45", "6.18.46")
check(NEW2 != NEW, "a newer point release of the same flavour", NEW2)
r = fresh_root("daytwo")
debs = os.path.join(work, "debs")
os.makedirs(debs, exist_ok=True)
meta = "linux-xanmod-lts-x64v3"
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW,
                os.path.join(debs, meta + ".deb"), "--package", meta, "--bbr", "builtin"],
               check=True, capture_output=True)
p, d = kswap(r, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs)
check(p.returncode == 0 and d and d.get("new_kernel") == NEW, "day one: apply from the repository", p.stderr)
boot_into(r, NEW)
p, d = kswap(r, "--json", "pin", "--force")
check(p.returncode == 0 and d and d.get("state") == "pinned", "day one: pinned", p.stderr)
p, d = kswap(r, "--json", "plan")
check(d and not any(f["id"] == "kernel.newer-not-default" for f in d.get("findings", [])),
      "no newer kernel yet: no warning", d and d.get("findings"))
# apt upgrade: the meta package brings NEW2 and its hook regenerates grub.cfg.
debs2 = os.path.join(work, "debs2")
os.makedirs(debs2, exist_ok=True)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW2,
                os.path.join(debs2, meta + ".deb"), "--package", meta, "--bbr", "builtin"],
               check=True, capture_output=True)
for argv in ([os.path.join(kstest.FAKES, "apt-get"), "install", "-y", os.path.join(debs2, meta + ".deb")],
             [os.path.join(kstest.FAKES, "update-grub")]):
    subprocess.run(argv, env=kstest.env(KSWAP_ROOT=r), check=True, capture_output=True)
p, d = kswap(r, "--json", "list")
ks = {k["release"]: k for k in (d or {}).get("kernels", [])}
check(p.returncode == 0 and d and d["default"] == NEW and d["running"] == NEW,
      "list: the pinned kernel is the default and runs", p.stdout + p.stderr)
check(NEW in ks and ks[NEW]["is_default"] and ks[NEW]["is_running"] and ks[NEW]["relied_on"] == "pinned"
      and ks[NEW]["id_path"] == NEW_PATH and not ks[NEW]["on_trial"], "list: NEW default, running, pinned", ks.get(NEW))
check(NEW2 in ks and not ks[NEW2]["is_default"] and ks[NEW2]["relied_on"] is None and
      ks[NEW2]["id_path"] == NEW_PATH.replace(NEW, NEW2), "list: NEW2 with its id path, not the default",
      ks.get(NEW2))
check(OLD in ks and ks[OLD]["relied_on"] is None and ks[OLD]["id_path"] == OLD_PATH,
      "list: the distribution kernel too", ks.get(OLD))
p, _ = kswap(r, "list")
row = [l for l in p.stdout.splitlines() if l.startswith(NEW + " ")]
check(p.returncode == 0 and row and "default,running,pinned" in row[0] and row[0].endswith(NEW_PATH),
      "list's table: roles and id path", p.stdout)
p, d = kswap(r, "--json", "plan")
warn = [f for f in (d or {}).get("findings", []) if f["id"] == "kernel.newer-not-default"]
check(warn and warn[0]["severity"] == "warn" and NEW2 in warn[0]["message"] and NEW in warn[0]["message"]
      and warn[0]["remedy"] == f"kswap --root {r} apply", "plan warns kernel.newer-not-default, the command as it "
      "works when pasted", d and d.get("findings"))
check(d and (d.get("target") or {}).get("release") == NEW2, "plan's target is the newer kernel",
      d and d.get("target"))
p, d = kswap(r, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs2)
check(p.returncode == 0 and d and d.get("state") == "armed" and d.get("old_kernel") == NEW and
      d.get("new_kernel") == NEW2 and d.get("old_path") == NEW_PATH,
      "day two: apply moves from the pinned kernel (old) to the newer one (trial)", p.stderr[-2000:])
p, d = kswap(r, "--json", "list")
ks = {k["release"]: k for k in (d or {}).get("kernels", [])}
check(ks.get(NEW2, {}).get("on_trial") and ks.get(NEW, {}).get("relied_on") == "old",
      "list while armed: NEW2 on trial, NEW the old kernel", ks)
h = history(r)
check([(x["from"]["release"], x["to"]["release"], x["outcome"]) for x in h] == [(OLD, NEW, "pinned")],
      "the history holds day one's swap", h)

shutil.rmtree(work, ignore_errors=True)
print("history:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
