#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kswap tidy (lib/engine/tidy.c) on copies of the example root with the fakes first on PATH:
refused while a swap is not pinned; after the pin it lists, previews (--dry-run changes nothing:
the root hashed before and after) and removes the older distribution kernel and the
distribution's metapackage (a XanMod metapackage is installed), never the running kernel or the
fallback, asks on a terminal, refuses without one and without --yes, and leaves the autoremove
guard keeping exactly the running kernel and the fallback; rollback --purge's list and question.
Usage: test-tidy.py KSWAP"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, OLD, check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-tidy.")
META = "linux-xanmod-lts-x64v3"
OLDER = "6.8.0-45-generic"  # the example root's older distribution kernel
GUARD = "etc/apt/apt.conf.d/01autoremove-kswap"


def kswap(root, *args, **kw):
    return kstest.run_kswap(exe, root, *args, **kw)


def installed(root, pkg):
    with open(os.path.join(root, "var/lib/dpkg/status")) as f:
        return f"Package: {pkg}\n" in f.read()


def tree_hash(root):
    h = hashlib.sha256()
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(d, name)
            h.update(p.encode())
            if not os.path.islink(p):
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


debs = os.path.join(work, "debs")
os.makedirs(debs)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW,
                os.path.join(debs, META + ".deb"), "--package", META, "--bbr", "builtin"],
               check=True, capture_output=True)
root = os.path.join(work, "root")
shutil.copytree(kstest.EXAMPLE_ROOT, root, symlinks=True)

p, d = kswap(root, "--json", "tidy", "--yes")
check(p.returncode == 2 and d and d.get("result") == "refused" and "no swap" in (d.get("error") or ""),
      "no swap: refused, exit 2", p.stderr)
p, d = kswap(root, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs)
check(p.returncode == 0 and d and d.get("state") == "armed", "armed", p.stderr[-1500:])
before = tree_hash(root)
p, d = kswap(root, "--json", "tidy", "--yes")
check(p.returncode == 2 and d and d.get("result") == "refused" and "in flight" in (d.get("error") or "")
      and d.get("remedy") == "kswap status --wait", "a trial in flight: refused", d)
check(tree_hash(root) == before, "refused: nothing changed")
with open(os.path.join(root, "proc/sys/kernel/osrelease"), "w") as f:
    f.write(NEW + "\n")
with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w") as f:
    f.write("0badc0de-0000-4000-8000-000000000000\n")
p, d = kswap(root, "--json", "pin", "--force")
check(p.returncode == 0 and d and d.get("state") == "pinned", "pinned", p.stderr[-1500:])

# The list and the dry run: nothing changes.
before = tree_hash(root)
p, d = kswap(root, "--json", "tidy", "--dry-run")
rm = {(x["release"], tuple(x["packages"])) for x in (d or {}).get("remove", [])}
check(p.returncode == 0 and d and d.get("result") == "dry-run" and d.get("running") == NEW
      and d.get("fallback") == OLD, "dry run: running NEW, fallback OLD", d)
check(rm == {(OLDER, ("linux-image-" + OLDER,)), (None, ("linux-generic",))},
      "dry run: the older kernel and linux-generic, never NEW or OLD", rm)
check(d and d.get("command") == "tidy", "the document says its command", d and d.get("command"))
p, _ = kswap(root, "tidy", "--dry-run")
check(p.returncode == 0 and "would remove " + OLDER in p.stdout and "dry run: nothing changed" in p.stdout,
      "dry run: the table", p.stdout)
check(tree_hash(root) == before, "dry run: the root is byte for byte the same")

# No terminal and no --yes: refused; a terminal that answers no: cancelled.
p, d = kswap(root, "--json", "tidy")
check(p.returncode == 2 and "--yes" in (d or {}).get("error", ""), "no terminal, no --yes: refused", d)
if shutil.which("script"):
    p = subprocess.run(["script", "-qec", f"{exe} --root {root} tidy", "/dev/null"], input="n\n",
                       capture_output=True, text=True, env=kstest.env(), timeout=60)
    check("Proceed? [y/N]" in p.stdout and "cancelled" in p.stdout, "a terminal: asks, no cancels",
          p.stdout[-800:])
check(tree_hash(root) == before, "refused and cancelled: nothing changed")

# Removal: apt-get purge of the list; NEW and OLD stay, the guard keeps exactly them.
p, d = kswap(root, "--json", "tidy", "--yes")
check(p.returncode == 0 and d and d.get("result") == "done"
      and sorted(d.get("removed") or []) == sorted(["linux-image-" + OLDER, "linux-generic"]),
      "tidy --yes: the two removed", p.stderr[-1500:])
check(not installed(root, "linux-image-" + OLDER) and not installed(root, "linux-generic"),
      "dpkg no longer has them")
check(installed(root, "linux-image-" + OLD) and installed(root, META)
      and os.path.exists(os.path.join(root, "boot/vmlinuz-" + NEW))
      and os.path.exists(os.path.join(root, "boot/vmlinuz-" + OLD)), "NEW, OLD and the XanMod meta stay")
with open(os.path.join(root, GUARD)) as f:
    guard = f.read()
pats = [l.strip() for l in guard.splitlines() if l.strip().startswith('"^linux-')]
check(len(pats) == 2 and any(NEW.replace(".", "\\.") in x for x in pats)
      and any(OLD.replace(".", "\\.") in x for x in pats), "the guard keeps exactly NEW and OLD", guard)
p, d = kswap(root, "--json", "tidy", "--yes")
check(p.returncode == 0 and d and d.get("result") == "nothing" and not d.get("remove"),
      "tidy again: nothing to do", d)

# Without a XanMod metapackage the distribution's stays (the node's only kernel updates).
root2 = os.path.join(work, "root2")
shutil.copytree(kstest.EXAMPLE_ROOT, root2, symlinks=True)
p, d = kswap(root2, "--json", "apply", "--deb", os.path.join(debs, META + ".deb"), "--yes")
with open(os.path.join(root2, "proc/sys/kernel/osrelease"), "w") as f:
    f.write(NEW + "\n")
with open(os.path.join(root2, "proc/sys/kernel/random/boot_id"), "w") as f:
    f.write("0badc0de-0000-4000-8000-000000000001\n")
p, d = kswap(root2, "--json", "pin", "--force")
check(p.returncode == 0, "root2: pinned", p.stderr[-800:])
# The kernel's package under its own name: no XanMod metapackage on the node.
st = os.path.join(root2, "var/lib/dpkg/status")
with open(st) as f:
    text = f.read().replace(f"Package: {META}\n", f"Package: linux-image-{NEW}\n")
with open(st, "w") as f:
    f.write(text)
p, d = kswap(root2, "--json", "tidy", "--dry-run")
check(d and d.get("kept_metapackages") == ["linux-generic"] and "no XanMod metapackage" in (d.get("kept_why") or "")
      and all(x["release"] for x in d.get("remove", [])), "no XanMod meta: linux-generic kept", d)

# rollback --purge shows what it will remove; on a terminal it asks (no: nothing changed),
# --yes does not ask, without a terminal it goes on (scripts) with the list on stderr.
root3 = os.path.join(work, "root3")
shutil.copytree(kstest.EXAMPLE_ROOT, root3, symlinks=True)
p, d = kswap(root3, "--json", "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=debs)
check(p.returncode == 0, "root3: armed", p.stderr[-800:])
before = tree_hash(root3)
if shutil.which("script"):
    p = subprocess.run(["script", "-qec", f"{exe} --root {root3} rollback --purge", "/dev/null"],
                       input="n\n", capture_output=True, text=True, env=kstest.env(), timeout=120)
    check("rollback --purge will remove:" in p.stdout and f"package {META}" in p.stdout
          and "/etc/apt/sources.list.d/xanmod.sources" in p.stdout and "Proceed? [y/N]" in p.stdout
          and "cancelled" in p.stdout, "rollback --purge on a terminal: the list, then the question",
          p.stdout[-1500:])
    check(tree_hash(root3) == before, "answered no: nothing changed")
p, _ = kswap(root3, "rollback", "--purge")
check(p.returncode == 0 and "rollback --purge will remove:" in p.stderr and f"package {META}" in p.stderr,
      "without a terminal: the list on stderr, then the purge", p.stderr[-1500:])
check(not installed(root3, META), "... and the package is gone")
p, _ = kswap(root3, "rollback", "--yes")
check(p.returncode == 1 and "'--yes' goes with '--purge'" in p.stderr, "--yes without --purge: usage error",
      p.stderr)

shutil.rmtree(work, ignore_errors=True)
print("tidy:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
