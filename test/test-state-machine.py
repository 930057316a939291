#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 31's examples, one scenario each, on copies of the example root with the fakes first on
PATH: a refused command changes nothing, every state has a way out that the printed next step
reaches, and the command log records what changed. Usage: test-state-machine.py KSWAP [NAME...]"""
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import NEW, NEW_PATH, OLD, OLD_PATH, check

exe = os.path.abspath(sys.argv[1])
only = sys.argv[2:]
work = tempfile.mkdtemp(prefix="kswap-states.")
META = "linux-xanmod-lts-x64v3"
CONF = "[accept]\nservices = xray.service\ntimeout = 2\ninterval = 1\n"
boots = [0]


def scenario(name):
    return not only or name in only


def kswap(root, *args, **kw):
    """kswap --root ROOT --json ARGS; the document's next step as printed in next_printed (with
    its --root, so that it runs when pasted) and for the host in next."""
    p, d = kstest.run_kswap(exe, root, "--json", *args, **kw)
    if isinstance(d, dict) and d.get("next"):
        d["next_printed"] = d["next"]
        d["next"] = kstest.unroot(d["next"], root)
    return p, d


def put(root, rel, text):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


def read(root, rel):
    try:
        with open(os.path.join(root, rel)) as f:
            return f.read()
    except OSError:
        return None


def tree(root):
    """Every file but the fakes' logs and the lock's pid, by content."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if rel.startswith(("var/log/", "var/lib/kswap/lock")):
                continue
            out[rel] = "->" + os.readlink(p) if os.path.islink(p) else \
                hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def changed(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def fresh(name):
    r = os.path.join(work, name)
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    put(r, "etc/kswap/kswap.conf", CONF)
    put(r, "run/fake-units/xray.service", "active\n")
    return r


def boot_into(root, release, trial=False):
    boots[0] += 1
    put(root, "proc/sys/kernel/osrelease", release + "\n")
    put(root, "proc/sys/kernel/random/boot_id", "%08x-0000-4000-8000-000000000000\n" % boots[0])
    put(root, "proc/cmdline", f"BOOT_IMAGE=/vmlinuz-{release} ro" +
        (" kswap.trial=1 kswap.deadline=900" if trial else "") + "\n")
    shutil.rmtree(os.path.join(root, "run/motd.d"), ignore_errors=True)


def grubenv(root):
    p = subprocess.run(["grub-editenv", os.path.join(root, "boot/grub/grubenv"), "list"],
                       capture_output=True, text=True)
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


def consume_one_shot(root):
    subprocess.run(["grub-editenv", os.path.join(root, "boot/grub/grubenv"), "unset",
                    "next_entry"], check=True)


def status(root):
    p, d = kswap(root, "status")
    return p.returncode, d or {}


def log_commands(root):
    t = read(root, "var/lib/kswap/commands.json")
    return [e["command"] for e in json.loads(t)["commands"]] if t else []


def refused_unchanged(root, args, what, want_exit=2, want_result="refused", **kw):
    """args refused (or unchanged) and not a byte of the root changed."""
    before = tree(root)
    p, d = kswap(root, *args, **kw)
    after = tree(root)
    check(p.returncode == want_exit and d and d.get("result") == want_result and before == after,
          f"{what}: exit {want_exit}, {want_result}, no byte changed",
          f"exit {p.returncode} {d and d.get('result')} changed {changed(before, after)}\n"
          f"{p.stderr[-1200:]}")
    return d


def next_runs(root, what, **kw):
    """status's next step, run as printed (its words; kswap with the root): exit 0."""
    _, d = status(root)
    nxt = d.get("next_printed")
    words = shlex.split(nxt or "")
    if not words or words[0] != "kswap":
        check(False, f"{what}: next step '{nxt}' is a kswap command")
        return None, None
    # as pasted after a --root run: the command names the same root
    check(words[1:3] == ["--root", root], f"{what}: next step '{nxt}' carries --root", words)
    words = ["kswap"] + words[3:]
    p, dd = kswap(root, *words[1:], **kw)
    check(p.returncode == 0, f"{what}: '{nxt}' runs as printed, exit 0", p.stderr[-1200:])
    return nxt, dd


deb = os.path.join(work, f"linux-image-{NEW}.deb")
other_deb = os.path.join(work, "other.deb")
NEW2 = NEW.replace("6.18.45", "6.18.46")
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                "builtin"], check=True, capture_output=True)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW2, other_deb, "--bbr",
                "builtin"], check=True, capture_output=True)
repo = os.path.join(work, "repo")
os.makedirs(repo)
shutil.copy(deb, repo)
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW,
                os.path.join(repo, META + ".deb"), "--meta", "--package", META],
               check=True, capture_output=True)


def pinned_from_repository(name):
    """apply from the repository, the trial boot, accept: pinned."""
    r = fresh(name)
    p, d = kswap(r, "apply", "--key", kstest.XANMOD_KEY, "--yes", KSWAP_FAKE_DEBS=repo)
    check(p.returncode == 0 and d and d.get("state") == "armed", f"{name}: apply from the repository",
          p.stderr[-1500:])
    consume_one_shot(r)
    boot_into(r, NEW, trial=True)
    p, d = kswap(r, "accept")
    check(p.returncode == 0 and d and d.get("pinned"), f"{name}: accept pins", p.stderr[-1500:])
    return r


if scenario("pinned-nothing-newer"):
    # A bootstrap or a playbook run twice: apply again on a node pinned to the repository's
    # newest kernel answers unchanged, exit 0, writes nothing; status stays 0.
    r = pinned_from_repository("nothing-newer")
    d = refused_unchanged(r, ["apply", "--key", kstest.XANMOD_KEY, "--yes"],
                          "apply --yes again, pinned, nothing newer", want_exit=0,
                          want_result="unchanged", KSWAP_FAKE_DEBS=repo)
    check(d and "nothing newer" in (d.get("error") or ""), "... and says the repository offers "
          "nothing newer", d and d.get("error"))
    code, s = status(r)
    check(code == 0 and s.get("state") == "pinned" and s.get("next") is None,
          "status: pinned, exit 0, nothing to do", s.get("next"))
    refused_unchanged(r, ["apply", "--dry-run", "--key", kstest.XANMOD_KEY],
                      "apply --dry-run on the same node", want_exit=0, want_result="unchanged",
                      KSWAP_FAKE_DEBS=repo)

if scenario("purge-refused"):
    # rollback --purge on a pinned node that runs the new kernel: refused, pinned stays pinned.
    r = pinned_from_repository("purge-refused")
    refused_unchanged(r, ["rollback", "--purge"], "rollback --purge while the new kernel runs")
    code, s = status(r)
    check(code == 0 and s.get("state") == "pinned" and s.get("next") is None,
          "status still pinned, exit 0, no rollback advised", s)

if scenario("pin-grub-default-0"):
    # pin RELEASE --force with GRUB_DEFAULT=0 (no kswap drop-in): refused, no journal at all.
    r = fresh("pin-default-0")
    d = refused_unchanged(r, ["pin", "6.8.0-45-generic", "--force"], "pin --force, GRUB_DEFAULT=0")
    check(d and "GRUB_DEFAULT=saved" in (d.get("error") or ""), "... saying why", d and d.get("error"))
    check(not os.path.exists(os.path.join(r, "var/lib/kswap/state.json")), "... no journal written")
    code, s = status(r)
    check(code == 0 and s.get("state") == "idle", "status: idle, exit 0", s)

if scenario("damaged-grubenv"):
    # A damaged grubenv: rollback fails (exit 1) and writes nothing; status names the repair.
    r = fresh("damaged-grubenv")
    p, d = kswap(r, "apply", "--deb", deb, "--yes")
    check(p.returncode == 0, "apply --deb arms", p.stderr[-800:])
    with open(os.path.join(r, "boot/grub/grubenv"), "wb") as f:
        f.write(b"saved_entry=0\n")
    refused_unchanged(r, ["rollback"], "rollback with a damaged grubenv", want_exit=1,
                      want_result="failed")
    code, s = status(r)
    check(code == 1 and s.get("state") == "error" and
          s.get("next") == "grub-editenv /boot/grub/grubenv create",
          "status: exit 1, next: recreate grubenv", s.get("next"))
    j = json.loads(read(r, "var/lib/kswap/state.json"))
    check(j["state"] == "armed", "the journal still says armed", j["state"])
    # the repair as printed, then status's next step puts the promised kernel back
    subprocess.run(["grub-editenv", os.path.join(r, "boot/grub/grubenv"), "create"], check=True)
    code, s = status(r)
    check(s.get("next") == "kswap rollback" and
          any(f["id"] == "grub.next-boots-changed" for f in s.get("findings", [])),
          "after the repair: the next boots are not kswap's, next: kswap rollback", s.get("next"))
    next_runs(r, "repaired grubenv")
    check(grubenv(r).get("saved_entry") == OLD_PATH and "next_entry" not in grubenv(r),
          "rollback made the old kernel the default", grubenv(r))

if scenario("idle-grubenv-recreated"):
    # No swap (idle), grubenv recreated empty: the default names no entry, GRUB falls back to its
    # first entry, which the next kernel installed takes over. status says so (exit 3) and its
    # next step makes the running kernel the default (test-model seed 29899787 found a node left
    # so after the repair of a damaged grubenv with its journal lost).
    r = fresh("idle-grubenv-recreated")
    # a swap made GRUB's default saved_entry, was rolled back, and its journal was lost
    p, _ = kswap(r, "apply", "--deb", deb, "--yes")
    consume_one_shot(r)
    p2, _ = kswap(r, "rollback")
    check(p.returncode == 0 and p2.returncode == 0, "apply --deb, then rollback", p.stderr + p2.stderr)
    os.remove(os.path.join(r, "var/lib/kswap/state.json"))
    os.remove(os.path.join(r, "boot/grub/grubenv"))
    subprocess.run(["grub-editenv", os.path.join(r, "boot/grub/grubenv"), "create"], check=True)
    code, s = status(r)
    running = read(r, "proc/sys/kernel/osrelease").strip()
    check(code == 3 and s.get("state") == "idle" and s.get("next") == f"kswap pin {running} --force"
          and "falls back to its first entry" in (s.get("next_reason") or ""),
          "idle, default names no entry: exit 3, next: kswap pin RUNNING --force",
          (code, s.get("next"), s.get("next_reason")))
    next_runs(r, "idle, default unresolved")
    fc = [(b.get("kernel"), b.get("fell_back")) for b in (status(r)[1].get("grub") or {}).get("forecast", [])]
    code, s = status(r)
    check(code == 0 and fc[:3] == [(running, False)] * 3 and grubenv(r).get("saved_entry"),
          "... after the pin: the running kernel on every boot by name, exit 0", (code, fc, grubenv(r)))

if scenario("pin-cut"):
    # The trial fell back, the operator pins the new kernel anyway (pin --force) and the pin is
    # killed inside update-grub, after GRUB's default names the new kernel and before the
    # journal says pinned (test-model seed 11 found it): status says the pin began and did not
    # end, with no drift, and its next step finishes it.
    r = fresh("pin-cut")
    p, _ = kswap(r, "apply", "--deb", deb, "--yes")
    consume_one_shot(r)
    boot_into(r, OLD)
    p2, _ = kswap(r, "accept")
    check(p.returncode == 0 and p2.returncode == 3, "apply, the trial fell back", p.stderr + p2.stderr)
    cut = kstest.kill_inside_update_grub(exe, r, ["pin", NEW, "--force"], NEW_PATH)
    code, s = status(r)
    j = s.get("journal") or {}
    check(cut and code == 3 and j.get("state") == "rolled-back" and
          s.get("next") == f"kswap pin {NEW} --force" and "began and did not end" in (s.get("next_reason") or "")
          and not any(f["id"] == "grub.next-boots-changed" for f in s.get("findings", [])),
          "pin killed after GRUB's default: status exit 3, no drift, next: kswap pin NEW --force",
          (cut, code, j.get("state"), s.get("next"), s.get("findings")))
    next_runs(r, "pin cut")
    code, s = status(r)
    check(code == 0 and (s.get("journal") or {}).get("state") == "pinned" and
          grubenv(r).get("saved_entry") == NEW_PATH, "... the pin run again: pinned, exit 0",
          (code, s.get("next"), grubenv(r)))

for outcome in ("health-failed", "fell-back", "trial-hung"):
    if not scenario(outcome):
        continue
    # A failed trial is closed by status --ack or by rollback; then status exits 0, the login
    # line is gone and stays gone at the next boot.
    for closer in (["status", "--ack"], ["rollback", "--purge"]):
        name = f"{outcome}-{closer[0]}"
        r = fresh(name)
        p, d = kswap(r, "apply", "--deb", deb, "--yes")
        consume_one_shot(r)
        if outcome == "health-failed":
            boot_into(r, NEW, trial=True)
            put(r, "run/fake-units/xray.service", "failed\n")
            cfg = os.path.join(work, "stay.conf")
            put(work, "stay.conf", CONF + "on_failure = stay\n")
            p, d = kswap(r, "--config", cfg, "accept")
            check(p.returncode == 3 and d and d["outcome"] == "health-failed",
                  f"{name}: health-failed, exit 3", p.stderr[-800:])
            # on_failure = stay: the trial kernel keeps running, its deadline stops
            log = read(r, "var/log/fake-systemctl.log") or ""
            check("stop --no-block kswap-trial-deadline.service" in log,
                  f"{name}: stay stops kswap-trial-deadline.service (and with it the watchdog)",
                  log[-600:])
            check(not os.path.exists(os.path.join(r, "run/fake-reboot-requested")),
                  f"{name}: no reboot")
            boot_into(r, OLD)
            p, d = kswap(r, "accept")  # kswap-accept.service at the boot after: reports again
        else:
            if outcome == "trial-hung":
                put(r, "var/lib/kswap/trial-stages", "userspace 14\nemergency 31\ndeadline 900\n")
            boot_into(r, OLD)
            p, d = kswap(r, "accept")
            check(p.returncode == 3 and d and d["outcome"] == outcome, f"{name}: {outcome}, exit 3",
                  p.stderr[-800:])
        code, s = status(r)
        check(code == 3 and s.get("next") == "kswap status --ack",
              f"{name}: status exits 3, next: kswap status --ack", (code, s.get("next")))
        check(os.path.exists(os.path.join(r, "run/motd.d/kswap")), f"{name}: the login line is there")
        p, d = kswap(r, *closer)
        check(p.returncode == 0, f"{name}: {' '.join(closer)} exit 0", p.stderr[-800:])
        code, s = status(r)
        check(code == 0 and s.get("next") in (None, "kswap rollback --purge"),
              f"{name}: closed: status exits 0, next {s.get('next')}", s.get("next_reason"))
        check(not os.path.exists(os.path.join(r, "run/motd.d/kswap")) and
              not os.path.exists(os.path.join(r, "var/lib/kswap/trial")),
              f"{name}: the login line and the trial flag are gone")
        boot_into(r, OLD)
        code, s = status(r)
        check(code == 0 and not os.path.exists(os.path.join(r, "run/motd.d/kswap")),
              f"{name}: after the next boot too (kswap-accept.service no longer runs)", code)
        if s.get("next"):
            next_runs(r, f"{name} closed")
        code, s = status(r)
        check(code == 0 and s.get("next") is None, f"{name}: at the end nothing to do", s.get("next"))

if scenario("lost-journal"):
    # The journal truncated and moved aside while a trial is armed: status and plan say so,
    # rollback disarms it.
    r = fresh("lost-journal")
    p, d = kswap(r, "apply", "--deb", deb, "--yes")
    jp = os.path.join(r, "var/lib/kswap/state.json")
    with open(jp, "r+b") as f:
        f.truncate(40)
    os.rename(jp, jp + ".moved")
    code, s = status(r)
    ids = [f["id"] for f in s.get("findings", [])]
    check(code == 3 and s.get("state") == "idle" and "trial.orphaned" in ids and
          s.get("next") == "kswap rollback", "status: the orphaned trial, exit 3, next rollback",
          (code, ids, s.get("next")))
    p, d = kswap(r, "plan")
    check(d and any(f["id"] == "trial.orphaned" for f in d.get("findings", [])),
          "plan reports trial.orphaned")
    nxt, d = next_runs(r, "lost journal")
    e = grubenv(r)
    check("next_entry" not in e and e.get("saved_entry") == OLD_PATH and
          not os.path.exists(os.path.join(r, "etc/grub.d/01_kswap_trial")) and
          "kswap" not in read(r, "boot/grub/grub.cfg").replace("kswap.cfg", ""),
          "rollback disarmed it: no next_entry, no trial entries, the old kernel the default", e)
    code, s = status(r)
    check(code == 0 and s.get("state") == "rolled-back", "status: rolled-back, exit 0", s)

if scenario("damaged-journal"):
    r = fresh("damaged-journal")
    p, d = kswap(r, "apply", "--deb", deb, "--yes")
    jp = os.path.join(r, "var/lib/kswap/state.json")
    with open(jp, "wb") as f:
        f.write(b"{\"version\": 1, \"state\": \"ar")
    code, s = status(r)
    check(code == 1 and s.get("next") == "kswap rollback", "status: exit 1, next: kswap rollback", s)
    nxt, d = next_runs(r, "damaged journal")
    check(read(r, "var/lib/kswap/state.json.damaged") == "{\"version\": 1, \"state\": \"ar",
          "the damaged journal kept aside, byte for byte")
    check("next_entry" not in grubenv(r) and grubenv(r).get("saved_entry") == OLD_PATH,
          "the trial disarmed, the old kernel the default", grubenv(r))
    code, s = status(r)
    check(code == 0 and s.get("state") == "rolled-back", "status: rolled-back, exit 0", s)

if scenario("next-steps"):
    r = fresh("next-steps")
    p, d = kswap(r, "apply", "--dry-run", "--deb", deb)
    check(p.returncode == 0 and d and d.get("next") == f"kswap apply --deb {deb} --yes",
          "apply --dry-run --deb: next keeps --deb and adds --yes", d and d.get("next"))
    p, d = kswap(r, *shlex.split(d["next"])[1:])
    check(p.returncode == 0 and d and d.get("state") == "armed", "... and runs as printed")
    code, s = status(r)
    check(code == 4 and s.get("next") == f"kswap apply --deb {deb} --yes --reboot",
          "armed: status says apply with its --deb, --yes --reboot", s.get("next"))
    # another trial while this one is armed: refused, naming the armed one
    d = refused_unchanged(r, ["apply", "--deb", other_deb, "--yes"], "apply of another kernel "
                          "while a trial is armed")
    check(d and NEW in (d.get("error") or "") and "rollback" in (d.get("error") or ""),
          "... naming the armed trial and the way out", d and d.get("error"))
    refused_unchanged(r, ["apply", "--deb", deb, "--yes"], "the same apply again", want_exit=0,
                      want_result="unchanged")
    # the printed next step, without a terminal: the last look, then the reboot
    nxt, d = next_runs(r, "armed")
    reb = read(r, "run/fake-reboot-requested") or ""
    check(d and d.get("result") == "done" and len(reb.splitlines()) == 1,
          "status's next step reboots into the trial (no tty needed)", d and d.get("result"))

if scenario("stopped-apply"):
    # An apply stopped half-way resumes only as itself, and status names it.
    r = fresh("stopped")
    p, d = kswap(r, "apply", "--deb", deb, "--yes", KSWAP_FAKE_APT_FAIL="install")
    check(p.returncode == 1 and d and d.get("state") == "failed", "apt fails: the apply failed")
    code, s = status(r)
    check(code == 3 and s.get("next") == "kswap rollback", "failed: next rollback", s.get("next"))
    j = json.loads(read(r, "var/lib/kswap/state.json"))
    check(j.get("source") == "deb:" + deb, "the journal records the apply's source", j.get("source"))

if scenario("rollback-cut"):
    # rollback --purge cut after it removed the trial's entries (found by test/test-model.py:
    # a kill left next_entry naming the trial entry update-grub had removed, and GRUB's answer
    # to that, entry 0, is the newest kernel). Cut here inside apt-get purge (its pre hook
    # kills kswap): GRUB is set before the entries go.
    r = fresh("rollback-cut")
    p, d = kswap(r, "apply", "--deb", deb, "--yes")
    check(p.returncode == 0 and grubenv(r).get("next_entry") == "kswap-trial", "armed")
    p, d = kswap(r, "rollback", "--purge", KSWAP_FAKE_APT_PRE_HOOK="kill -9 $(ps -o ppid= -p $PPID)")
    check(p.returncode == -9, "rollback --purge killed inside apt-get purge", p.returncode)
    code, s = status(r)
    fc = [(b["kernel"], b["one_shot"]) for b in (s.get("grub") or {}).get("forecast", [])]
    check(fc == [(OLD, False)] * 3, "every boot starts the old kernel, no one-shot", fc)
    nxt, d = next_runs(r, "after the cut")
    code, s = status(r)
    check(code == 0 and s.get("state") == "rolled-back", "the rollback finishes", s.get("state"))

if scenario("history"):
    r = fresh("history")
    before = log_commands(r)
    kswap(r, "apply", "--deb", deb, "--yes")
    kswap(r, "apply", "--deb", other_deb, "--yes")  # refused: no entry
    kswap(r, "pin")                                 # refused: no entry
    kswap(r, "rollback")
    kswap(r, "rollback")                            # unchanged: no entry
    cmds = log_commands(r)
    check(before == [] and cmds == [f"apply --deb {deb} --yes", "rollback"],
          "the command log: apply and rollback, not the refusals nor the unchanged rollback", cmds)
    p, d = kswap(r, "history")
    check(p.returncode == 0 and d and d["command"] == "history" and
          [e["command"] for e in d["commands"]] == ["rollback", f"apply --deb {deb} --yes"] and
          d["commands"][0]["result"] == "done" and d["commands"][0]["state"] == "rolled-back" and
          d["commands"][0]["swap_id"] and d["log_file"] == "/var/lib/kswap/commands.json",
          "kswap history --json: newest first, with result, state and swap_id", d)
    p = subprocess.run([exe, "--root", r, "history"], capture_output=True, text=True,
                       env=kstest.env())
    check(p.returncode == 0 and "kswap rollback" in p.stdout and "RESULT" in p.stdout,
          "kswap history: a table", p.stdout)
    p, d = kswap(r, "history", "--swaps")
    check(p.returncode == 0 and d and d.get("history") is not None, "history --swaps: the swaps")
    put(r, "var/lib/kswap/commands.json", "{not json")
    p, d = kswap(r, "history")
    check(p.returncode == 1 and d and d.get("result") == "error" and "commands.json" in d["error"],
          "a damaged log: exit 1, named", d)
    p, d = kswap(r, "apply", "--deb", deb, "--yes")
    check(read(r, "var/lib/kswap/commands.json.damaged") == "{not json" and
          log_commands(r) == [f"apply --deb {deb} --yes"] and
          any(f["id"] == "commands.unwritable" for f in d.get("findings", [])),
          "the next command moves it aside, starts a new log, and warns", d and d.get("findings"))

shutil.rmtree(work, ignore_errors=True)
print("state-machine:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
