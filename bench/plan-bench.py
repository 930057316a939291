#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Benchmark (not a test) of `kswap plan`: median wall time and peak RSS over N runs, on the
example fixture root and on the live host, against the shell peer an operator runs by hand
(bench/peers/peer-plan.sh). Usage: bench/plan-bench.py [BUILD_DIR] [RUNS]"""
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "build")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
kswap = os.path.join(build, "cmd", "kswap")
peer = os.path.join(top, "bench", "peers", "peer-plan.sh")
root = os.path.join(top, "test", "roots", "ubuntu-24.04-kvm", "root")


def measure(argv):
    walls, peaks = [], []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
    # Peak RSS through GNU time: a child forked from python would report python's own pages.
    for _ in range(3):
        p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        peaks.append(int(p.stderr.strip().splitlines()[-1]) / 1024)
    return statistics.median(walls) * 1000, max(peaks)


rows = [
    ("kswap plan --json (example root)", [kswap, "--root", root, "plan", "--json"]),
    ("kswap plan --json (live host)", [kswap, "plan", "--json"]),
    ("kswap plan (live host, table)", [kswap, "plan"]),
    ("peer-plan.sh (live host)", ["sh", peer]),
]
results = {}
for name, argv in [("/bin/true (process start floor)", ["/bin/true"])]:
    ms, mib = measure(argv)
    print(f"{name:40} {ms:10.2f} {mib:9.1f}")
print(f"{'command':40} {'median ms':>10} {'peak MiB':>9}   ({runs} runs)")
for name, argv in rows:
    ms, mib = measure(argv)
    results[name] = ms
    print(f"{name:40} {ms:10.2f} {mib:9.1f}")
peer_ms = results["peer-plan.sh (live host)"]
print(f"\nspeed-up against the peer on the live host: "
      f"{peer_ms / results['kswap plan --json (live host)']:.1f}x")
