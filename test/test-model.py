#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A model-based test of kswap's state machine (issue 31): random command sequences on copies
of a fixture root with the fakes of test/fakes first on PATH, as an operator, a bootstrap script
and the node itself would run them: apply from each source (--deb, --kernel, the repository),
pin, rollback, rollback --purge, accept, status --ack, the next step status names, simulated
reboots into what GRUB's forecast says (the trial boot healthy, unhealthy, fallen back or hung,
its acceptance run as kswap-accept.service runs it), kills of a command at a random moment
(its whole process group, as a power cut), a damaged or lost journal, a damaged grubenv. After
every step it checks:
  - no kswap crashed (an illegal transition aborts kswap: lib/engine/states.h) and every --json
    run printed one document;
  - the journal reads (unless the step damaged it) and its state is a state;
  - the forecast of the next boots matches the state (armed: the new kernel once, then the old
    one; pinned: the new one; otherwise the old one on every boot), and its first boot is a kernel
    the node can boot (vmlinuz and initrd there, GRUB does not wait);
  - a command that refused, answered unchanged, or only reads changed no byte of the root;
  - status's next step, when the sequence runs it (about one step in four), succeeds as printed;
  - a command that changed something left exactly one entry in the command log.
Every failure prints the seed, the step and the sequence so far; a bug found this way becomes a
fixed seed in FIXED_SEEDS below.

Usage: test-model.py KSWAP [--steps N] [--seed S] [--workers W] [--verbose]
  The bounded run (CI) is 800 steps over 2 workers; KS_MODEL_STEPS and KS_MODEL_SEED set a
  long run by hand (KS_MODEL_STEPS=50000), and the seed of a failure replays it.
"""
import argparse
import hashlib
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import kstest

OLD = kstest.OLD
NEW = kstest.NEW
NEW2 = "6.18.46-x64v3-xanmod1"
META = "linux-xanmod-lts-x64v3"
STATES = {"idle", "prepared", "installed", "verified", "armed", "trial-booted", "pinned",
          "failed", "rolled-back"}
# Fixed seeds: sequences that found bugs, each a regression test run before the random ones as
# (worker seed, steps). A sequence replays exactly up to its first kill (a kill's moment is
# measured in seconds); bugs found after a kill became fixed tests of their own instead:
# test/test-state-machine.py rollback-cut (seed 11: rollback --purge cut after update-grub
# removed the trial's entries left next_entry naming a gone entry, GRUB's entry 0 the newest
# kernel), damaged-grubenv (seed 11: status named rollback, which a damaged grubenv refuses),
# and test/test-apply-kill.py (seed 11: a resumed apply tripped the step table's assertion).
FIXED_SEEDS = [
    # apply --reboot of a trial armed in this boot answered "unchanged" though it rebooted and
    # counted the reboot in the journal (a command that answers unchanged writes nothing)
    (7000, 10),
]
# Files of the root that are not state: the fakes' logs, the lock's pid, the probe's lists.
VOLATILE = ("var/log/", "var/lib/kswap/lock", "run/fake-reboot-requested")


class Failure(Exception):
    pass


def sh(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


def build_inputs(work):
    """The packages every worker shares: NEW and NEW2 as local .debs, and two repositories:
    repo1 offers the metapackage for NEW, repo2 its next version for NEW2."""
    mk = os.path.join(kstest.FAKES, "make-kernel-deb.sh")
    debs = {}
    for rel in (NEW, NEW2):
        debs[rel] = os.path.join(work, f"linux-image-{rel}.deb")
        subprocess.run(["bash", mk, rel, debs[rel], "--bbr", "builtin"], check=True,
                       capture_output=True)
    repos = {}
    for name, rel, version in (("repo1", NEW, "1"), ("repo2", NEW2, "2")):
        d = os.path.join(work, name)
        os.makedirs(d)
        shutil.copy(debs[rel], d)
        if name == "repo2":
            shutil.copy(debs[NEW], d)
        subprocess.run(["bash", mk, rel, os.path.join(d, f"{META}.deb"), "--meta", "--package",
                        META, "--version", version], check=True, capture_output=True)
        repos[name] = d
    return debs, repos


class Node:
    """One fixture root and what the model knows of it."""

    def __init__(self, exe, work, wid, debs, repos, rng, log):
        self.exe, self.debs, self.repos, self.rng, self.log = exe, debs, repos, rng, log
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else work
        self.root = tempfile.mkdtemp(prefix=f"kswap-model-{wid}.", dir=base)
        shutil.rmtree(self.root)
        shutil.copytree(kstest.EXAMPLE_ROOT, self.root, symlinks=True)
        self.repo = repos["repo1"]
        self.boots = 0
        self.damaged_journal = False
        self.grubenv_backup = None  # bytes of a grubenv this model damaged
        self.costs = {}
        self.put("etc/kswap/kswap.conf",
                 "[accept]\nservices = xray.service\ntimeout = 2\ninterval = 1\n")
        self.put("run/fake-units/xray.service", "active\n")
        self.boot_into(OLD)

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    # --- the root's files

    def path(self, rel):
        return os.path.join(self.root, rel)

    def put(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)

    def read(self, rel):
        try:
            with open(self.path(rel)) as f:
                return f.read()
        except OSError:
            return None

    def snapshot(self):
        """Every file of the root but the volatile ones: path -> content hash (links: target)."""
        out = {}
        for d, dirs, files in os.walk(self.root):
            for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                p = os.path.join(d, n)
                rel = os.path.relpath(p, self.root)
                if rel.startswith(VOLATILE):
                    continue
                if os.path.islink(p):
                    out[rel] = "->" + os.readlink(p)
                else:
                    with open(p, "rb") as f:
                        out[rel] = hashlib.sha256(f.read()).hexdigest()
        return out

    def journal(self):
        t = self.read("var/lib/kswap/state.json")
        if t is None:
            return {}
        try:
            return json.loads(t)
        except ValueError:
            return None

    def command_log(self):
        try:
            return json.loads(self.read("var/lib/kswap/commands.json") or '{"commands": []}')
        except ValueError:
            return None

    # --- running kswap

    def kswap(self, *args, kill_after=None, env=None):
        """kswap --root ROOT --json ARGS: (exit code, document, stderr, seconds). kill_after:
        SIGKILL to its whole process group after that many seconds (exit None then)."""
        e = kstest.env(KSWAP_FAKE_DEBS=self.repo, **(env or {}))
        argv = [self.exe, "--root", self.root, "--json", *args]
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=e, start_new_session=True)
        try:
            out, err = p.communicate(timeout=kill_after if kill_after is not None else 300)
        except subprocess.TimeoutExpired:
            if kill_after is None:
                raise
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            # kswap's spawn puts each program in its own group, so an apt-get or dpkg it ran
            # goes on after the kill (as on a node); the next command comes once it ended
            self.wait_orphans()
            return None, None, err, time.monotonic() - t0
        took = time.monotonic() - t0
        key = args[0] if args else ""
        self.costs.setdefault(key, []).append(took)
        if p.returncode < 0:
            raise Failure(f"kswap {' '.join(args)} was killed by signal {-p.returncode} "
                          f"(an assertion: an illegal transition?)\n{err[-2000:]}")
        try:
            doc = json.loads(out)
        except ValueError:
            raise Failure(f"kswap {' '.join(args)}: --json printed no JSON document: "
                          f"{out[:300]!r}\n{err[-1000:]}")
        if not isinstance(doc, dict) or doc.get("exit_code") != p.returncode:
            raise Failure(f"kswap {' '.join(args)}: exit_code {doc.get('exit_code')} in the "
                          f"document, {p.returncode} from the process")
        return p.returncode, doc, err, took

    def wait_orphans(self, limit=120):
        """Waits until no process runs with this root (KSWAP_ROOT in its environment)."""
        mark = f"KSWAP_ROOT={self.root}".encode() + b"\0"
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            alive = False
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        alive = mark in f.read() + b"\0"
                except OSError:
                    continue
                if alive:
                    break
            if not alive:
                return
            time.sleep(0.2)

    def status(self):
        code, doc, err, _ = self.kswap("status")
        return code, doc, err

    # --- the node's own life

    def boot_into(self, release):
        self.boots += 1
        self.put("proc/sys/kernel/osrelease", release + "\n")
        self.put("proc/sys/kernel/random/boot_id",
                 "%08x-0000-4000-8000-%012x\n" % (self.boots, self.rng.getrandbits(40)))
        # /run is a tmpfs: the login line is gone at every boot
        shutil.rmtree(self.path("run/motd.d"), ignore_errors=True)
        try:
            os.unlink(self.path("run/fake-reboot-requested"))
        except FileNotFoundError:
            pass
        cmdline = f"BOOT_IMAGE=/vmlinuz-{release} root=/dev/vda1 ro"
        self.put("proc/cmdline", cmdline + "\n")

    def reboots_requested(self):
        t = self.read("run/fake-reboot-requested")
        return len(t.splitlines()) if t else 0

    def running(self):
        return (self.read("proc/sys/kernel/osrelease") or "").strip()


class Model:
    """One worker: a node, a random stream, and the checks after every step."""

    def __init__(self, exe, work, wid, seed, steps, debs, repos, verbose):
        self.seed, self.steps, self.verbose = seed, steps, verbose
        self.rng = random.Random(seed)
        self.trace = []
        self.node = Node(exe, work, wid, debs, repos, self.rng, self.trace)
        self.counts = {}
        self.followed = 0

    def say(self, what):
        self.trace.append(what)
        if self.verbose:
            print(f"  [{self.seed}] {len(self.trace)}: {what}", flush=True)

    def fail(self, why):
        raise Failure(f"seed {self.seed}, step {len(self.trace)}: {why}\n  sequence:\n    " +
                      "\n    ".join(self.trace[-40:]))

    # --- checks

    def check_after(self, what):
        n = self.node
        code, doc, err = n.status()
        j = n.journal()
        if j is None:
            if not n.damaged_journal:
                self.fail(f"{what}: the journal does not parse, nobody damaged it")
            want = "grub-editenv /boot/grub/grubenv create" if n.grubenv_backup is not None \
                else "kswap rollback"
            if code != 1 or kstest.unroot(doc.get("next"), n.root) != want:
                self.fail(f"{what}: status of a damaged journal: exit {code}, next "
                          f"{doc.get('next')} (want 1, {want})")
            return doc
        state = j.get("state", "idle")
        if state not in STATES:
            self.fail(f"{what}: state {state!r}")
        if n.grubenv_backup is not None:
            return doc  # GRUB's state cannot be read: nothing to forecast
        if code == 1 or not doc.get("grub"):
            self.fail(f"{what}: status fails ({code}): {err[-600:]}")
        fc = doc["grub"]["forecast"]
        kernels = [(b["kernel"], b["one_shot"]) for b in fc]
        old, new = j.get("old_kernel"), j.get("new_kernel")
        all_old = [(old, False)] * 3
        armed = [(new, True), (old, False), (old, False)]
        orphan = any(f["id"] == "trial.orphaned" for f in doc.get("findings", []))
        allowed = {
            "idle": None,
            "prepared": [all_old, armed], "installed": [all_old, armed],
            "verified": [all_old, armed], "armed": [armed, all_old],
            "trial-booted": [all_old], "pinned": [[(new, False)] * 3],
            "rolled-back": [all_old], "failed": [all_old, armed],
        }[state]
        # A pin cut short (its step begun, never ended) made the new kernel the default before
        # the journal said pinned: the next step finishes it (lib/engine/next-step.c, pin_cut).
        pin_began = any(x.get("name") == "pin" and x.get("status") == "started"
                        for x in j.get("steps") or [])
        if allowed is not None and pin_began and state != "pinned":
            allowed = allowed + [[(new, False)] * 3]
        if allowed is not None and kernels not in allowed:
            self.fail(f"{what}: state {state} (old {old}, new {new}) but the forecast is "
                      f"{kernels}")
        if state == "idle" and not orphan and (any(k[1] for k in kernels) or
                                               len({k[0] for k in kernels}) != 1):
            self.fail(f"{what}: idle, no trial, but the forecast is {kernels}")
        first = fc[0]
        if first["waits"] or first["fell_back"] or not first["kernel"] or \
                not os.path.exists(n.path(f"boot/vmlinuz-{first['kernel']}")) or \
                not os.path.exists(n.path(f"boot/initrd.img-{first['kernel']}")):
            self.fail(f"{what}: the next boot cannot start a kernel: {first}")
        return doc

    def run_cmd(self, args, follow=False, kill=False, env=None):
        """Runs one kswap command as a step, with the checks that concern it."""
        n = self.node
        before = n.snapshot()
        log_before = n.command_log()
        reboots = n.reboots_requested()
        kill_after = None
        if kill:
            costs = n.costs.get(args[0]) or [1.0]
            kill_after = self.rng.uniform(0, max(costs) * 1.1)
        code, doc, err, took = n.kswap(*args, kill_after=kill_after, env=env)
        label = "kswap " + " ".join(args) + (" (next step)" if follow else "")
        if code is None:
            self.say(f"{label}: killed after {kill_after:.2f} s")
            # whatever the moment, GRUB keeps a kernel to boot and the journal reads
            if n.journal() is None and not n.damaged_journal:
                self.fail(f"{label}: killed, and the journal is torn")
            self.check_after(label)
            return None, None
        result = doc.get("result") or doc.get("outcome") or doc.get("state")
        self.say(f"{label}: exit {code}, {result}")
        # An error (exit 1) has a cause this model made: GRUB's state or the journal damaged.
        if code == 1 and n.grubenv_backup is None and not n.damaged_journal:
            self.fail(f"{label}: exit 1 with GRUB and the journal intact: {doc.get('error')}"
                      f"\n{err[-1500:]}")
        self.counts[(args[0], result)] = self.counts.get((args[0], result), 0) + 1
        after = n.snapshot()
        read_only = args[0] in ("plan", "list", "history", "verify") or \
            (args[0] == "status" and "--ack" not in args) or "--dry-run" in args
        if (result in ("refused", "unchanged", "busy") or read_only) and after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            self.fail(f"{label}: {result or 'read-only'}, but it changed {changed}")
        log_after = n.command_log()
        if log_before is not None and log_after is not None:
            grew = len(log_after["commands"]) - len(log_before["commands"])
            changed = after != before
            if grew > 1 or (grew == 1 and not changed) or \
                    (changed and grew == 0 and args[0] in ("apply", "pin", "rollback")):
                self.fail(f"{label}: the command log grew by {grew} for a command that "
                          f"{'changed' if changed else 'did not change'} the root")
        if follow and not self.next_succeeded(args, code, result):
            self.fail(f"{label}: the next step status named did not work as printed: exit "
                      f"{code}, {result}: {doc.get('error')}\n{err[-800:]}")
        if n.reboots_requested() > reboots:
            self.reboot("asked by " + args[0])
        else:
            self.check_after(label)
        return code, doc

    def next_succeeded(self, args, code, result):
        if args[0] == "accept":
            return code in (0, 3, 4)
        if args[0] == "status" and "--wait" in args:
            return code in (0, 3, 4)
        if args[0] == "plan":
            return code in (0, 2)
        return code == 0 and result in ("done", "unchanged", "ok", None) or \
            (args[0] == "status" and code == 0)

    # --- the node's events

    def reboot(self, why):
        """A reboot into what GRUB's forecast says: the one-shot consumed as GRUB's save_env does;
        on the trial boot kswap-accept.service runs accept (when the trial flag is there)."""
        n = self.node
        code, doc, err = n.status()
        if n.grubenv_backup is not None or not doc.get("grub"):
            self.say(f"reboot ({why}): GRUB's state is damaged, the model repairs it first")
            self.repair_grubenv()
            code, doc, err = n.status()
        first = doc["grub"]["forecast"][0]
        kernel = first["kernel"]
        j = n.journal() or {}
        trial = first["one_shot"]
        if trial:
            sh("grub-editenv", n.path("boot/grub/grubenv"), "unset", "next_entry")
        fate = "normal"
        if trial and kernel == j.get("new_kernel"):
            fate = self.rng.choice(["healthy", "healthy", "healthy", "unhealthy", "fell-back",
                                    "hung"])
            if fate == "fell-back":
                kernel = j.get("old_kernel") or OLD  # the trial died: GRUB's fallback, panic=
            elif fate == "hung":
                n.put("var/lib/kswap/trial-stages", "userspace 14\nemergency 31\ndeadline 900\n")
                kernel = j.get("old_kernel") or OLD
        n.put("run/fake-units/xray.service", "failed\n" if fate == "unhealthy" else "active\n")
        n.boot_into(kernel)
        if fate in ("healthy", "unhealthy"):
            n.put("proc/cmdline", f"BOOT_IMAGE=/vmlinuz-{kernel} ro kswap.trial=1 "
                  f"kswap.deadline=900\n")
        self.say(f"reboot ({why}) into {kernel}{' (trial: ' + fate + ')' if fate != 'normal' else ''}")
        self.check_after("reboot")
        # kswap-accept.service: ConditionPathExists=/var/lib/kswap/trial
        if os.path.exists(n.path("var/lib/kswap/trial")) and self.rng.random() < 0.9:
            self.run_cmd(["accept"])

    def repair_grubenv(self):
        n = self.node
        if n.grubenv_backup is not None:
            with open(n.path("boot/grub/grubenv"), "wb") as f:
                f.write(n.grubenv_backup)
            n.grubenv_backup = None
            self.say("the operator repairs grubenv")

    def damage(self):
        n = self.node
        what = self.rng.choice(["truncate", "garbage", "lose", "grubenv"])
        if what == "grubenv":
            if n.grubenv_backup is None:
                with open(n.path("boot/grub/grubenv"), "rb") as f:
                    n.grubenv_backup = f.read()
                with open(n.path("boot/grub/grubenv"), "wb") as f:
                    f.write(b"saved_entry=0\n")
            self.say("damage: grubenv is no environment block")
            code, doc, err = n.status()
            if code != 1:
                self.fail(f"status with a damaged grubenv: exit {code}")
            return
        jp = n.path("var/lib/kswap/state.json")
        if not os.path.exists(jp):
            return
        if what == "lose":
            os.rename(jp, jp + ".lost")
            self.say("damage: the journal is moved away")
        else:
            with open(jp, "r+b") as f:
                if what == "truncate":
                    f.truncate(max(1, os.path.getsize(jp) // 3))
                else:
                    f.write(b"\x00garbage{")
            n.damaged_journal = True
            self.say(f"damage: the journal is {what}d")
        self.check_after("damage")

    # --- the generator

    def random_command(self):
        n, rng = self.node, self.rng
        kill = rng.random() < 0.12
        key = ["--key", kstest.XANMOD_KEY]
        choices = [
            (6, lambda: ["apply", "--deb", n.debs[NEW], "--yes"]),
            (2, lambda: ["apply", "--deb", n.debs[NEW2], "--yes"]),
            (3, lambda: ["apply", "--kernel", rng.choice([NEW, NEW2]), "--yes"]),
            (4, lambda: ["apply", *key, "--yes"]),
            (1, lambda: ["apply", "--deb", n.debs[NEW], "--yes", "--reboot"]),
            (1, lambda: ["apply", "--dry-run", *rng.choice([["--deb", n.debs[NEW]], key])]),
            (2, lambda: ["pin"]),
            (1, lambda: ["pin", rng.choice([NEW, OLD, NEW2]), "--force"]),
            (4, lambda: ["rollback"]),
            (2, lambda: ["rollback", "--purge"]),
            (1, lambda: ["rollback", "--reboot"]),
            (2, lambda: ["accept"]),
            (2, lambda: ["status", "--ack"]),
            (1, lambda: ["plan"]),
            (1, lambda: ["history"]),
        ]
        total = sum(w for w, _ in choices)
        x = rng.uniform(0, total)
        for w, f in choices:
            x -= w
            if x <= 0:
                args = f()
                break
        mutating = args[0] in ("apply", "pin", "rollback", "accept") and "--dry-run" not in args
        return args, kill and mutating

    def follow_next(self):
        n = self.node
        code, doc, err = n.status()
        nxt = doc.get("next")
        if not nxt:
            return False
        # printed to run when pasted after a --root run: with this root (then run as the
        # other commands are, the root added by run_cmd)
        host = kstest.unroot(nxt, n.root)
        if nxt.startswith("kswap ") and host == nxt:
            self.fail(f"the next step {nxt!r} does not carry --root {n.root}")
        nxt = host
        words = shlex.split(nxt)
        self.followed += 1
        if words == ["systemctl", "reboot"]:
            self.reboot("the next step")
            return True
        if words[0] in ("grub-editenv", "update-grub"):
            # GRUB's state cannot be read: the operator runs what status printed, on the root
            if words[0] == "grub-editenv":
                p = sh("grub-editenv", n.path(words[1].lstrip("/")), *words[2:])
            else:
                p = subprocess.run(["update-grub"], capture_output=True, text=True,
                                   env=kstest.env(KSWAP_ROOT=n.root))
            if p.returncode != 0:
                self.fail(f"the next step {nxt!r} failed: {p.stderr[-500:]}")
            n.grubenv_backup = None
            self.say(f"{nxt} (next step)")
            # GRUB's own default now: status's next step puts the promised kernel back
            code, doc, err = n.status()
            again = kstest.unroot(doc.get("next") or "", n.root)
            if again.startswith("kswap "):
                self.run_cmd(shlex.split(again)[1:], follow=True)
            else:
                self.check_after(nxt)
            return True
        if words[0] != "kswap":
            self.fail(f"status names a next step that is no command: {nxt!r}")
        if words[1:3] == ["status", "--wait"]:
            words += ["--timeout", "1"]
        self.run_cmd(words[1:], follow=True)
        return True

    def step(self):
        rng, n = self.rng, self.node
        x = rng.random()
        if n.reboots_requested() > 0:
            self.reboot("requested")
        elif x < 0.25:
            self.follow_next()
        elif x < 0.36:
            self.reboot("the operator")
        elif x < 0.40:
            self.damage()
        elif x < 0.42 and n.grubenv_backup is not None:
            self.repair_grubenv()
            self.check_after("repair")
        elif x < 0.44 and n.repo == n.repos["repo1"]:
            n.repo = n.repos["repo2"]
            self.say(f"the repository now offers {NEW2}")
        else:
            args, kill = self.random_command()
            self.run_cmd(args, kill=kill)
            if n.damaged_journal and n.journal() is not None:
                n.damaged_journal = False

    def run(self):
        try:
            self.check_after("start")
            for _ in range(self.steps):
                self.step()
        finally:
            self.node.close()
        return self.counts, len(self.trace), self.followed, self.node.costs


def run_worker(exe, work, wid, seed, steps, debs, repos, verbose):
    m = Model(exe, work, wid, seed, steps, debs, repos, verbose)
    try:
        counts, n, followed, costs = m.run()
        return {"seed": seed, "steps": n, "followed": followed, "counts": counts,
                "costs": {k: sum(v) for k, v in costs.items()}, "error": None}
    except Failure as e:
        return {"seed": seed, "steps": len(m.trace), "error": str(e)}
    except Exception as e:  # a bug of the model itself: said with the same seed and trace
        import traceback
        return {"seed": seed, "steps": len(m.trace),
                "error": f"seed {seed}, step {len(m.trace)}: the model failed: "
                         f"{traceback.format_exc()}\n  sequence:\n    " +
                         "\n    ".join(m.trace[-40:])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kswap")
    ap.add_argument("--steps", type=int, default=int(os.environ.get("KS_MODEL_STEPS", "800")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("KS_MODEL_SEED", "0")) or None)
    ap.add_argument("--workers", type=int, default=int(os.environ.get("KS_MODEL_WORKERS", "2")))
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    exe = os.path.abspath(a.kswap)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 2**31)
    work = tempfile.mkdtemp(prefix="kswap-model.")
    t0 = time.monotonic()
    debs, repos = build_inputs(work)
    # The fixed seeds first (short runs, regression cases), then the random run split over the
    # workers, each with its own seed derived from the run's.
    jobs = [(s, steps) for s, steps in FIXED_SEEDS]
    per = (a.steps + a.workers - 1) // a.workers
    jobs += [(seed * 1000 + w, per) for w in range(a.workers)]
    print(f"model: seed {seed}, {a.steps} steps over {a.workers} workers "
          f"(+{len(FIXED_SEEDS)} fixed seeds); replay with --seed {seed}", flush=True)
    failed = 0
    total = 0
    counts = {}
    costs = {}
    followed = 0
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        futs = [ex.submit(run_worker, exe, work, i, s, n, debs, repos, a.verbose)
                for i, (s, n) in enumerate(jobs)]
        for f in futs:
            r = f.result()
            total += r["steps"]
            if r["error"]:
                failed += 1
                print("FAIL " + r["error"], flush=True)
                continue
            followed += r["followed"]
            for k, v in r["counts"].items():
                counts[k] = counts.get(k, 0) + v
            for k, v in r["costs"].items():
                costs[k] = costs.get(k, 0) + v
            print(f"ok   worker seed {r['seed']}: {r['steps']} steps", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - t0
    print("results: " + ", ".join(f"{c} {r}: {n}" for (c, r), n in sorted(counts.items(),
                                                                          key=str)))
    print("seconds in kswap by command: " + ", ".join(f"{k} {v:.0f}" for k, v in
                                                      sorted(costs.items())))
    print(f"model: seed {seed}, {total} steps ({followed} next steps run as printed), "
          f"{took:.0f} s, {'ok' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
