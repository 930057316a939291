#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernels a swap relies on are kept from `apt autoremove`, proven with the real apt-get and
apt-config against copies of the example root: a distribution kernel update arrives during the
swap (linux-generic now depends on a newer image), which makes the old kernel removable. After
apply, the real `apt-get -s autoremove` (simulation, the root's own dpkg status and apt.conf.d)
keeps the old and the new kernel; plain rollback keeps the guard; rollback --purge removes it
and lists it; a file at that path that kswap did not write is refused before anything changes;
apply --dry-run shows the file. Usage: test-autoremove.py KSWAP"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, OLD, check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-autoremove.")
GUARD = "etc/apt/apt.conf.d/01autoremove-kswap"
UPDATE = "6.8.0-50-generic"  # the distribution's kernel update that arrives during the swap

for tool in ("apt-get", "apt-config"):
    if not shutil.which(tool):
        print(f"{tool} not installed: skip")
        sys.exit(77)


def kswap(root, *args, **kw):
    return kstest.run_kswap(exe, root, *args, **kw)


def fresh(name):
    """The example root with the update installed and every distribution kernel auto-installed
    (as the linux-generic metapackage pulls them in), linux-generic depending on the update."""
    r = os.path.join(work, name)
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    for d in ("var/log", "run", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial",
              "etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d"):
        os.makedirs(os.path.join(r, d), exist_ok=True)
    status = os.path.join(r, "var/lib/dpkg/status")
    with open(status) as f:
        text = f.read()
    text = text.replace("Package: linux-generic\nStatus: install ok installed\nPriority: optional\n"
                        "Architecture: amd64\nVersion: 6.8.0-48.48\n",
                        "Package: linux-generic\nStatus: install ok installed\nPriority: optional\n"
                        f"Architecture: amd64\nVersion: 6.8.0-50.50\nDepends: linux-image-{UPDATE}\n")
    text += (f"\nPackage: linux-image-{UPDATE}\nStatus: install ok installed\nPriority: optional\n"
             "Architecture: amd64\nVersion: 6.8.0-50.50\n")
    with open(status, "w") as f:
        f.write(text)
    with open(os.path.join(r, "var/lib/apt/extended_states"), "w") as f:
        for rel in (OLD, "6.8.0-45-generic", UPDATE):
            f.write(f"Package: linux-image-{rel}\nArchitecture: amd64\nAuto-Installed: 1\n\n")
    # apt reads this root only: its status, its apt.conf.d, no sources, no lock.
    with open(os.path.join(r, "apt.conf"), "w") as f:
        f.write(f'Dir "{r}/";\nDir::State::status "{status}";\nDir::Etc "{r}/etc/apt/";\n'
                'Dir::Etc::sourcelist "/dev/null";\nAPT::Architecture "amd64";\n'
                'Debug::NoLocking "1";\n')
    return r


def autoremoved(root):
    """What the real apt-get -s autoremove would remove in root: package names."""
    p = subprocess.run(["apt-get", "-s", "autoremove"], capture_output=True, text=True,
                       env=dict(os.environ, APT_CONFIG=os.path.join(root, "apt.conf")))
    if p.returncode != 0:
        return None, p.stdout + p.stderr
    return sorted(re.findall(r"^Remv (\S+)", p.stdout, re.M)), p.stdout + p.stderr


deb = os.path.join(work, "xanmod.deb")
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                "builtin"], check=True, capture_output=True)
old_pkg, new_pkg = f"linux-image-{OLD}", f"linux-image-{NEW}"

# 1. Without kswap the update makes the old kernel removable: the case the guard exists for.
r = fresh("swap")
gone, out = autoremoved(r)
check(gone is not None and old_pkg in gone, f"before apply apt autoremove would remove {OLD}", out)

# 2. apply keeps both kernels: the real apt-config reads the patterns, apt-get keeps them.
p, d = kswap(r, "--json", "apply", "--deb", deb, "--yes", timeout=300)
check(p.returncode == 0, "apply arms the trial", p.stderr[-1500:])
check(os.path.isfile(os.path.join(r, GUARD)), f"apply wrote /{GUARD}")
cfg = subprocess.run(["apt-config", "dump", "APT::NeverAutoRemove"], capture_output=True,
                     text=True, env=dict(os.environ, APT_CONFIG=os.path.join(r, "apt.conf")))
for rel in (OLD, NEW):
    pattern = "^linux-.*-" + re.sub(r"([.+])", r"\\\1", rel) + "$"
    check(f'"{pattern}"' in cfg.stdout, f"apt-config reads the pattern {pattern}", cfg.stdout)
gone, out = autoremoved(r)
check(gone is not None and old_pkg not in gone and new_pkg not in gone,
      f"after apply apt autoremove keeps {OLD} and {NEW}", out)
check(gone is not None and "linux-image-6.8.0-45-generic" in gone,
      "... and still removes a kernel the swap does not need (6.8.0-45)", out)
check("kept from apt autoremove" in p.stderr, "apply says so", p.stderr[-1500:])

# 3. A second apply of the same swap (resumed or armed already) leaves the guard as it is.
before = open(os.path.join(r, GUARD)).read()
kswap(r, "apply", "--deb", deb, "--yes", timeout=300)
check(open(os.path.join(r, GUARD)).read() == before, "a second apply leaves the guard as it was")

# 4. Plain rollback keeps the guard (the new kernel stays installed); --purge removes it.
p, _ = kswap(r, "rollback")
check(p.returncode == 0 and os.path.isfile(os.path.join(r, GUARD)),
      "rollback without --purge keeps the guard", p.stderr[-800:])
p, d = kswap(r, "--json", "rollback", "--purge", timeout=300)
removed = [(x.get("kind"), x.get("path") or x.get("name")) for x in (d or {}).get("removed", [])]
check(p.returncode == 0 and not os.path.exists(os.path.join(r, GUARD)),
      "rollback --purge removes the guard", p.stderr[-800:])
check(("autoremove-guard", GUARD) in removed, "... and lists it in removed", removed)
gone, out = autoremoved(r)
check(gone is not None and old_pkg in gone, f"after the purge apt autoremove may remove {OLD} again",
      out)

# 5. A file at the guard's path that kswap did not write: refused before anything changes.
r2 = fresh("foreign")
foreign = "// the operator's own\nAPT::NeverAutoRemove { \"^foo$\"; };\n"
with open(os.path.join(r2, GUARD), "w") as f:
    f.write(foreign)
env0 = open(os.path.join(r2, "boot/grub/grubenv"), "rb").read()
p, _ = kswap(r2, "apply", "--deb", deb, "--yes", timeout=300)
check(p.returncode != 0 and "kswap did not write it" in p.stderr, "a foreign file is refused",
      p.stderr[-800:])
check(open(os.path.join(r2, GUARD)).read() == foreign and
      open(os.path.join(r2, "boot/grub/grubenv"), "rb").read() == env0,
      "... left as it was, GRUB untouched")
fake_apt = os.path.join(r2, "var/log/fake-apt.log")
check(not os.path.exists(fake_apt) or os.path.getsize(fake_apt) == 0, "... and apt never ran")

# 6. apply --dry-run shows the guard it would write, and writes none.
r3 = fresh("dry")
p, d = kswap(r3, "--json", "apply", "--deb", deb, "--dry-run", timeout=300)
files = [f for f in (d or {}).get("dry_run", {}).get("files", []) if GUARD in f.get("path", "")]
check(p.returncode == 0 and files and OLD.replace(".", "\\.") in files[0].get("content", ""),
      "apply --dry-run shows the guard with the old kernel", (p.stderr[-800:], files))
check(not os.path.exists(os.path.join(r3, GUARD)), "... and writes none")

shutil.rmtree(work, ignore_errors=True)
print(f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
