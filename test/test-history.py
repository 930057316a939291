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

# 2. two swaps rolled back by sudo users: newest first, a resumed or re-noted swap once.
r = fresh_root("rolled")
for n, user in ((1, "alice"), (2, "bob")):
    p, _ = kswap(r, "apply", "--deb", deb, "--yes", SUDO_USER=user)
    check(p.returncode == 0, f"apply {n}", p.stderr)
    p, d = kswap(r, "--json", "rollback", SUDO_USER=user)
    check(p.returncode == 0 and d and d.get("state") == "rolled-back", f"rollback {n}", p.stderr)
    p, _ = kswap(r, "rollback", SUDO_USER="carol")
h = history(r)
check([(x["id"], x["outcome"], x["by"]) for x in h] == [(2, "rolled-back", "bob"), (1, "rolled-back", "alice")],
      "two records, newest first; a second rollback of the same swap adds none", h)
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

shutil.rmtree(work, ignore_errors=True)
print("history:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
