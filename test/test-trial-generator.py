#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""checks/kswap-trial-generator (as built) and checks/kswap-trial-mark, run in temporary folders:
  - without kswap.trial= on the command line (every boot but the trial boot): nothing at all;
  - with it: kswap-trial-deadline.service (no default dependencies, IgnoreOnIsolate=yes,
    FailureAction=reboot-force, RuntimeMaxSec = deadline minus uptime, at least 30 s) pulled in
    by sysinit, emergency and rescue targets; the stage marks; journald Storage=persistent;
  - systemd-analyze verify accepts the units (when systemd-analyze is installed);
  - kswap-trial-mark: nothing without the marker; "deadline" only when the deadline ran out;
  - kswap-trial-watchdog release (the deadline unit's ExecStopPost=): nothing unless the trial
    entry armed a watchdog; then PID 1's RuntimeWatchdogUSec and RebootWatchdogUSec set back
    (the fake busctl records them) to the node's own: its command line's systemd.watchdog_sec=,
    else system.conf and drop-ins read by the real systemd-analyze cat-config --root, else
    systemd's defaults; kept armed when the deadline ran out.
usage: test-trial-generator.py GENERATOR MARK WATCHDOG
"""
import os, re, shutil, subprocess, sys, tempfile

GEN, MARK, WATCHDOG = sys.argv[1], sys.argv[2], sys.argv[3]
FAKES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakes")
checks = failures = 0


def check(cond, name, detail=""):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL {name}" + (f"\n     {detail}" if detail else ""))
    else:
        print(f"ok   {name}")


def run_gen(work, cmdline):
    out = os.path.join(work, "gen")
    runs = os.path.join(work, "run")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(runs, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, SYSTEMD_PROC_CMDLINE=cmdline, KSWAP_GENERATOR_RUN=runs)
    p = subprocess.run(["sh", GEN, out, out + "-early", out + "-late"], env=env,
                       capture_output=True, text=True)
    files = sorted(os.path.relpath(os.path.join(d, f), out)
                   for d, _, fs in os.walk(out) for f in fs)
    return p, out, runs, files


work = tempfile.mkdtemp(prefix="kswap-trialgen-")
try:
    p, out, runs, files = run_gen(work, "BOOT_IMAGE=/boot/vmlinuz-6.8.0-48-generic root=/dev/vda1 ro panic=10")
    check(p.returncode == 0 and files == [] and not os.path.exists(runs),
          "no marker (old or pinned kernel): no unit, no drop-in", (p.stderr, files))
    p, out, runs, files = run_gen(work, "root=/dev/vda1 ro kswapx.trial=1 kswap.trialx=2")
    check(files == [], "look-alike arguments are no marker", files)

    with open("/proc/uptime") as f:
        up = int(float(f.read().split()[0]))
    p, out, runs, files = run_gen(work, "root=/dev/vda1 ro panic=10 kswap.trial=0123abcd kswap.deadline=86400 "
                                        "oops=panic softlockup_panic=1")
    check(p.returncode == 0, "generator exits 0 on the trial boot", p.stderr)
    want = {"kswap-trial-deadline.service", "kswap-trial-stage@.service",
            "sysinit.target.wants/kswap-trial-deadline.service",
            "emergency.target.wants/kswap-trial-deadline.service",
            "rescue.target.wants/kswap-trial-deadline.service",
            "sysinit.target.wants/kswap-trial-stage@userspace.service",
            "emergency.target.wants/kswap-trial-stage@emergency.service",
            "rescue.target.wants/kswap-trial-stage@rescue.service",
            "multi-user.target.wants/kswap-trial-stage@multi-user.service",
            "kswap-trial-stage@multi-user.service.d/after.conf"}
    check(set(files) == want, "the trial boot's units and links", sorted(set(files) ^ want))
    unit = open(os.path.join(out, "kswap-trial-deadline.service")).read()
    for line in ("DefaultDependencies=no", "IgnoreOnIsolate=yes", "FailureAction=reboot-force",
                 "Type=simple", "ExecStart=/bin/sleep infinity"):
        check(re.search("^" + re.escape(line) + "$", unit, re.M), f"deadline unit: {line}")
    check(re.search(r"^ExecStopPost=-/\S+/kswap-trial-watchdog release$", unit, re.M),
          "deadline unit: its stop gives the watchdog back (kswap-trial-watchdog release)")
    m = re.search(r"^RuntimeMaxSec=(\d+)s$", unit, re.M)
    left = int(m.group(1)) if m else -1
    check(m and 86400 - up - 5 <= left <= 86400 - up, f"RuntimeMaxSec = deadline - uptime ({left})")
    check(not re.search(r"^(Conflicts|After|Before|Requires)=", unit, re.M),
          "deadline unit: no ordering or conflict a stuck job or a reboot could hold it by")
    for d in ("sysinit", "emergency", "rescue"):
        link = os.readlink(os.path.join(out, f"{d}.target.wants/kswap-trial-deadline.service"))
        check(link == "../kswap-trial-deadline.service", f"{d}.target wants the deadline", link)
    jd = os.path.join(runs, "systemd/journald.conf.d/50-kswap-trial.conf")
    check(os.path.exists(jd) and "Storage=persistent" in open(jd).read(),
          "journald Storage=persistent for the trial boot (runtime drop-in)")

    p, out, runs, files = run_gen(work, "root=/dev/vda1 kswap.trial=1 kswap.deadline=60")
    unit = open(os.path.join(out, "kswap-trial-deadline.service")).read()
    want_left = max(60 - up, 30)
    check(f"RuntimeMaxSec={want_left}s" in unit or f"RuntimeMaxSec={want_left - 1}s" in unit,
          "a deadline already (almost) passed still leaves 30 s", unit)

    p, out, runs, files = run_gen(work, "root=/dev/vda1 kswap.trial=1 kswap.softdog=1 "
                                        "systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60")
    sd = os.path.join(out, "kswap-trial-softdog.service")
    check("sysinit.target.wants/kswap-trial-softdog.service" in files and os.path.exists(sd) and
          re.search(r"^ExecStart=-modprobe softdog$", open(sd).read(), re.M) and
          re.search(r"^Before=sysinit.target$", open(sd).read(), re.M) and
          re.search(r"^DefaultDependencies=no$", open(sd).read(), re.M),
          "kswap.softdog=1: modprobe softdog early in sysinit.target (not modules-load=: blacklists)", files)
    softdog_unit = open(sd).read() if os.path.exists(sd) else ""
    p, out2, runs, files2 = run_gen(work, "root=/dev/vda1 kswap.trial=1 kswap.softdog=0")
    check(not any("softdog" in f for f in files2), "no softdog unit without kswap.softdog=1", files2)
    p, out2, runs, files2 = run_gen(work, "root=/dev/vda1 kswap.softdog=1")
    check(files2 == [], "kswap.softdog=1 without the trial marker: nothing", files2)

    analyze = shutil.which("systemd-analyze")
    if analyze:
        # Units that name programs of this machine: verify the syntax only.
        p = subprocess.run([analyze, "verify", "--man=no",
                            os.path.join(out, "kswap-trial-deadline.service")],
                           capture_output=True, text=True)
        bad = [l for l in (p.stderr + p.stdout).splitlines()
               if "kswap-trial-deadline" in l and ("Unknown" in l or "Invalid" in l or "Failed to parse" in l)]
        check(not bad, "systemd-analyze verify: no unknown or invalid setting", "\n".join(bad))
        sd2 = os.path.join(work, "kswap-trial-softdog.service")
        with open(sd2, "w") as f:
            f.write(softdog_unit)
        p = subprocess.run([analyze, "verify", "--man=no", sd2], capture_output=True, text=True)
        bad = [l for l in (p.stderr + p.stdout).splitlines()
               if "kswap-trial-softdog" in l and ("Unknown" in l or "Invalid" in l or "Failed" in l or "not executable" in l)]
        check(softdog_unit and not bad, "systemd-analyze verify: the softdog unit is valid", "\n".join(bad))
    else:
        print("skip systemd-analyze verify (not installed)")

    # kswap-trial-mark writes under /var/lib/kswap of the machine: only its no-op paths here.
    p = subprocess.run(["sh", "-c", f"grep -q 'kswap\\.trial=' /proc/cmdline || {MARK} userspace; echo rc=$?"],
                       capture_output=True, text=True)
    check("rc=0" in p.stdout and "kswap trial stage" not in p.stdout,
          "kswap-trial-mark does nothing without the marker", p.stdout + p.stderr)

    # kswap-trial-mark on a trial boot, in a root of its own (KSWAP_MARK_ROOT) with the fake
    # systemctl: the whole-VM scenario trial-emergency reached emergency mode with / still
    # read-only, and its first marks were lost. Here var/lib/kswap cannot be made at first (a
    # file stands in its way, as a read-only / would refuse it), then can.
    mroot = os.path.join(work, "mark-root")
    os.makedirs(os.path.join(mroot, "var/lib"))
    open(os.path.join(mroot, "var/lib/kswap"), "w").close()
    trial_cmd = "BOOT_IMAGE=/boot/vmlinuz-6.12.30-x64v3-xanmod1 ro kswap.trial=0123abcd kswap.deadline=60"

    def mark(stage, result=None, cmdline=trial_cmd):
        env = dict(os.environ, PATH=FAKES + ":" + os.environ["PATH"], SYSTEMD_PROC_CMDLINE=cmdline,
                   KSWAP_MARK_ROOT=mroot, KSWAP_ROOT=mroot)
        if result:
            env["SERVICE_RESULT"] = result
        return subprocess.run(["sh", MARK, stage], env=env, capture_output=True, text=True)

    def stages(path):
        f = os.path.join(mroot, path)
        return [l.split()[0] for l in open(f)] if os.path.isfile(f) else None

    p1, p2 = mark("userspace"), mark("emergency")
    check(p1.returncode == 0 and p2.returncode == 0 and stages("var/lib/kswap/trial-stages") is None
          and stages("run/kswap/trial-stages") == ["userspace", "emergency"],
          "mark with /var unwritable: the marks are kept in /run/kswap", (p1.stderr, p2.stderr))
    p3 = mark("multi-user")
    check(stages("run/kswap/trial-stages") == ["userspace", "emergency"] and "no mark" in p3.stdout,
          "mark multi-user while multi-user.target is not active (emergency mode): no mark",
          p3.stdout + p3.stderr)
    os.unlink(os.path.join(mroot, "var/lib/kswap"))
    p4 = mark("deadline", result="timeout")
    check(p4.returncode == 0 and stages("var/lib/kswap/trial-stages") == ["userspace", "emergency", "deadline"],
          "the deadline's mark, once /var can be written, carries the earlier ones",
          (stages("var/lib/kswap/trial-stages"), p4.stderr))
    os.makedirs(os.path.join(mroot, "run/fake-units"), exist_ok=True)
    with open(os.path.join(mroot, "run/fake-units/multi-user.target"), "w") as f:
        f.write("active\n")
    mark("multi-user")
    check(stages("var/lib/kswap/trial-stages") == ["userspace", "emergency", "deadline", "multi-user"],
          "mark multi-user with multi-user.target active: marked", stages("var/lib/kswap/trial-stages"))
    shutil.rmtree(os.path.join(mroot, "run/kswap"))
    os.unlink(os.path.join(mroot, "var/lib/kswap/trial-stages"))
    mark("userspace", cmdline=trial_cmd.replace("kswap.trial=", "kswap.triall="))
    check(stages("var/lib/kswap/trial-stages") is None and stages("run/kswap/trial-stages") is None,
          "mark without the marker (a look-alike argument): nothing written")

    # kswap-trial-watchdog release, with the fake busctl first on PATH and the real
    # systemd-analyze (cat-config --root, timespan).
    def release(cmdline, conf=None, result="success", fail=False):
        croot = os.path.join(work, "conf-root")
        shutil.rmtree(croot, ignore_errors=True)
        os.makedirs(os.path.join(croot, "etc/systemd/system.conf.d"))
        with open(os.path.join(croot, "etc/systemd/system.conf"), "w") as f:
            f.write("[Manager]\n#RuntimeWatchdogSec=off\n#RebootWatchdogSec=10min\n")
        for name, text in (conf or {}).items():
            with open(os.path.join(croot, name), "w") as f:
                f.write(text)
        log = os.path.join(work, "busctl.log")
        if os.path.exists(log):
            os.unlink(log)
        env = dict(os.environ, PATH=FAKES + ":" + os.environ["PATH"], SYSTEMD_PROC_CMDLINE=cmdline,
                   KSWAP_WATCHDOG_ROOT=croot, KSWAP_FAKE_BUSCTL_LOG=log, SERVICE_RESULT=result)
        if fail:
            env["KSWAP_FAKE_BUSCTL_FAIL"] = "1"
        p = subprocess.run(["sh", WATCHDOG, "release"], env=env, capture_output=True, text=True)
        calls = open(log).read().split() if os.path.exists(log) else []
        return p, calls

    TRIAL = ("root=/dev/vda1 ro panic=10 kswap.trial=0123abcd kswap.deadline=900 oops=panic "
             "softlockup_panic=1 nmi_watchdog=panic modprobe.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci")
    ARMED = TRIAL + " systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60"
    p, calls = release("root=/dev/vda1 ro panic=10")
    check(p.returncode == 0 and calls == [], "watchdog release: nothing on a boot without the marker",
          (p.returncode, calls, p.stderr))
    p, calls = release(TRIAL)
    check(p.returncode == 0 and calls == [], "watchdog release: nothing when the trial armed none", calls)
    p, calls = release("root=/dev/vda1 systemd.watchdog_sec=60 " + TRIAL)
    check(calls == [], "watchdog release: the node's own systemd.watchdog_sec= is no trial watchdog", calls)
    p, calls = release(ARMED)
    check(p.returncode == 0 and calls == ["RuntimeWatchdogUSec=0", "RebootWatchdogUSec=600000000"],
          "watchdog release: systemd's defaults (runtime off, reboot 10min) when system.conf sets none",
          (calls, p.stdout, p.stderr))
    p, calls = release(ARMED, {"etc/systemd/system.conf.d/10-wd.conf":
                               "[Manager]\nRuntimeWatchdogSec=2min\nRebootWatchdogSec=5min 30s\n",
                               "etc/systemd/system.conf.d/20-later.conf":
                               "[Manager]\n  RuntimeWatchdogSec = 90s\n[Other]\nRuntimeWatchdogSec=1s\n"})
    check(calls == ["RuntimeWatchdogUSec=90000000", "RebootWatchdogUSec=330000000"],
          "watchdog release: system.conf drop-ins, the last [Manager] value wins", (calls, p.stderr))
    p, calls = release(ARMED, {"etc/systemd/system.conf.d/10-wd.conf": "[Manager]\nShutdownWatchdogSec=off\n"})
    check(calls == ["RuntimeWatchdogUSec=0", "RebootWatchdogUSec=0"],
          "watchdog release: ShutdownWatchdogSec= (the old name) counts for the reboot", calls)
    p, calls = release("root=/dev/vda1 systemd.watchdog_sec=45s " + ARMED)
    check(calls == ["RuntimeWatchdogUSec=45000000", "RebootWatchdogUSec=45000000"],
          "watchdog release: the node's own command line value comes back", calls)
    p, calls = release(ARMED, {"etc/systemd/system.conf.d/10-wd.conf": "[Manager]\nRuntimeWatchdogSec=default\n"})
    check(calls == ["RebootWatchdogUSec=600000000"] and "stays at the trial's value" in p.stdout,
          "watchdog release: 'default' cannot be set back: said, the reboot value still set", (calls, p.stdout))
    p, calls = release(ARMED, result="timeout")
    check(p.returncode == 0 and calls == [] and "stays armed" in p.stdout,
          "watchdog release: the deadline ran out: the watchdog stays armed for the forced reboot",
          (calls, p.stdout))
    p, calls = release(ARMED, fail=True)
    check(p.returncode == 1 and calls == [] and "cannot set RuntimeWatchdogUSec=0" in p.stderr,
          "watchdog release: a refused set-property is said and fails the command", (p.returncode, p.stderr))
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"{checks} checks, {failures} failed")
sys.exit(1 if failures else 0)
