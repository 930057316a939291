#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Live checks on the machine running the tests (suite 'live'):
1. test/capture-root.sh copies what kswap reads into a fixture root; `plan --json` on that root
   must equal `plan --json` on the live machine, except what only the live host can tell
   (CPUID for the level and the hypervisor, free space measured on another filesystem).
2. The level kswap reports on the live host equals ld.so's, and its virtualization word equals
   systemd-detect-virt's (reference tools kswap itself never runs)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

exe = sys.argv[1]
src = os.environ.get("KS_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


def plan(*args):
    p = subprocess.run([exe, *args, "plan", "--json"], capture_output=True, text=True)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        print(p.stdout, p.stderr)
        raise


def comparable(doc):
    doc = json.loads(json.dumps(doc))
    for key in ("x86_64_level_source", "virt_evidence"):
        doc["host"].pop(key, None)
    doc["boot"].pop("free_bytes", None)
    for f in doc["findings"]:
        # The evidence differs (the live host's unit files against the captured root's), not the finding.
        if f["id"] in ("boot.space", "virt.not-kvm", "virt.container", "accept.unit-disabled"):
            f["message"] = re.sub(r"\(.*\)|\d+ MiB", "…", f["message"])
    return doc


if len(sys.argv) > 2 and sys.argv[2] == "--fixtures":
    # capture-root.sh on fixture roots (realistic sysfs chains, images, GRUB files): the captured
    # copy must give the same plan as the root it was captured from.
    roots = os.path.join(src, "test", "roots")
    for case in ("ubuntu-24.04-kvm", "boot-lvm", "boot-btrfs", "secureboot-on", "bbr-cubic-live", "lxc"):
        r = os.path.join(roots, case, "root")
        want_rc, want = plan("--root", r)
        with tempfile.TemporaryDirectory() as d:
            cap = subprocess.run(["bash", os.path.join(src, "test", "capture-root.sh"), d],
                                 capture_output=True, text=True,
                                 env=dict(os.environ, KSWAP_CAPTURE_SOURCE=r))
            rc, got = plan("--root", d)
        check(cap.returncode == 0 and rc == want_rc and comparable(got) == comparable(want),
              f"capture of fixture root {case} plans the same")
        if comparable(got) != comparable(want):
            print("  want:", json.dumps(comparable(want))[:3000])
            print("  got: ", json.dumps(comparable(got))[:3000])
    sys.exit(1 if failed else 0)

live_rc, live = plan()
with tempfile.TemporaryDirectory() as d:
    cap = subprocess.run(["bash", os.path.join(src, "test", "capture-root.sh"), d],
                         capture_output=True, text=True)
    check(cap.returncode == 0, "capture-root.sh runs: " + cap.stderr.strip()[-200:])
    rc, captured = plan("--root", d)
a, b = comparable(live), comparable(captured)


def cpuinfo_level():
    """The x86-64 level /proc/cpuinfo's flags alone give (psABI lists, as the peer script)."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    lists = ["lm cmov cx8 fpu fxsr mmx syscall sse2",
             "cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3",
             "avx avx2 bmi1 bmi2 f16c fma abm movbe xsave",
             "avx512f avx512bw avx512cd avx512dq avx512vl"]
    level = 0
    for words in lists:
        if not set(words.split()) <= flags:
            break
        level += 1
    return level


# A captured root has only /proc/cpuinfo; the live host also asks CPUID, which can know more
# (a hypervisor may hide a flag such as abm from cpuinfo). Then the captured level must be what
# cpuinfo's flags give, and the rest is compared with the live level put in its place.
la, lb = a["host"]["x86_64_level"], b["host"]["x86_64_level"]
if la != lb and live["host"].get("x86_64_level_source") == "cpuid":
    check(lb == cpuinfo_level(), f"captured level v{lb} equals /proc/cpuinfo's flags (live CPUID: v{la})")
    for doc in (a, b):
        doc["host"].pop("x86_64_level")
        doc["target"].pop("package")
        doc["findings"] = [f for f in doc["findings"] if f["id"] != "cpu.level"]
check(rc == live_rc, f"same exit code live and captured ({live_rc} vs {rc})")
for section in ("verdict", "host", "boot", "target", "grub", "bbr", "findings"):
    same = a.get(section) == b.get(section)
    check(same, f"plan --json '{section}' equal on the live machine and its captured root")
    if not same:
        print("  live:    ", json.dumps(a.get(section))[:2000])
        print("  captured:", json.dumps(b.get(section))[:2000])

ldso = "/lib64/ld-linux-x86-64.so.2"
if os.path.exists(ldso):
    out = subprocess.run([ldso, "--help"], capture_output=True, text=True).stdout
    levels = [int(m) for m in re.findall(r"x86-64-v(\d) \(supported", out)]
    ref = max(levels) if levels else 1
    check(live["host"]["x86_64_level"] == ref,
          f"x86-64 level {live['host']['x86_64_level']} equals ld.so's v{ref}")
else:
    print("skip: no", ldso)
sdv = shutil.which("systemd-detect-virt")
if sdv:
    word = subprocess.run([sdv], capture_output=True, text=True).stdout.strip()
    check(live["host"]["virt"] == word,
          f"virt '{live['host']['virt']}' equals systemd-detect-virt's '{word}'")
else:
    print("skip: no systemd-detect-virt")
print("live:", "ok" if not failed else f"{failed} failed")
sys.exit(1 if failed else 0)
