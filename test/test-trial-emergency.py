#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The emergency-mode trial at the unit level, proved with systemd's own code: the generator's
output (checks/kswap-trial-generator, run as PID 1 runs it, with systemd.unit=emergency.target
and kswap.trial= on the command line) is placed into a root that holds this machine's own
systemd units, and systemd-analyze verify --root (the manager's loader and transaction
builder; SYSTEMD_LOG_LEVEL=debug prints every job it installs and dumps the unit) shows:
  - the start transactions of emergency.target (what systemd.unit=emergency.target, and
    local-fs.target's OnFailure=, start), rescue.target and sysinit.target hold a start job of
    kswap-trial-deadline.service, and those of emergency.target and rescue.target hold
    emergency.service / rescue.service, the units that run sulogin;
  - the deadline unit's ordering and requirement closure (After=, Requires=, BindsTo=,
    Requisite=, followed unit by unit through systemd's own dumps) holds no unit that runs
    sulogin or reads a terminal, so nothing that waits for input stands before the deadline;
  - the deadline unit keeps IgnoreOnIsolate=yes (isolating emergency.target does not stop it),
    DefaultDependencies=no, FailureAction=reboot-force, StandardInput null;
  - the generator's output does not depend on systemd.unit= (the same files with and without);
  - issue 30, item 5: kswap-trial-return.service is in the emergency and rescue transactions
    only, after the stage marks, with nothing before it that reads a terminal, and reboots by
    force (SuccessAction= and FailureAction=reboot-force) after its mark and a journal flush;
  - with ACCEPT_UNIT (the built kswap-accept.service) enabled beside a oneshot that never ends
    and is ordered before multi-user.target (issue 12 (b), a start job that never ends): the
    multi-user transaction starts both, and accept's ordering closure holds the stuck job, so
    accept cannot judge (and pin) a boot whose start jobs never end;
  - a reboot that hangs (issue 12, item 2): the shutdown transaction stops what conflicts with
    shutdown.target (every unit with default dependencies, kswap-accept.service among them) and
    what a stop propagates to (Requires=, BindsTo=, PartOf=, PropagatesStopTo=); the deadline
    unit has none of those edges, except Requires= on perpetual units (system.slice), so it
    stays active through the shutdown, its RuntimeMaxSec= running in PID 1's loop, until the
    deadline forces the reboot (FailureAction=reboot-force sets PID 1's objective directly,
    src/core/emergency-action.c; only after that does systemd-shutdown's final kill end it).
    accept's health-failed verdict, the one reboot kswap asks for on the trial boot, exits 3,
    which is not a success status of kswap-accept.service: its ExecStartPost= that stops the
    deadline does not run. The old kernel's reboot (apply --reboot) is covered by
    reboot.target's own JobTimeoutSec=30min / JobTimeoutAction=reboot-force on this machine.
    The check is run on a deadline unit with default dependencies too, and must refuse it.
The generator's normal directory is not searched under --root (systemd-analyze fills a
temporary one with this machine's own generators), so its output goes into the root's
/run/systemd/system, where .wants/ links and units mean the same.
usage: test-trial-emergency.py GENERATOR [ACCEPT_UNIT] (exit 77 without systemd-analyze or systemd's units)
"""
import os, re, shutil, subprocess, sys, tempfile, time

GEN = sys.argv[1]
ACCEPT_UNIT = sys.argv[2] if len(sys.argv) > 2 else None
checks = failures = 0


def check(cond, name, detail=""):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL {name}" + (f"\n     {detail}" if detail else ""))
    else:
        print(f"ok   {name}")


analyze = shutil.which("systemd-analyze")
units_dir = next((d for d in ("/usr/lib/systemd/system", "/lib/systemd/system")
                  if os.path.exists(os.path.join(d, "emergency.service"))), None)
if not analyze or not units_dir:
    print("skip: needs systemd-analyze and systemd's units (emergency.service)")
    sys.exit(77)

CMDLINE = ("BOOT_IMAGE=/boot/vmlinuz-6.12.30-x64v3-xanmod1 root=/dev/vda1 ro panic=10 "
           "systemd.unit=emergency.target kswap.trial=0123abcdef01 kswap.deadline=900 oops=panic "
           "softlockup_panic=1 nmi_watchdog=panic modprobe.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci "
           "systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60")


def generate(out, cmdline):
    """The generator as on the trial boot: the journal says this trial is armed."""
    os.makedirs(out)
    groot = out + "-root"
    os.makedirs(os.path.join(groot, "var/lib/kswap"))
    with open(os.path.join(groot, "var/lib/kswap/state.json"), "w") as f:
        f.write('{\n  "version": 1,\n  "state": "armed",\n'
                '  "armed_boot_id": "0123abcd-ef01-4a00-8b00-00000000c0de",\n'
                '  "armed_btime": 1700000000\n}\n')
    env = dict(os.environ, SYSTEMD_PROC_CMDLINE=cmdline, KSWAP_GENERATOR_RUN=out + "-run",
               KSWAP_GENERATOR_ROOT=groot)
    p = subprocess.run(["sh", GEN, out, out + "-early", out + "-late"], env=env,
                       capture_output=True, text=True)
    check(p.returncode == 0, "generator exits 0", p.stderr)
    return sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)


def verify(unit):
    """systemd-analyze verify --root at debug level: (jobs installed, {unit: dump block})."""
    env = dict(os.environ, SYSTEMD_LOG_LEVEL="debug", SYSTEMD_LOG_COLOR="0")
    p = subprocess.run([analyze, "verify", "--root=" + root, "--man=no", "--generators=no", unit],
                       env=env, capture_output=True, text=True, timeout=300)
    text = p.stdout + p.stderr
    jobs = set(re.findall(r"Installed new job (\S+)/start as \d+", text))
    blocks, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^\t-> Unit (\S+):$", line)
        if m:
            cur = m.group(1)
            blocks[cur] = []
        elif cur and line.startswith("\t\t"):
            blocks[cur].append(line.strip())
        elif cur:
            cur = None
    return p.returncode, jobs, blocks, text


def deps(block, *kinds):
    return {m.group(2) for l in block for m in [re.match(r"^(\w+): (\S+) \(", l)] if m and m.group(1) in kinds}


def closure(blocks, start, *kinds):
    """Every unit reachable from start through the given dependency kinds, with the block
    systemd printed for it (verify() again for a unit the first transaction did not show)."""
    seen, todo = {}, [start]
    while todo:
        u = todo.pop()
        if u in seen:
            continue
        b = blocks.get(u)
        if b is None:
            _, _, bl, _ = verify(u)
            b = bl.get(u, [])
        seen[u] = b
        todo += sorted(deps(b, *kinds) - set(seen))
    return seen


work = tempfile.mkdtemp(prefix="kswap-emergency-")
root = os.path.join(work, "root")
t0 = time.monotonic()
try:
    os.makedirs(os.path.join(root, "usr/lib/systemd"))
    shutil.copytree(units_dir, os.path.join(root, "usr/lib/systemd/system"), symlinks=True)
    os.makedirs(os.path.join(root, "etc/systemd/system"))
    files = generate(os.path.join(work, "gen"), CMDLINE)
    plain = generate(os.path.join(work, "gen-plain"), CMDLINE.replace(" systemd.unit=emergency.target", ""))
    check(files == plain and "emergency.target.wants/kswap-trial-deadline.service" in files,
          "the generator's output is the same with systemd.unit=emergency.target", (files, plain))
    shutil.copytree(os.path.join(work, "gen"), os.path.join(root, "run/systemd/system"), symlinks=True)

    sulogin_units = set()
    for target, shell in (("emergency.target", "emergency.service"), ("rescue.target", "rescue.service"),
                          ("sysinit.target", None)):
        rc, jobs, blocks, text = verify(target)
        check(rc == 0, f"systemd-analyze verify {target}: exit 0", text[-1500:])
        check("kswap-trial-deadline.service" in jobs,
              f"{target}: its start transaction starts kswap-trial-deadline.service", sorted(jobs))
        if shell:
            check(shell in jobs, f"{target}: ... beside {shell} (sulogin)", sorted(jobs))
            rc, _, b, text = verify(shell)
            check(any("sulogin" in l for l in b.get(shell, [])),
                  f"{shell} runs sulogin on this machine (what the deadline must not wait for)",
                  "\n".join(b.get(shell, []))[:1500])
            sulogin_units.add(shell)

    rc, jobs, blocks, text = verify("kswap-trial-deadline.service")
    dl = blocks.get("kswap-trial-deadline.service", [])
    for want in ("IgnoreOnIsolate: yes", "DefaultDependencies: no", "Failure Action: reboot-force",
                 "StandardInput: null"):
        check(want in dl, f"deadline unit as systemd loaded it: {want}", "\n".join(dl)[:2000])
    check(any(re.match(r"^RuntimeMaxSec: \d", l) for l in dl), "deadline unit: RuntimeMaxSec set",
          [l for l in dl if l.startswith("RuntimeMaxSec")])

    # Issue 30, item 5: a trial in emergency or rescue mode returns at once. The return unit
    # is in the emergency and rescue transactions only (not in a boot that reaches sysinit and
    # multi-user), runs after the stage's mark, waits for nothing that reads a terminal, and
    # reboots by force whether it succeeds or fails.
    for target in ("emergency.target", "rescue.target", "sysinit.target", "multi-user.target"):
        rc, jobs, blocks, text = verify(target)
        want = target in ("emergency.target", "rescue.target")
        check(("kswap-trial-return.service" in jobs) == want,
              f"{target}: its start transaction {'starts' if want else 'does not start'} "
              "kswap-trial-return.service", sorted(j for j in jobs if "kswap" in j))
    rc, jobs, blocks, text = verify("kswap-trial-return.service")
    ret = blocks.get("kswap-trial-return.service", [])
    for want in ("IgnoreOnIsolate: yes", "DefaultDependencies: no", "Success Action: reboot-force",
                 "Failure Action: reboot-force", "StandardInput: null"):
        check(want in ret, f"return unit as systemd loaded it: {want}", "\n".join(ret)[:2000])
    after = deps(ret, "After")
    check({"kswap-trial-stage@emergency.service", "kswap-trial-stage@rescue.service"} <= after,
          "return unit: after the stage marks (emergency, rescue)", sorted(after))
    rwaits = closure(blocks, "kswap-trial-return.service", "After", "Requires", "BindsTo",
                     "Requisite")
    bad = {u for u, b in rwaits.items() if u in sulogin_units or any(
        "sulogin" in l or re.match(r"^StandardInput: tty", l) for l in b)}
    check(not bad and not ({"emergency.service", "rescue.service", "emergency.target",
                            "rescue.target"} & set(rwaits)),
          f"nothing in the return unit's ordering closure waits for input or for the mode's "
          f"target ({sorted(rwaits)})", sorted(bad))
    rtext = open(os.path.join(root, "run/systemd/system/kswap-trial-return.service")).read()
    execs = [l.split("=", 1)[1] for l in rtext.splitlines() if l.startswith("ExecStart=")]
    check(execs and execs[0].endswith("kswap-trial-mark returned") and
          any("journalctl --flush" in e for e in execs[1:]) and
          re.search(r"^ConditionPathExists=!/run/kswap/trial-judged$", rtext, re.M),
          "return unit: marks 'returned' first, then flushes the journal; not once the trial is "
          "judged", execs)

    # The closure of what the deadline's start job waits for or needs, unit by unit.
    waits = closure(blocks, "kswap-trial-deadline.service", "After", "Requires", "BindsTo",
                    "Requisite")
    seen = set(waits)
    bad = {u for u, b in waits.items() if u in sulogin_units or any(
        "sulogin" in l or re.match(r"^StandardInput: tty", l) for l in b)}
    check(not bad and len(seen) >= 2,
          f"nothing in the deadline's ordering and requirement closure waits for input ({sorted(seen)})",
          sorted(bad))
    check(not ({"emergency.service", "rescue.service", "emergency.target", "rescue.target",
                "local-fs.target", "sysinit.target", "basic.target"} & seen),
          "the deadline is ordered after no target or shell of the emergency path", sorted(seen))

    if ACCEPT_UNIT:
        # Issue 12 (b): a start job that never ends, before multi-user.target, as a node's own
        # unit would be; kswap-accept.service enabled as its [Install] says.
        etc = os.path.join(root, "etc/systemd/system")
        shutil.copy(ACCEPT_UNIT, os.path.join(etc, "kswap-accept.service"))
        with open(os.path.join(etc, "kswap-test-stuck.service"), "w") as f:
            f.write("[Unit]\nDescription=a start job that never ends\nBefore=multi-user.target\n"
                    "[Service]\nType=oneshot\nExecStart=/bin/sleep infinity\n"
                    "TimeoutStartSec=infinity\n")
        os.makedirs(os.path.join(etc, "multi-user.target.wants"), exist_ok=True)
        for u in ("kswap-accept.service", "kswap-test-stuck.service"):
            os.symlink("../" + u, os.path.join(etc, "multi-user.target.wants", u))
        rc, jobs, blocks, text = verify("multi-user.target")
        check({"kswap-accept.service", "kswap-test-stuck.service"} <= jobs,
              "multi-user.target's start transaction starts kswap-accept and the stuck job",
              sorted(jobs))
        # only what orders after (what accept's start job waits for)
        seen = set(closure(blocks, "kswap-accept.service", "After"))
        check("kswap-test-stuck.service" in seen and "multi-user.target" in seen,
              "kswap-accept.service is ordered after the stuck start job (through "
              "multi-user.target): no verdict while a start job never ends",
              sorted(seen)[:40])

    # A reboot that hangs on the trial boot: nothing of the shutdown stops the deadline.
    STOPPING = ("Conflicts", "ConflictedBy", "Requires", "BindsTo", "PartOf", "Requisite",
                "StopPropagatedFrom")

    def stopped_by_shutdown(unit):
        """Edges through which the shutdown transaction would stop unit: conflicts, and the
        stop-propagating dependencies on a unit that is not perpetual."""
        rc, _, b, text = verify(unit)
        found = []
        for kind, other in (m.groups() for l in b.get(unit, [])
                            for m in [re.match(r"^(\w+): (\S+) \(", l)] if m):
            if kind not in STOPPING:
                continue
            if kind in ("Conflicts", "ConflictedBy"):
                found.append(f"{kind}: {other}")
                continue
            _, _, ob, _ = verify(other)
            if "Perpetual: yes" not in ob.get(other, []):
                found.append(f"{kind}: {other} (not perpetual)")
        return found, b.get(unit, [])

    edges, dl = stopped_by_shutdown("kswap-trial-deadline.service")
    check(not edges and any(l.startswith("Requires: system.slice") for l in dl),
          "the deadline unit has no edge the shutdown transaction stops it through (its only "
          "requirement, system.slice, is perpetual)", edges)
    if ACCEPT_UNIT:
        edges, _ = stopped_by_shutdown("kswap-accept.service")
        check("Conflicts: shutdown.target" in edges,
              "control: kswap-accept.service conflicts with shutdown.target (the check sees the "
              "edge it looks for)", edges)
        unit = open(ACCEPT_UNIT).read()
        ok_codes = [w for l in unit.splitlines() if l.startswith("SuccessExitStatus=")
                    for w in l.split("=", 1)[1].split()]
        check(ok_codes == ["4"] and "ExecStartPost=-/bin/systemctl stop --no-block "
              "kswap-trial-deadline.service" in unit,
              "kswap-accept.service: exit 3 (health-failed, accept's reboot) is a failure, so "
              "its ExecStartPost= that stops the deadline does not run", ok_codes)
    # The same check on a deadline unit with default dependencies: it must refuse it.
    mutated = os.path.join(root, "run/systemd/system/kswap-trial-deadline.service")
    text = open(mutated).read()
    with open(mutated, "w") as f:
        f.write(text.replace("DefaultDependencies=no\n", ""))
    edges, _ = stopped_by_shutdown("kswap-trial-deadline.service")
    check("Conflicts: shutdown.target" in edges,
          "control: with default dependencies the deadline would be stopped by the shutdown "
          "(Conflicts=shutdown.target)", edges)
    with open(mutated, "w") as f:
        f.write(text)
    rc, _, b, _ = verify("reboot.target")
    rb = b.get("reboot.target", [])
    check("Job Timeout: 30min" in rb and "Job Timeout Action: reboot-force" in rb,
          "reboot.target on this machine: a reboot whose jobs hang is forced after 30 min "
          "(the old kernel's reboot, apply --reboot)", [l for l in rb if l.startswith("Job")])
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"{checks} checks, {failures} failed ({time.monotonic() - t0:.1f} s)")
sys.exit(1 if failures else 0)
