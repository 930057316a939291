#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Benchmark (not a test) of the state journal's parser on large valid journals: N steps with
short distinct names, N file changes, N snapshot items, N empty objects under a key kswap does
not read; each in a journal of up to 16 MiB (the most kswap reads). The parser's CPU time is
the measure (the wall time on a shared machine says more about the others). Runs BUILD_DIR/test/journal-parse-bench
(ks_journal_parse) and, end to end, `kswap status --json` on a copy of the example root.
usage: bench/journal-parse.py [BUILD_DIR] [SIZES...]   (default sizes: 20000 40000 80000 525000)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "build")
sizes = [int(a) for a in sys.argv[2:]] or [20000, 40000, 80000, 525000]
bench = os.path.join(build, "test", "journal-parse-bench")
kswap = os.path.join(build, "cmd", "kswap")
example = os.path.join(top, "test", "roots", "ubuntu-24.04-kvm", "root")
LIMIT = 16 << 20


def name(i):
    """Short, distinct: base 36."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        s = digits[i % 36] + s
        i //= 36
        if not i:
            return s


def journal(steps=0, changes=0, items=0, empty=0):
    j = {"version": 1, "state": "failed", "outcome": None, "reason": "bench",
         "steps": [{"name": name(i), "status": "done"} for i in range(steps)],
         "changes": [{"kind": "file", "path": name(i), "existed": False} for i in range(changes)]}
    if items:
        j["running"] = {"kernel": "6.8.0-48-generic", "items": [name(i) for i in range(items)]}
    if empty:
        j["x"] = [{}] * empty  # a key kswap does not read, holding empty objects
    return json.dumps(j, separators=(",", ":"))


def run(argv, timeout):
    t = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"not done after {timeout} s"
    return time.perf_counter() - t, (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]


work = tempfile.mkdtemp(prefix="kswap-journal-bench-")
root = os.path.join(work, "root")
shutil.copytree(example, root, symlinks=True)
os.makedirs(os.path.join(root, "var/lib/kswap"), exist_ok=True)
try:
    for what in ("steps", "changes", "items", "empty"):
        for n in sizes:
            text = journal(**{what: n})
            if len(text) > LIMIT:
                print(f"{what:8} {n:>7}: {len(text)} bytes, over the 16 MiB kswap reads: skipped")
                continue
            f = os.path.join(work, "j.json")
            with open(f, "w") as fh:
                fh.write(text)
            p = subprocess.run([bench, f, "3"], capture_output=True, text=True, timeout=900)
            lines = (p.stdout + p.stderr).strip().splitlines()
            print(f"{what:8} {n:>7}: {len(text):>9} bytes  " + " / ".join(lines))
            shutil.copy(f, os.path.join(root, "var/lib/kswap/state.json"))
            secs, out = run([kswap, "--root", root, "--json", "status"], 300)
            print(f"{'':8} {'':>7}  {'':>9}        kswap --json status: "
                  + (f"{secs:.2f} s wall" if secs else str(out)))
finally:
    shutil.rmtree(work)
