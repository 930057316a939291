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
  - issue 34, items 7 and 8, as tables: kswap.deadline= read as the C code reads [accept]
    deadline (decimal, 60 to 86400, else 900: "0900", twenty nines, 86401 never kill the
    generator, and systemd-analyze timespan parses every RuntimeMaxSec= written); units only
    for the marker kswap armed (the journal's armed_boot_id, the last kswap.trial= of the
    command line), none for a stray or an old trial's marker, said on stderr; and a property
    test: KS_GENERATOR_RUNS (200) random command lines (seed KS_GENERATOR_SEED, 34) of kswap's
    words with hostile values (globs, $(...), quotes, huge numbers, leading zeros, non-ASCII),
    each of which must exit 0 and write units exactly for the armed trial;
  - the marks and the watchdog release only on a boot the generator acted on; "returned"
    (emergency mode) with its mode; the deadline stopped by the verdict leaves
    /run/kswap/trial-judged.
usage: test-trial-generator.py GENERATOR MARK WATCHDOG
"""
import os, re, shutil, subprocess, sys, tempfile

GEN, MARK, WATCHDOG = (os.path.abspath(a) for a in sys.argv[1:4])
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


# The boot kswap armed the trial in: the journal's armed_boot_id, and the trial id kswap puts on
# the trial entry (its first 12 hexadecimal digits, lib/engine/trialboot.h ks_trial_id()).
ARMED_BOOT = "0123abcd-ef01-4a00-8b00-00000000c0de"
ID = "0123abcdef01"
JOURNAL = """{
  "version": 1,
  "state": "armed",
  "reason": "x\\"armed_boot_id\\": \\"ffffffff-ffff\\"",
  "armed_boot_id": "%s",
  "armed_btime": 1700000000
}
"""


def run_gen(work, cmdline, armed=ARMED_BOOT, fstab=None):
    """The generator with cmdline, in a root whose journal says the trial of armed is armed
    (None: no journal; "": a journal with nothing armed); fstab: that root's /etc/fstab."""
    out = os.path.join(work, "gen")
    runs = os.path.join(work, "run")
    groot = os.path.join(work, "gen-root")
    for d in (out, runs, groot):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(out)
    os.makedirs(os.path.join(groot, "etc"))
    if armed is not None:
        os.makedirs(os.path.join(groot, "var/lib/kswap"))
        with open(os.path.join(groot, "var/lib/kswap/state.json"), "w") as f:
            f.write(JOURNAL % armed if armed else '{\n  "version": 1,\n  "state": "idle"\n}\n')
    if fstab is not None:
        with open(os.path.join(groot, "etc/fstab"), "w") as f:
            f.write(fstab)
    env = dict(os.environ, SYSTEMD_PROC_CMDLINE=cmdline, KSWAP_GENERATOR_RUN=runs,
               KSWAP_GENERATOR_ROOT=groot)
    p = subprocess.run(["sh", GEN, out, out + "-early", out + "-late"], env=env,
                       capture_output=True, text=True, cwd=work)
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
    p, out, runs, files = run_gen(work, "root=/dev/vda1 ro panic=10 kswap.trial=0123abcdef01 kswap.deadline=86400 "
                                        "oops=panic softlockup_panic=1")
    check(p.returncode == 0, "generator exits 0 on the trial boot", p.stderr)
    want = {"kswap-trial-deadline.service", "kswap-trial-stage@.service",
            "kswap-trial-return.service",
            "sysinit.target.wants/kswap-trial-deadline.service",
            "emergency.target.wants/kswap-trial-deadline.service",
            "rescue.target.wants/kswap-trial-deadline.service",
            "emergency.target.wants/kswap-trial-return.service",
            "rescue.target.wants/kswap-trial-return.service",
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

    p, out, runs, files = run_gen(work, "root=/dev/vda1 kswap.trial=%s kswap.deadline=60" % ID)
    unit = open(os.path.join(out, "kswap-trial-deadline.service")).read()
    want_left = max(60 - up, 30)
    check(f"RuntimeMaxSec={want_left}s" in unit or f"RuntimeMaxSec={want_left - 1}s" in unit,
          "a deadline already (almost) passed still leaves 30 s", unit)

    p, out, runs, files = run_gen(work, f"root=/dev/vda1 kswap.trial={ID} kswap.softdog=1 "
                                        "systemd.watchdog_device=/dev/watchdog0 systemd.watchdog_sec=60")
    sd = os.path.join(out, "kswap-trial-softdog.service")
    check("sysinit.target.wants/kswap-trial-softdog.service" in files and os.path.exists(sd) and
          re.search(r"^ExecStart=-modprobe softdog$", open(sd).read(), re.M) and
          re.search(r"^Before=sysinit.target$", open(sd).read(), re.M) and
          re.search(r"^DefaultDependencies=no$", open(sd).read(), re.M),
          "kswap.softdog=1: modprobe softdog early in sysinit.target (not modules-load=: blacklists)", files)
    softdog_unit = open(sd).read() if os.path.exists(sd) else ""
    p, out2, runs, files2 = run_gen(work, f"root=/dev/vda1 kswap.trial={ID} kswap.softdog=0")
    check(not any("softdog" in f for f in files2), "no softdog unit without kswap.softdog=1", files2)
    p, out2, runs, files2 = run_gen(work, "root=/dev/vda1 kswap.softdog=1")
    check(files2 == [], "kswap.softdog=1 without the trial marker: nothing", files2)

    analyze = shutil.which("systemd-analyze")

    def runtime_max(out):
        """RuntimeMaxSec= of the deadline unit in seconds; None without the unit."""
        f = os.path.join(out, "kswap-trial-deadline.service")
        if not os.path.exists(f):
            return None
        m = re.search(r"^RuntimeMaxSec=(\S*)$", open(f).read(), re.M)
        return m.group(1) if m else ""

    def systemd_seconds(span):
        """What systemd makes of a time span (systemd-analyze timespan), in seconds; None when
        it cannot parse it."""
        if not analyze:
            return int(span[:-1]) if re.fullmatch(r"\d+s", span) else None
        p = subprocess.run([analyze, "timespan", span], capture_output=True, text=True)
        m = re.search(r"\s+\u03bcs:\s+(\d+)|\s+us:\s+(\d+)", p.stdout)
        return int(m.group(1) or m.group(2)) // 1000000 if p.returncode == 0 and m else None

    # kswap.deadline= as the C code reads [accept] deadline (issue 34, item 7): decimal, 60 to
    # 86400, anything else the default 900; the generator never dies on it, and systemd parses
    # what it writes. (value, the deadline the generator must use)
    deadlines = [
        ("900", 900), ("0900", 900), ("060", 60), ("00000000000000000000086400", 86400),
        ("86400", 86400), ("86401", 900), ("99999999999999999999", 900),
        ("999999999999999999999999999999999999999", 900), ("59", 900), ("0", 900), ("", 900),
        ("-5", 900), ("+600", 900), ("1e3", 900), ("0x100", 900), ("600s", 900), ("6O0", 900),
        ("09", 900), ("08", 900), ("\u0660\u0666\u0660", 900),
    ]
    def uptime():
        with open("/proc/uptime") as f:
            return int(float(f.read().split()[0]))

    def deadline_ok(secs, want, u0, u1):
        """RuntimeMaxSec= is the deadline less the uptime while the generator ran (30 s at
        least)."""
        return secs is not None and max(want - u1 - 1, 30) <= secs <= max(want - u0, 30)

    for value, want in deadlines:
        u0 = uptime()
        p, out, runs, files = run_gen(work, f"root=/dev/vda1 kswap.trial={ID} kswap.deadline={value}")
        u1 = uptime()
        span = runtime_max(out)
        secs = systemd_seconds(span) if span else None
        ok = p.returncode == 0 and deadline_ok(secs, want, u0, u1)
        check(ok, f"kswap.deadline={value!r}: the generator writes the deadline of {want} s "
              f"(RuntimeMaxSec={span}, systemd reads {secs} s)", (p.returncode, p.stderr))

    # Only the marker kswap armed (issue 34, item 8): (name, command line, armed boot (None: no
    # journal; "": nothing armed), fstab, units written, the deadline used)
    OTHER = "0badc0ffee00"
    markers = [
        ("a stray kswap.trial= in GRUB_CMDLINE_LINUX, nothing armed (no journal)",
         f"root=/dev/vda1 ro kswap.trial={OTHER} kswap.deadline=900", None, None, False, None),
        ("a stray kswap.trial=, a journal with nothing armed",
         f"root=/dev/vda1 ro kswap.trial={OTHER}", "", None, False, None),
        ("an old trial's marker copied, another trial armed",
         f"root=/dev/vda1 ro kswap.trial={OTHER} kswap.deadline=60", ARMED_BOOT, None, False, None),
        ("the armed trial", f"root=/dev/vda1 ro kswap.trial={ID} kswap.deadline=600", ARMED_BOOT,
         None, True, 600),
        ("the armed trial after a stray copy: the last words count",
         f"root=/dev/vda1 kswap.trial={OTHER} kswap.deadline=60 kswap.softdog=1 ro "
         f"kswap.trial={ID} kswap.deadline=600", ARMED_BOOT, None, True, 600),
        ("a stray copy after the trial's words is not the trial",
         f"root=/dev/vda1 kswap.trial={ID} kswap.deadline=600 kswap.trial={OTHER}", ARMED_BOOT,
         None, False, None),
        ("the armed boot id in capitals", f"root=/dev/vda1 kswap.trial={ID}", ARMED_BOOT.upper(),
         None, True, 900),
        ("a marker that is no trial id (a path)", "root=/dev/vda1 kswap.trial=../../etc",
         ARMED_BOOT, None, False, None),
        ("a marker of 13 digits", f"root=/dev/vda1 kswap.trial={ID}0", ARMED_BOOT, None, False,
         None),
        ("an empty marker", "root=/dev/vda1 kswap.trial=", ARMED_BOOT, None, False, None),
        ("/var/lib/kswap not mounted yet (fstab): taken as kswap's",
         f"root=/dev/vda1 kswap.trial={ID} kswap.deadline=300", None,
         "UUID=x / ext4 defaults 0 1\n/dev/vdb1 /var ext4 defaults 0 2\n", True, 300),
        ("/var on the root file system, no journal: not armed",
         f"root=/dev/vda1 kswap.trial={ID}", None, "UUID=x / ext4 defaults 0 1\n#/dev/vdb1 /var ext4\n",
         False, None),
    ]
    for name, cmdline, armed, fstab, units, want in markers:
        u0 = uptime()
        p, out, runs, files = run_gen(work, cmdline, armed=armed, fstab=fstab)
        u1 = uptime()
        got = "kswap-trial-deadline.service" in files
        check(p.returncode == 0 and got == units and (units or files == []),
              f"{name}: {'the trial units' if units else 'nothing written'}",
              (p.returncode, files, p.stderr))
        if units and want:
            span = runtime_max(out)
            secs = systemd_seconds(span) if span else None
            check(deadline_ok(secs, want, u0, u1), f"{name}: deadline {want} s ({span})")
        if not units and armed is not None and re.search(r"kswap\.trial=\S", cmdline):
            check("nothing done" in p.stderr, f"{name}: the generator says why", p.stderr)

    # The generator's inputs, at random (a property test, seeded): command lines of kswap's
    # words with random values among other words (shell metacharacters, globs, quotes, huge
    # numbers, leading zeros, non-ASCII), journals armed or not. Whatever they hold: exit 0,
    # nothing on stderr but its own sentences, units exactly when the last kswap.trial= is the
    # armed trial's id, and a RuntimeMaxSec= systemd parses, from 30 s to 86400 s.
    import random
    rnd = random.Random(int(os.environ.get("KS_GENERATOR_SEED", "34")))
    pieces = ["*", "/*", "$(reboot)", "`id`", ";", "|", "&", "'", '"', "\\", "$HOME", "${x:-y}",
              "0", "00", "0900", "086400", "99999999999999999999", "-1", "1e9", "0x1f", "60",
              "86400", "86401", ID, OTHER, ID.upper(), "", " ", "\u00e9", "\u0660", "..", "%s",
              "%n", "\t"]
    others = ["root=/dev/vda1", "ro", "quiet", "panic=10", "systemd.unit=emergency.target",
              "kswap.trialx=1", "xkswap.trial=1", "init=/bin/sh", "*", "$(touch /tmp/kswap-pwned)"]
    runs_n = int(os.environ.get("KS_GENERATOR_RUNS", "200"))
    bad = []
    for n in range(runs_n):
        words = []
        for _ in range(rnd.randint(0, 8)):
            k = rnd.random()
            if k < 0.3:
                words.append("kswap.trial=" + "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 2))))
            elif k < 0.6:
                words.append("kswap.deadline=" + "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 3))))
            elif k < 0.7:
                words.append("kswap.softdog=" + rnd.choice(["1", "0", "11", "*", ""]))
            else:
                words.append(rnd.choice(others))
        cmdline = " ".join(words)
        armed = rnd.choice([ARMED_BOOT, ARMED_BOOT, "", None])
        p, out, runs, files = run_gen(work, cmdline, armed=armed)
        last = None
        for w in cmdline.split():
            if w.startswith("kswap.trial="):
                last = w[len("kswap.trial="):]
        want_units = armed == ARMED_BOOT and last == ID
        stray = [l for l in p.stderr.splitlines() if not l.startswith("kswap-trial-generator: ")]
        span = runtime_max(out)
        secs = systemd_seconds(span) if span and n % 10 == 0 else (
            int(span[:-1]) if span and re.fullmatch(r"\d+s", span) else None)
        if (p.returncode != 0 or stray or ("kswap-trial-deadline.service" in files) != want_units
                or (want_units and (secs is None or not 30 <= secs <= 86400))
                or os.path.exists("/tmp/kswap-pwned")):
            bad.append((cmdline, armed, p.returncode, stray, files[:3], span))
    check(not bad, f"{runs_n} random command lines: exit 0, units only for the armed trial, a "
          f"deadline systemd parses", bad[:5])

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
    trial_cmd = f"BOOT_IMAGE=/boot/vmlinuz-6.12.30-x64v3-xanmod1 ro kswap.trial={ID} kswap.deadline=60"
    # No generator output (a kswap.trial= kswap did not arm): no mark at all.
    env0 = dict(os.environ, PATH=FAKES + ":" + os.environ["PATH"], SYSTEMD_PROC_CMDLINE=trial_cmd,
                KSWAP_MARK_ROOT=mroot, KSWAP_ROOT=mroot)
    p = subprocess.run(["sh", MARK, "userspace"], env=env0, capture_output=True, text=True)
    check(p.returncode == 0 and not os.path.exists(os.path.join(mroot, "run/kswap")),
          "mark on a boot the generator did not act on (a marker kswap did not arm): nothing",
          p.stdout + p.stderr)
    os.makedirs(os.path.join(mroot, "run/systemd/generator"))
    open(os.path.join(mroot, "run/systemd/generator/kswap-trial-deadline.service"), "w").close()

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
    # Emergency mode: the return unit's mark says the mode and the jobs, after the stage's.
    with open(os.path.join(mroot, "run/fake-units/emergency.target"), "w") as f:
        f.write("active\n")
    mark("emergency")
    p5 = mark("returned")
    lines = open(os.path.join(mroot, "var/lib/kswap/trial-stages")).read().splitlines()
    check(p5.returncode == 0 and [l.split()[0] for l in lines] == ["emergency", "returned"] and
          re.match(r"^returned \d+ emergency mode; state .*; jobs: ", lines[-1]),
          "mark returned (emergency mode): after the stage, with the mode and the jobs", lines)
    # The deadline stopped by the verdict: no mark, the trial is judged for the rest of the boot.
    p6 = mark("deadline", result="success")
    check(p6.returncode == 0 and len(open(os.path.join(mroot, "var/lib/kswap/trial-stages")).read().splitlines()) == 2
          and os.path.exists(os.path.join(mroot, "run/kswap/trial-judged")),
          "deadline stopped by the verdict: no mark, /run/kswap/trial-judged left", p6.stdout + p6.stderr)

    # kswap-trial-watchdog release, with the fake busctl first on PATH and the real
    # systemd-analyze (cat-config --root, timespan).
    def release(cmdline, conf=None, result="success", fail=False, generated=True):
        croot = os.path.join(work, "conf-root")
        shutil.rmtree(croot, ignore_errors=True)
        os.makedirs(os.path.join(croot, "etc/systemd/system.conf.d"))
        if generated:
            os.makedirs(os.path.join(croot, "run/systemd/generator"))
            open(os.path.join(croot, "run/systemd/generator/kswap-trial-deadline.service"), "w").close()
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

    TRIAL = (f"root=/dev/vda1 ro panic=10 kswap.trial={ID} kswap.deadline=900 oops=panic "
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
    p, calls = release(ARMED, generated=False)
    check(p.returncode == 0 and calls == [],
          "watchdog release: nothing on a boot the generator did not act on", calls)
    p, calls = release("root=/dev/vda1 kswap.trial=0badc0ffee00 systemd.watchdog_sec=45s " + ARMED)
    check(calls == ["RuntimeWatchdogUSec=45000000", "RebootWatchdogUSec=45000000"],
          "watchdog release: a stray kswap.trial= before the node's own systemd.watchdog_sec= "
          "does not make it the trial's", calls)
    p, calls = release(ARMED, fail=True)
    check(p.returncode == 1 and calls == [] and "cannot set RuntimeWatchdogUSec=0" in p.stderr,
          "watchdog release: a refused set-property is said and fails the command", (p.returncode, p.stderr))
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"{checks} checks, {failures} failed")
sys.exit(1 if failures else 0)
