#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Benchmark (not a test) of `kswap plan`: median wall time and peak RSS over N runs, on the
example fixture root and on the live host, against the shell peer an operator runs by hand
(bench/peers/peer-plan.sh). Usage: bench/plan-bench.py [BUILD_DIR] [RUNS]"""
import os
import resource
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


def one(argv):
    """Wall time and CPU time (user + system of the child and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(argv):
    walls, peaks = [], []
    for _ in range(runs):
        walls.append(one(argv)[0])
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

# Side by side in one loop (kswap, the peer, the floor in turn), so that a machine busy with
# other work slows all three alike; wall time and the CPU time the three spent.
pairs = {"kswap": [kswap, "plan", "--json"], "peer": ["sh", peer], "floor": ["/bin/true"]}
walls = {k: [] for k in pairs}
cpus = {k: [] for k in pairs}
for _ in range(runs):
    for k, argv in pairs.items():
        w, c = one(argv)
        walls[k].append(w)
        cpus[k].append(c)
med = {k: statistics.median(v) * 1000 for k, v in walls.items()}
cpu = {k: statistics.median(v) * 1000 for k, v in cpus.items()}
print(f"\nside by side ({runs} rounds), median wall ms: kswap plan {med['kswap']:.1f}, peer "
      f"{med['peer']:.1f}, /bin/true {med['floor']:.1f}; median CPU ms: kswap plan "
      f"{cpu['kswap']:.1f}, peer {cpu['peer']:.1f}, /bin/true {cpu['floor']:.1f}")
print(f"ratio peer / kswap plan: wall {med['peer'] / med['kswap']:.1f}x, CPU "
      f"{cpu['peer'] / max(cpu['kswap'], 0.001):.1f}x; kswap plan / floor: wall "
      f"{med['kswap'] / med['floor']:.1f}x")
