#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Hostile input, round 2 (issue 34), through the command line on copies of the example root,
one table per class:

OPENS (items 3 and 4): a FIFO, a socket or a device node where kswap expects a file (the lock,
the journal, grub.cfg, grubenv, os-release) is refused with its own words, never blocks, and
every wait ends by its own timeout (status --wait --timeout 5 on a trial-ok, trial-booted
journal with a FIFO for a lock, or a lock another process holds). The C side (that such a file
is never even opened) is test/unit/test-open-types.c.

OUTPUT (items 5 and 6): strings from data with ESC, BEL, CSI, C1, a bidirectional override and
the byte 0xff (an interface's name, the journal's reason, the history's, grubenv values,
PRETTY_NAME, GRUB titles, the previous boot's journal) reach check, accept, status, history and
plan: the terminal gets no control byte but newlines, valid UTF-8 in a UTF-8 locale and ASCII
in the C locale, and the data shows escaped ("\\x1b"); --json is one valid UTF-8 document (0xff
as U+FFFD), and accept's previous_boot, cut at 4000 bytes, is cut between characters.

WORDS (item 8): kswap's own words (kswap.trial=, kswap.deadline=, kswap.softdog=) on the
node's own command line or in GRUB_CMDLINE_LINUX*: plan warns boot.kswap-words and names them;
the armed trial's own boot and look-alike words do not.

usage: test-hostile-input.py KSWAP"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import kstest
from kstest import check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-hostile-")
HOSTILE = b"x\x1b[31m\x07\x1b]0;owned\x07\xc2\x9b2J\xe2\x80\xae\xff"  # ESC, BEL, OSC, C1, RLO, 0xff
IFNAME = b"wg\x1b[31m\x07\xff"
OLD, NEW = kstest.OLD, kstest.NEW


def fresh(name):
    r = os.path.join(work, name)
    shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
    return r


def put(root, path, data, mode=0o644):
    f = os.path.join(root.encode(), path if isinstance(path, bytes) else path.encode())
    os.makedirs(os.path.dirname(f), exist_ok=True)
    with open(f, "wb") as fh:
        fh.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(f, mode)


def run(root, *args, locale="C.UTF-8", timeout=60, **env):
    """kswap --root ROOT ARGS: (returncode, stdout bytes, stderr bytes, seconds); returncode None
    when it did not end within timeout (a hang)."""
    t = time.monotonic()
    try:
        p = subprocess.run([exe, "--root", root, *args], capture_output=True, timeout=timeout,
                           env=kstest.env(LC_ALL=locale, **env))
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or b"", e.stderr or b"", time.monotonic() - t
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t


def journal(root, **fields):
    j = {"version": 1, "old_kernel": OLD, "new_kernel": NEW, "old_path": kstest.OLD_PATH,
         "new_path": kstest.NEW_PATH}
    j.update(fields)
    put(root, "var/lib/kswap/state.json", json.dumps(j))


# ---------------------------------------------------------------- OPENS

def fifo(root, path):
    p = os.path.join(root, path)
    if os.path.lexists(p):
        os.unlink(p)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    os.mkfifo(p)


def sock(root, path):
    p = os.path.join(root, path)
    if os.path.lexists(p):
        os.unlink(p)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    s.close()


def chrdev(major, minor):
    def make(root, path):
        p = os.path.join(root, path)
        if os.path.lexists(p):
            os.unlink(p)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.mknod(p, 0o600 | 0o020000, os.makedev(major, minor))
    return make


def trial_ok(root):
    journal(root, state="trial-booted", outcome="trial-ok",
            armed_boot_id="11111111-2222-4333-8444-555555555555", armed_btime=1700000000)


LOCK = "var/lib/kswap/lock"
# (name, what to put where, journal setup, argv, exit codes allowed, stderr fragment)
OPENS = [
    ("a FIFO lock: apply --dry-run refuses", LOCK, fifo, None, ["apply", "--dry-run"], {1},
     "is a FIFO, not a regular file"),
    ("a FIFO lock: status --wait --timeout 5 on trial-ok, trial-booted ends", LOCK, fifo,
     trial_ok, ["status", "--wait", "--timeout", "5"], {0, 4}, None),
    ("a socket lock: apply --dry-run refuses", LOCK, sock, None, ["apply", "--dry-run"], {1},
     "is a socket, not a regular file"),
    ("a device lock (1:3): apply --dry-run refuses", LOCK, chrdev(1, 3), None,
     ["apply", "--dry-run"], {1}, "is a device node, not a regular file"),
    ("a watchdog (10:130) lock: apply --dry-run refuses", LOCK, chrdev(10, 130), None,
     ["apply", "--dry-run"], {1}, "is a device node, not a regular file"),
    ("a device lock (1:3): rollback refuses, no lock made on it", LOCK, chrdev(1, 3), trial_ok,
     ["rollback"], {1, 2}, "is a device node, not a regular file"),
    ("a FIFO journal: status says so", "var/lib/kswap/state.json", fifo, None, ["status"], {1},
     "is a FIFO, not a regular file"),
    ("a device (5:0) as grub.cfg: plan names it, not ENXIO", "boot/grub/grub.cfg",
     chrdev(5, 0), None, ["plan"], {1, 2}, "is a device node, not a regular file"),
    ("a FIFO grubenv: status names it", "boot/grub/grubenv", fifo, None, ["status"], {1, 2},
     "is a FIFO, not a regular file"),
    ("a FIFO os-release: plan names it", "etc/os-release", fifo, None, ["plan"], {1, 2},
     "is a FIFO"),
]


def test_opens():
    can_mknod = os.geteuid() == 0
    for i, (name, path, make, setup, argv, codes, fragment) in enumerate(OPENS):
        if make not in (fifo, sock) and not can_mknod:
            print(f"skip {name}: mknod needs root")
            continue
        r = fresh(f"open-{i}")
        if setup:
            setup(r)
        make(r, path)
        rc, out, err, secs = run(r, *argv, timeout=60)
        text = (out + err).decode("utf-8", "replace")
        check(rc is not None, f"{name}: ends (not blocked)", f"after {secs:.0f} s: {text[-1500:]}")
        check(rc in codes, f"{name}: exit {sorted(codes)}", f"exit {rc}: {text[-1500:]}")
        if fragment:
            check(fragment in text, f"{name}: says '{fragment}'", text[-1500:])
        check("No such device or address" not in text and "Illegal seek" not in text,
              f"{name}: no raw errno of an open attempt", text[-1500:])

    # status --wait bounded by its timeout while another process holds the lock (a pin that
    # never comes): it ends, with the trial's outcome.
    r = fresh("open-held")
    trial_ok(r)
    os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
    holder = subprocess.Popen(["flock", os.path.join(r, LOCK), "sleep", "300"])
    try:
        time.sleep(0.5)
        rc, out, err, secs = run(r, "status", "--wait", "--timeout", "5", timeout=60)
        check(rc is not None, "held lock: status --wait --timeout 5 ends",
              f"after {secs:.0f} s")
        print(f"     (ended after {secs:.1f} s)")
    finally:
        holder.kill()
        holder.wait()


# ---------------------------------------------------------------- OUTPUT

def iface(root):
    put(root, b"sys/class/net/" + IFNAME + b"/operstate", "up\n")
    put(root, b"sys/class/net/" + IFNAME + b"/flags", "0x1003\n")


def reason(root):
    journal(root, state="failed", reason=HOSTILE.decode("utf-8", "surrogateescape"))


def history(root):
    h = {"version": 1, "swaps": [{
        "id": 1, "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:10:00Z",
        "from": {"release": OLD}, "to": {"release": NEW + "\x1b[2J"},
        "outcome": "health-failed", "reason": HOSTILE.decode("utf-8", "surrogateescape"),
        "by": "root\x07"}]}
    put(root, "var/lib/kswap/history.json",
        json.dumps(h, ensure_ascii=False).encode("utf-8", "surrogateescape"))


def grubenv(root):
    env = b"# GRUB Environment Block\n# WARNING: Do not edit this file by tools other than grub-editenv!!!\n"
    env += b"saved_entry=" + HOSTILE + b"\nnext_entry=" + IFNAME + b"\n"
    env += b"#" * (1024 - len(env))
    put(root, "boot/grub/grubenv", env)


def pretty_name(root):
    for f in ("etc/os-release", "usr/lib/os-release"):
        p = os.path.join(root, f)
        if os.path.islink(p):
            continue
        text = open(p, "rb").read()
        text = text.replace(b'PRETTY_NAME="Ubuntu 24.04.3 LTS"', b'PRETTY_NAME="' + HOSTILE + b'"')
        put(root, f, text)


def grub_title(root):
    p = os.path.join(root, "boot/grub/grub.cfg")
    text = open(p, "rb").read().replace(b"menuentry 'Ubuntu'", b"menuentry 'Ubuntu" + HOSTILE + b"'", 1)
    put(root, "boot/grub/grub.cfg", text)


def fell_back(root):
    """An armed trial that came back to the old kernel, the previous boot's journal 4001 bytes
    with a 2-byte character across byte 4000; an interface of the snapshot with a hostile
    name."""
    iface(root)
    journal(root, state="armed", armed_boot_id="11111111-2222-4333-8444-555555555555",
            armed_btime=1700000000,
            running={"kernel": OLD, "items": ["interface:" + IFNAME.decode("utf-8", "surrogateescape")]})
    put(root, "var/lib/kswap/trial", NEW + "\n")
    put(root, "var/log/fake-journal-previous-boot", b"a" * 3999 + "\u00e9".encode() + b"\n" + HOSTILE)


# (name, setup, argv, the data's escaped form that must show in the human output or None)
OUTPUT = [
    ("check: an interface named ESC BEL 0xff", iface, ["check"], "wg\\x1b[31m\\x07"),
    ("status: the journal's reason", reason, ["status"], "x\\x1b[31m\\x07\\x1b]0;owned"),
    ("status --history: a record's reason and release", history, ["status", "--history"],
     "\\x1b[2J"),
    ("status: grubenv values in the forecast and findings", grubenv, ["status"],
     "'wg\\x1b[31m\\x07\\xff'"),
    ("plan: PRETTY_NAME", pretty_name, ["plan"], "x\\x1b[31m"),
    ("plan: a GRUB title", grub_title, ["plan"], None),
    ("accept: a trial that fell back, hostile snapshot and previous boot", fell_back,
     ["accept", "--no-reboot"], None),
]


def terminal_ok(name, data, locale):
    """No byte below 0x20 but a newline, no DEL; valid UTF-8, or ASCII in the C locale."""
    bad = sorted({b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f})
    check(not bad, f"{name} [{locale}]: no control byte reaches the terminal",
          f"bytes {[hex(b) for b in bad]}: {data[-1500:]!r}")
    if locale == "C":
        high = sorted({b for b in data if b >= 0x80})
        check(not high, f"{name} [C]: ASCII only", f"bytes {[hex(b) for b in high][:10]}")
    else:
        try:
            data.decode("utf-8")
            ok = True
        except UnicodeDecodeError as e:
            ok, data = False, repr(e)
        check(ok, f"{name} [{locale}]: valid UTF-8", data)


def json_ok(name, data):
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        check(False, f"{name} [--json]: one valid UTF-8 JSON document", f"{e}: {data[-800:]!r}")
        return None
    check(True, f"{name} [--json]: one valid UTF-8 JSON document")
    return doc


def test_output():
    for i, (name, setup, argv, shown) in enumerate(OUTPUT):
        r = fresh(f"out-{i}")
        setup(r)
        for locale in ("C.UTF-8", "C"):
            rc, out, err, _ = run(r, *argv, locale=locale)
            check(rc is not None, f"{name} [{locale}]: ends")
            terminal_ok(name, out + err, locale)
            if shown:
                check(shown.encode() in out + err, f"{name} [{locale}]: shows '{shown}'",
                      (out + err)[-1500:])
        r = fresh(f"out-{i}-json")
        setup(r)
        rc, out, err, _ = run(r, "--json", *argv)
        terminal_ok(name + " (stderr of --json)", err, "C.UTF-8")
        doc = json_ok(name, out)
        if doc and setup is fell_back:
            prev = doc.get("previous_boot") or ""
            check(len(prev.encode()) <= 4000 and prev.startswith("a" * 3999) and "\ufffd" not in prev,
                  f"{name}: previous_boot cut between characters at most 4000 bytes",
                  prev[-20:])



def test_lock_holder():
    """A busy lock: the waiting line names the holder by its command line, read from
    proc/PID/cmdline inside the root (the PID from the lock file): data like any other, so
    its escapes come out escaped."""
    import fcntl
    r = fresh("out-holder")
    conf = os.path.join(work, "lock.conf")
    with open(conf, "w") as f:
        f.write("[apply]\nlock_timeout = 2\n")
    holder = subprocess.Popen(["sleep", "60"])
    put(r, f"proc/{holder.pid}/cmdline", b"kswap\0" + HOSTILE + b"\0")
    os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
    lock = open(os.path.join(r, LOCK), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write(f"{holder.pid}\n")
        lock.flush()
        for locale in ("C.UTF-8", "C"):
            rc, out, err, _ = run(r, "--config", conf, "rollback", locale=locale)
            name = "a busy lock: the holder's command line"
            check(rc is not None and b"waiting for the lock" in err, f"{name} [{locale}]: named",
                  err[-800:])
            terminal_ok(name, out + err, locale)
            check(b"x\\x1b[31m\\x07" in err, f"{name} [{locale}]: shows 'x\\x1b[31m\\x07'",
                  err[-800:])
    finally:
        lock.close()
        holder.kill()
        holder.wait()


# ---------------------------------------------------------------- WORDS (item 8)

def grub_words(words):
    def setup(root):
        put(root, "etc/default/grub.d/50-node.cfg",
            f'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX {words}"\n')
    return setup


def cmdline(text):
    def setup(root):
        put(root, "proc/cmdline", text + "\n")
    return setup


def trial_boot(root):
    """The armed trial's own boot: its words are the trial entry's, last on the line."""
    boot = open(os.path.join(root, "proc/sys/kernel/random/boot_id")).read().strip()
    journal(root, state="armed", armed_boot_id="0123abcd-ef01-4a00-8b00-00000000c0de",
            armed_btime=1700000000)
    put(root, "proc/cmdline", f"BOOT_IMAGE=/boot/vmlinuz-{NEW} root=/dev/vda1 ro panic=10 "
        "kswap.trial=0123abcdef01 kswap.deadline=900 oops=panic\n")
    assert boot


# (name, setup, whether plan warns boot.kswap-words, a word it must name)
WORDS = [
    ("GRUB_CMDLINE_LINUX with kswap.trial=", grub_words("kswap.trial=0badc0ffee00"), True,
     "kswap.trial=0badc0ffee00"),
    ("GRUB_CMDLINE_LINUX with kswap.deadline= and kswap.softdog=",
     grub_words("kswap.deadline=60 kswap.softdog=1"), True, "kswap.softdog=1"),
    ("this boot's command line with a copied trial's words",
     cmdline("root=/dev/vda1 ro kswap.trial=0badc0ffee00 kswap.deadline=900"), True,
     "kswap.deadline=900"),
    ("the armed trial's own boot", trial_boot, False, None),
    ("look-alike words", grub_words("kswap.trialx=1 xkswap.trial=1"), False, None),
    ("no such words", lambda root: None, False, None),
]


def test_words():
    for i, (name, setup, warns, word) in enumerate(WORDS):
        r = fresh(f"words-{i}")
        setup(r)
        rc, out, err, _ = run(r, "--json", "plan")
        try:
            doc = json.loads(out)
        except ValueError:
            check(False, f"plan: {name}: --json", (out + err)[-800:])
            continue
        found = [f for f in doc.get("findings", []) if f.get("id") == "boot.kswap-words"]
        check(bool(found) == warns and all(f.get("severity") == "warn" for f in found),
              f"plan: {name}: {'warns boot.kswap-words' if warns else 'no boot.kswap-words'}",
              found or err[-800:])
        if warns and found and word:
            check(word in found[0].get("message", ""), f"plan: {name}: names {word}",
                  found[0].get("message"))


try:
    test_opens()
    test_output()
    test_lock_holder()
    test_words()
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
