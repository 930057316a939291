#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Kills kswap apply with SIGKILL, sent from outside by strace, at every point where it writes,
renames, syncs, removes a file or starts a program (the points are enumerated from an strace
of a clean run, not from hooks inside kswap). After each kill: no torn file (grubenv is an
environment block, the journal parses), the forecast starts the old kernel on every boot except
at most one armed one-shot of the new kernel, and the next `kswap apply` (or `kswap rollback`)
completes. Usage: test-apply-kill.py KSWAP"""
import collections
import concurrent.futures
import json
import random
import os
import shutil
import subprocess
import sys
import tempfile

exe = os.path.abspath(sys.argv[1])
src = os.environ.get("KS_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fakes = os.path.join(src, "test", "fakes")
base_root = os.path.join(src, "test", "roots", "ubuntu-24.04-kvm", "root")
OLD, NEW = "6.8.0-48-generic", "6.18.45-x64v3-xanmod1"
SYSCALLS = ["write", "pwrite64", "rename", "renameat", "renameat2", "fsync", "fdatasync",
            "unlink", "unlinkat", "mkdir", "mkdirat", "fchmod", "ftruncate", "clone", "clone3",
            "vfork", "fork"]

if not shutil.which("strace"):
    print("strace not installed: skip")
    sys.exit(77)
work = tempfile.mkdtemp(prefix="kswap-kill.")
env = dict(os.environ, PATH=fakes + ":" + os.environ["PATH"], NO_COLOR="1")
deb = os.path.join(work, "xanmod.deb")
subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW, deb, "--bbr", "builtin"],
               check=True, capture_output=True)


def fresh(name):
    r = os.path.join(work, name)
    shutil.rmtree(r, ignore_errors=True)
    shutil.copytree(base_root, r, symlinks=True)
    return r


def apply_argv(root):
    return [exe, "--root", root, "apply", "--deb", deb, "--yes"]


# 1. A clean run under strace: which of the interesting calls happen, and how often.
r = fresh("clean")
log = os.path.join(work, "strace.log")
subprocess.run(["strace", "-qq", "-o", log, "-e", "trace=" + ",".join(SYSCALLS)] + apply_argv(r),
               env=env, capture_output=True, check=True)
counts = collections.Counter()
for line in open(log):
    name = line.split("(", 1)[0].strip()
    if name in SYSCALLS:
        counts[name] += 1
points = [(s, n) for s in sorted(counts) for n in range(1, counts[s] + 1)]
# KS_KILL_ONLY="fsync#29,write#21" replays chosen kill points of apply alone (by hand).
only = [w for w in os.environ.get("KS_KILL_ONLY", "").split(",") if w]
if only:
    points = [(s, n) for s, n in points if f"{s}#{n}" in only]
print("kill points from a clean run:", dict(counts), "total", len(points))
# KS_KILL_EVERY=N keeps every Nth point of each kind of call (write, fsync, fchmod, clone,
# mkdir, ...: each atomic file write and each program is the same few calls), from a random
# offset printed for replay (KS_KILL_OFFSET), in apply, pin and rollback alike; the renames,
# where atomic writes commit, stay whole. test/meson.build sets 5 for CI's budget, so five
# runs cover the whole matrix on average; KS_KILL_EVERY=1 runs all of it.
every = max(1, int(os.environ.get("KS_KILL_EVERY", "1")))
offset = int(os.environ.get("KS_KILL_OFFSET", random.randrange(every)))


def sampled(sc, n):
    """The point is kept: every one, or every Nth of its kind (apply's, pin's and rollback's
    alike; the ENOSPC points are apply's kept write and sync points). Renames stay whole: each
    is the moment an atomic write commits."""
    return every == 1 or sc == "renameat" or n % every == offset % every


if every > 1 and not only:
    points = [(s, n) for s, n in points if sampled(s, n)]
    print(f"every {every}th point of each kind but renameat from offset {offset} "
          f"(KS_KILL_EVERY={every} KS_KILL_OFFSET={offset} replays): {len(points)} points")

failed = 0
problems = []
# two points at a time: each waits on its programs more than it computes
JOBS = int(os.environ.get("KS_KILL_JOBS", "2"))


def forecast(root):
    p = subprocess.run([exe, "--root", root, "--json", "status"], capture_output=True, text=True,
                       env=env)
    # status exits per state (kswap(8)): 0 idle or pinned, 4 while armed, 3 after a failed
    # trial; 1 is an error (the journal, grub.cfg or grubenv cannot be read).
    if p.returncode not in (0, 3, 4):
        return None, p.stderr
    d = json.loads(p.stdout)
    return [(b["kernel"], b["one_shot"]) for b in d["grub"]["forecast"]], d


def swap_id(root):
    """The journal's swap_id (None: no journal yet, or one without an id)."""
    try:
        with open(os.path.join(root, "var/lib/kswap/state.json")) as f:
            return json.load(f).get("swap_id")
    except (OSError, ValueError):
        return None


def history_ids(root):
    try:
        with open(os.path.join(root, "var/lib/kswap/history.json")) as f:
            return [x.get("swap_id") for x in json.load(f)["swaps"]]
    except (OSError, ValueError, KeyError):
        return None


def kill_apply(sc, n):
    r = fresh(f"k-{sc}-{n}")
    p = subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e", "trace=" + sc,
                        "-e", f"inject={sc}:signal=KILL:when={n}"] + apply_argv(r),
                       env=env, capture_output=True, text=True)
    what = f"{sc}#{n}"
    bad = []
    if p.returncode != -9 and p.returncode != 137:
        # strace itself reports the tracee's death by signal with exit 128+9
        bad.append(f"not killed (exit {p.returncode})")
    env_path = os.path.join(r, "boot/grub/grubenv")
    if os.path.exists(env_path):
        size = os.path.getsize(env_path)
        lst = subprocess.run(["grub-editenv", env_path, "list"], capture_output=True, text=True)
        if size != 1024 or lst.returncode != 0:
            bad.append(f"grubenv torn ({size} bytes)")
    fc, detail = forecast(r)
    if fc is None:
        bad.append("status fails: " + detail.strip()[:200])
    elif fc != [(OLD, False)] * 3 and fc != [(NEW, True), (OLD, False), (OLD, False)]:
        bad.append(f"forecast {fc}")
    # the next run completes: apply resumes (or says it is armed already) ...
    killed_id = swap_id(r)
    p2 = subprocess.run(apply_argv(r) + ["--json"], capture_output=True, text=True, env=env)
    fc2, _ = forecast(r)
    if p2.returncode != 0 or fc2 != [(NEW, True), (OLD, False), (OLD, False)]:
        bad.append(f"apply after the kill: exit {p2.returncode}, forecast {fc2}: {p2.stderr[-300:]}")
    # ... as the same swap, once the killed one had written its journal (lib/engine/history.h)
    resumed_id = swap_id(r)
    if not resumed_id or (killed_id and resumed_id != killed_id):
        bad.append(f"apply after the kill is another swap: swap_id {killed_id} -> {resumed_id}")
    # ... and rollback brings every boot back to the old kernel
    p3 = subprocess.run([exe, "--root", r, "rollback"], capture_output=True, text=True, env=env)
    fc3, _ = forecast(r)
    if p3.returncode != 0 or fc3 != [(OLD, False)] * 3:
        bad.append(f"rollback after apply: exit {p3.returncode}, forecast {fc3}")
    # one swap, one record in the history
    if history_ids(r) != [resumed_id]:
        bad.append(f"history after rollback: swap ids {history_ids(r)}, wanted [{resumed_id}]")
    # a killed write leaves its temporary file; the next write of that file removes it
    leftovers = [f for d, _, fs in os.walk(r) for f in fs if ".kswap" in f and f.startswith(".#")]
    if leftovers:
        bad.append(f"temporary files left behind after the next runs: {leftovers[:3]}")
    shutil.rmtree(r, ignore_errors=True)
    return f"{what}: " + "; ".join(bad) if bad else None


def run_all(job, items):
    """Runs job(*item) for every item, two at a time (each point has its own root copy); a
    failure is printed as it is found, so a run cut short still shows what it saw."""
    global failed
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        for problem in pool.map(lambda item: job(*item), items):
            if problem:
                failed += 1
                problems.append(problem)
                print("FAIL", problem, flush=True)


run_all(kill_apply, points)

# 2. ENOSPC (a full /boot or /var) at every write and sync point: kswap fails cleanly (exit 1),
# no file is torn, the old kernel keeps booting, and once there is room again apply completes.
enospc = [(sc, n) for sc, n in points if sc in ("write", "pwrite64", "fsync", "fdatasync")]
def enospc_apply(sc, n):
    r = fresh(f"e-{sc}-{n}")
    p = subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e", "trace=" + sc,
                        "-e", f"inject={sc}:error=ENOSPC:when={n}"] + apply_argv(r),
                       env=env, capture_output=True, text=True)
    what = f"ENOSPC at {sc}#{n}"
    bad = []
    if p.returncode not in (0, 1):
        bad.append(f"exit {p.returncode}")
    env_path = os.path.join(r, "boot/grub/grubenv")
    if os.path.exists(env_path) and os.path.getsize(env_path) != 1024:
        bad.append("grubenv torn")
    fc, detail = forecast(r)
    if fc is None:
        bad.append("status fails: " + str(detail).strip()[:200])
    elif fc != [(OLD, False)] * 3 and fc != [(NEW, True), (OLD, False), (OLD, False)]:
        bad.append(f"forecast {fc}")
    if p.returncode == 1 and "No space left" not in p.stderr and "ENOSPC" not in p.stderr:
        # a write to stderr itself may be the one that failed; the journal must say why
        st = subprocess.run([exe, "--root", r, "--json", "status"], capture_output=True, text=True, env=env)
        if "No space left" not in st.stdout and sc != "write":
            bad.append("the error does not say the disk is full: " + p.stderr[-200:])
    p2 = subprocess.run(apply_argv(r), capture_output=True, text=True, env=env)
    fc2, _ = forecast(r)
    if p2.returncode != 0 or fc2 != [(NEW, True), (OLD, False), (OLD, False)]:
        bad.append(f"apply with room again: exit {p2.returncode}, forecast {fc2}: {p2.stderr[-300:]}")
    shutil.rmtree(r, ignore_errors=True)
    return f"{what}: " + "; ".join(bad) if bad else None


run_all(enospc_apply, enospc)

# 3. pin and rollback on a trial kernel, killed at each of their points: every boot starts
# one kernel (old or new, never a one-shot loop or an entry 0 fall-back), and running the same
# command again completes.
def armed_and_booted(name):
    r = fresh(name)
    subprocess.run(apply_argv(r), env=env, capture_output=True, check=True)
    with open(os.path.join(r, "proc/sys/kernel/osrelease"), "w") as f:
        f.write(NEW + "\n")
    with open(os.path.join(r, "proc/sys/kernel/random/boot_id"), "w") as f:
        f.write("0badc0de-0000-4000-8000-000000000000\n")
    return r


def kill_later(cmd, done_fc, sc, n):
    r = armed_and_booted(f"k-{cmd}-{sc}-{n}")
    subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e", "trace=" + sc,
                    "-e", f"inject={sc}:signal=KILL:when={n}"] + later_argv(cmd, r),
                   env=env, capture_output=True)
    bad = []
    fc, detail = forecast(r)
    ok_states = ([(NEW, True), (OLD, False), (OLD, False)], [(OLD, False)] * 3,
                 [(NEW, False)] * 3)
    if fc not in ok_states:
        bad.append(f"forecast {fc}")
    p2 = subprocess.run(later_argv(cmd, r), capture_output=True, text=True, env=env)
    fc2, _ = forecast(r)
    if p2.returncode != 0 or fc2 != done_fc:
        bad.append(f"{cmd} again: exit {p2.returncode}, forecast {fc2}: {p2.stderr[-200:]}")
    shutil.rmtree(r, ignore_errors=True)
    return f"{cmd} killed at {sc}#{n}: " + "; ".join(bad) if bad else None


def later_argv(cmd, r):
    return [exe, "--root", r, cmd] + (["--force"] if cmd == "pin" else [])


later_points = []
for cmd, done_fc in (("pin", [(NEW, False)] * 3), ("rollback", [(OLD, False)] * 3)):
    r = armed_and_booted("c-" + cmd)
    subprocess.run(["strace", "-qq", "-o", log, "-e", "trace=" + ",".join(SYSCALLS)] + later_argv(cmd, r),
                   env=env, capture_output=True, check=True)
    c2 = collections.Counter(l.split("(", 1)[0].strip() for l in open(log)
                             if l.split("(", 1)[0].strip() in SYSCALLS)
    later_points += [(cmd, done_fc, sc, n) for sc in sorted(c2) for n in range(1, c2[sc] + 1)
                     if only or sampled(sc, n)]
later = len(later_points)
run_all(kill_later, later_points)

print(f"pin and rollback killed at {later} points")
print(f"ENOSPC injected at {len(enospc)} write/sync points")
print(f"killed at {len(points)} points ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))});"
      f" {len(points) + len(enospc) + later - failed} of {len(points) + len(enospc) + later} faults recovered,"
      f" {failed} failed")
shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failed else 0)
