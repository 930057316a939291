# SPDX-License-Identifier: GPL-2.0-or-later
"""Booting a disk through a plan (a qcow2 overlay, the plan disk, one qemu per boot) and reading
what the guest driver printed on the serial line."""
import json
import os
import re
import subprocess
import time

from .common import BOOT_TIMEOUT, run


def boot_sequence(pf, img, plan, log_path, total_timeout, extra=(), boot_timeout=BOOT_TIMEOUT,
                  watch=(), seen=None, qemu_extra=(), stop=None):
    """Boots an overlay of img with the plan until the VM powers off. Returns the serial text,
    why it was stopped (None: it powered off), its seconds and the seconds of each boot (from
    qemu's start or the previous GRUB "Loading Linux" to the next; the last to the power-off).
    With seen (a dict), each line of watch that reaches the serial log is recorded as
    seen[line] = (host time, GRUB loads so far), and seen["marks"] holds the load times.
    extra: images attached read-only after the plan's disk (/dev/vdc, ...); qemu_extra: more
    qemu options (devices) for every boot; stop: a threading.Event that ends the sequence (qemu
    killed) from another thread (test/vm/fleet.py runs one sequence per node)."""
    work = os.path.dirname(log_path)
    ovl = os.path.join(work, "overlay.qcow2")
    if os.path.exists(ovl):
        os.unlink(ovl)
    run("qemu-img", "create", "-q", "-f", "qcow2", "-b", img, "-F", "raw", ovl)
    ctl = os.path.join(work, "plan.img")
    with open(ctl, "wb") as f:
        data = plan.encode() + b"\n"
        f.write(data.ljust(1 << 20, b"\0"))
    t0 = time.monotonic()
    last_start = t0
    starts = 0
    marks = [t0]
    # Each reboot ends qemu (-no-reboot) and the next boot is a cold start of the same disk
    # (and variable store); the guest cannot tell. It powered off when the kernel said so. Warm
    # resets under TCG failed both ways here: OVMF hung (no output for minutes after "reboot:
    # machine restart"), and qemu 7.2 itself segfaulted during a BIOS guest's next boot
    # (kernel log: "qemu-system-x86 ... segfault at a0"), which ended vm-happy in its trial.
    cold = True
    why = None
    open(log_path, "wb").close()
    while True:
        seg = os.path.getsize(log_path)
        with open(log_path, "ab") as out:
            p = subprocess.Popen(pf.qemu(work) + list(qemu_extra) + ["-serial", "stdio"] +
                                 (["-no-reboot"] if cold else []) +
                                 ["-drive", f"file={ovl},format=qcow2,if=virtio",
                                  "-drive", f"file={ctl},format=raw,if=virtio"] +
                                 [a for x in extra for a in
                                  ("-drive", f"file={x},format=raw,if=virtio,readonly=on")],
                                 stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            while p.poll() is None:
                time.sleep(1)
                text = open(log_path, "rb").read()
                n = text.count(b"Loading Linux ")
                now = time.monotonic()
                # the host's time (to the second) a watched line first reached the serial log
                for w in watch:
                    if seen is not None and w not in seen and w.encode() in text:
                        seen[w] = (now, n)
                if n != starts:
                    # one mark per load (GRUB's fallback loads twice within a second)
                    marks += [now] * (n - starts)
                    starts, last_start = n, now
                if now - last_start > boot_timeout:
                    why = f"boot {starts} took more than {boot_timeout} s"
                elif now - t0 > total_timeout:
                    why = f"the scenario took more than {total_timeout} s"
                elif stop is not None and stop.is_set():
                    why = "stopped"
                if why:
                    p.kill()
                    p.wait()
                    break
        if why or not cold:
            break
        with open(log_path, "rb") as f:
            f.seek(seg)
            tail = f.read()
        if b"reboot: Power down" in tail or p.returncode != 0:
            break
    text = open(log_path, "rb").read().decode(errors="replace")
    os.unlink(ovl)
    end = time.monotonic()
    marks.append(end)
    if seen is not None:
        seen["marks"] = marks
    # boot i: from GRUB loading its kernel to GRUB loading the next (firmware and GRUB of the
    # next boot included); the first entry: qemu's start to the first kernel (firmware, GRUB)
    return text, why, end - t0, [b - a for a, b in zip(marks, marks[1:])]


def parse(text):
    grub = re.findall(r"Loading Linux (\S+) \.\.\.", text)
    boots = {}
    kinds = "EARLY|BOOT|STATUS|APPLY|ACCEPT|DONE|WAIT-EXPIRED|GUARD|REPO|REPOSRC|REPOLISTS|" \
            "REPOPKGS|JOURNAL|BADKERNEL|CHECK|TIMED|APPLYERR|BOOTFULL|BOOTINFO|CLEANUP|HOLDER|" \
            "RELEASED|UNKNOWN-ACTION"
    for m in re.finditer(rf"KSWAP-VM ({kinds}) (\d+) ?(.*)", text):
        kind, n, rest = m.group(1), int(m.group(2)), m.group(3).strip()
        b = boots.setdefault(n, {})
        if kind in ("EARLY", "BOOT"):
            # EARLY: printed early in every boot that reached userspace (BOOT may never come
            # when accept reboots first)
            b["kernel"] = rest.split()[-1]
        elif kind == "STATUS":
            try:
                b["status"] = json.loads(rest)
            except ValueError:
                b["status"] = None
                b["status_raw"] = rest[:500]
        elif kind == "JOURNAL":
            try:
                b["journal"] = json.loads(rest)
            except ValueError:
                b["journal"] = None
        elif kind in ("APPLY", "CHECK"):
            m2 = re.match(r"rc=(\d+) ?(.*)", rest)
            b[kind.lower() + "_rc"] = int(m2.group(1))
            try:
                b[kind.lower()] = json.loads(m2.group(2))
            except ValueError:
                # (the kernel's console messages can land inside the long line)
                b[kind.lower()] = m2.group(2)[:16000]
            if kind == "APPLY":
                b.setdefault("applies", []).append((b["apply_rc"], b["apply"]))
        elif kind in ("TIMED", "APPLYERR", "BOOTINFO", "HOLDER"):
            # may come more than once in a boot: all of them, in order
            b.setdefault(kind.lower() + "s", []).append(rest)
        else:
            b[kind.lower()] = rest
    return grub, boots


def journal(st):
    j = (st or {}).get("journal") or {}
    return j.get("state"), j.get("outcome")


def trial_segment(pf, text):
    """The serial text from GRUB loading NEW to GRUB loading OLD next (the trial boot)."""
    at = text.find(f"Loading Linux {pf.new} ")
    end = text.find(f"Loading Linux {pf.old} ", at) if at >= 0 else -1
    return text[at:end] if at >= 0 and end >= 0 else ""


APPLY_STEPS = ("check", "repository", "prepare", "install", "verify", "arm", "reboot")


def apply_times(boots):
    """Per apply, from the state journal the next boot printed: (boot, whole apply, install
    step: apt-get update and install with dpkg's hooks), seconds."""
    def t(iso):
        return time.mktime(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")) if iso else None
    out = []
    for n in sorted(boots):
        steps = {s.get("name"): s for s in (boots[n].get("journal") or {}).get("steps") or []}
        ap = [steps[x] for x in APPLY_STEPS if x in steps]
        if "install" not in steps or not ap:
            continue
        ends = [t(s.get("finished")) for s in ap if s.get("finished")]
        inst = steps["install"]
        if not ends or not inst.get("finished"):
            continue
        out.append((n - 1, max(ends) - t(ap[0]["started"]),
                    t(inst["finished"]) - t(inst["started"])))
    return out
