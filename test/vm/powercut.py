#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Power cuts on the whole VM (issue 18): kill -9 qemu (no shutdown, the guest's page cache is
lost) at moments of kswap's own progress during apply --deb, pin, rollback and accept, boot the
same disk again and check that the node is safe.

usage: powercut.py run [--set ci|full] [--only NAME,...]    the matrix (default: full; ci: the reduced 8)
       powercut.py list [--set ci|full]                     the cut points
       powercut.py check COMMAND DIR                        the judge on a cut's kept logs
Environment as test/vm/kswap-vm.py (KSWAP_VM=1, KS_BUILD_ROOT, KS_CACHE); KS_VM_WORK keeps
the serial logs there; KS_PC_DISK names a disk image kswap-vm.py built before (its kswap).

How a cut runs (cheap under TCG): a prep run boots the image once up to the point just before
each command and takes a RAM snapshot there (HMP savevm into a qcow2 overlay of the disk,
cached in KS_CACHE next to the disk it belongs to). A cut copies that overlay, starts qemu with
-loadvm (the guest continues in the driver's wait loop), tells the driver to run the command,
and kills qemu N ms after the Kth line that matches the moment's pattern on the serial line:
kswap's step lines ("[pin] ...") on stderr, for apply --deb also the lines kswap prints for
apt's phases from its Status-Fd ("[install] apt unpack: ...", "apt setup: ..."). Then the disk boots
again without the snapshot (the recovery boot), and the driver prints grubenv (base64), kswap
status --json, runs the same command again (after 'dpkg --configure -a' when the command said
so, then once more) and prints what came back.

Safe means: GRUB started a kernel that reached userspace (OLD, or NEW where the command had
made it the default, or NEW as the one trial apply armed; when the command had returned before
the cut, the kernel it promised), grubenv is a valid 1024-byte block whose saved_entry names OLD unless the
journal says pinned, kswap status --json parses and has a journal, and the command run again
finished the job (the expected journal state and forecast) or refused naming what to do.
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from vmtest import common, platforms  # noqa: E402
from vmtest.disk import build_disk  # noqa: E402

OLD, NEW = platforms.OLD, platforms.NEW
NICE = ["nice", "-n", os.environ.get("KS_VM_NICE", "5")]
# Hang bounds, not measures.
LOAD_TIMEOUT = 900      # from -loadvm to the cut (an apply --deb under TCG: minutes)
RECOVER_TIMEOUT = 1800  # the recovery boot with the command run again
PREP_TIMEOUT = 3000

# The guest's side: the plan disk carries it after "script:" (the guest driver vmtest/driver.sh
# runs it in each boot's late phase with the boot number). It reads its settings from the plan
# disk with O_DIRECT, so a value the host writes after a snapshot is seen.
GUEST = r"""#!/bin/sh
n=$1
D=/var/lib/kswap-vm
# printf, not echo: dash's echo turns the "\n" of a JSON string into a line break
say() { printf 'KSWAP-VM %s\n' "$*" > /dev/ttyS0; }
val() { dd if=/dev/vdb bs=65536 count=1 iflag=direct 2>/dev/null | tr -d '\000' | sed -n "s/^$1=//p" | head -n 1; }
NEW=$(val new)
DEB=$(ls /var/lib/kswap-vm/linux-image-${NEW}_*.deb 2>/dev/null | head -n 1)
export NO_COLOR=1
cmdline() { val cmd | sed "s|@DEB@|$DEB|g"; }
# The command whose progress the host watches: stderr on the serial line as it comes.
cutrun() {
  CMD=$(cmdline); PRE=$(val pre)
  [ -n "$PRE" ] && sh -c "$PRE" > /dev/ttyS0 2>&1
  say "CUT-START $n $CMD"
  if [ "$(val pty)" = 1 ]; then
    script -qfec "$CMD > $D/pc.out" /dev/null < /dev/null > /dev/ttyS0 2>&1
  else
    sh -c "$CMD" > $D/pc.out 2> /dev/ttyS0 < /dev/null
  fi
  rc=$?
  say "CUT-END $n rc=$rc $(tr -d '\n' < $D/pc.out)"
  while :; do sleep 60; done
}
hold() {
  sync
  say "HOLD $n $1"
  while :; do g=$(val "go.$1"); [ -n "$g" ] && break; sleep 0.3; done
  [ "$g" = cut ] && cutrun
  say "GO $n $1"
}
# After the cut: the same command again; stderr kept to find what it asks for.
rerun() {
  CMD=$(cmdline); PRE=$(val pre)
  [ -n "$PRE" ] && sh -c "$PRE" > /dev/ttyS0 2>&1
  sh -c "$CMD" > $D/pc.out 2> $D/pc.err < /dev/null
  rc=$?
  say "$1 $n rc=$rc $(tr -d '\n' < $D/pc.out)"
  say "$1-ERR $n $(tail -c 2000 $D/pc.err | tr '\n' '|')"
  return $rc
}
recover() {
  say "CMDLINE $n $(cat /proc/cmdline)"
  say "GRUBENV $n $(base64 -w0 /boot/grub/grubenv)"
  say "DPKG $n $(dpkg-query -W -f '${Package}=${Status};' 'linux-image-*' 2>/dev/null | tr ' ' '_')"
  if ! rerun RERUN && cat $D/pc.out $D/pc.err | grep -q 'dpkg --configure -a'; then
    say "HINT $n dpkg --configure -a"
    dpkg --configure -a > /dev/ttyS0 2>&1
    say "HINT-RC $n $?"
    rerun RERUN2
  fi
  say "FINAL $n $(kswap status --json 2>/dev/null | tr -d '\n')"
  say "GRUBENV2 $n $(base64 -w0 /boot/grub/grubenv)"
  say "DONE $n"
  sync; systemctl poweroff; exit 0
}
hb=$(val holdboot)
if [ -n "$(val cut)" ] && [ -n "$hb" ] && [ "$n" -gt "$hb" ]; then recover; fi
for a in $(val "prep.$n" | tr ',' ' '); do
  say "ACT $n $a"
  case "$a" in
  hold:*) hold "${a#hold:}" ;;
  # The trial's softlockup_panic=1 turns a vCPU starved by a loaded host (TCG, 2 shared
  # cores) into a panic and a fall-back: the matrix is about power cuts, so no soft-lockup
  # detector on any boot of it.
  # update-grub took more than its 300 s bound on the loaded host: a bound for hangs only
  slow) mkdir -p /etc/kswap/kswap.conf.d
    printf '[apply]\nupdate_grub_timeout = 1800\n' > /etc/kswap/kswap.conf.d/50-powercut.conf; sync ;;
  nowd) sed -i 's/^GRUB_CMDLINE_LINUX="/GRUB_CMDLINE_LINUX="nowatchdog /' /etc/default/grub; sync ;;
  applyk) kswap --json apply --kernel $NEW --yes > $D/p.json 2> /dev/ttyS0; say "PREP $n $a rc=$?" ;;
  mask) systemctl mask kswap-accept.service > /dev/ttyS0 2>&1; sync ;;
  acceptnp) kswap --json accept --no-pin > $D/p.json 2> /dev/ttyS0; say "PREP $n $a rc=$?" ;;
  pin) kswap --json pin > $D/p.json 2> /dev/ttyS0; say "PREP $n $a rc=$?" ;;
  purge) dpkg --purge linux-image-$NEW > /dev/ttyS0 2>&1; say "PREP $n $a rc=$?"; sync ;;
  reboot) sync; systemctl reboot; exit 0 ;;
  poweroff) say "DONE $n"; sync; systemctl poweroff; exit 0 ;;
  esac
done
"""

# Snapshot groups: how the prep run gets there from the image's first boot.
#   trial: apply --kernel NEW on OLD (kswap-accept.service masked, so the driver runs accept),
#   reboot into the trial; T before accept, P after accept --no-pin (trial-ok), K after pin.
#   deb: NEW's package purged on OLD; A before apply --deb.
PREPS = {
    "trial": {"prep.1": "slow,nowd,applyk,mask,reboot",
              "prep.2": "hold:T,acceptnp,hold:P,pin,hold:K,poweroff"},
    "deb": {"prep.1": "slow,nowd,purge,hold:A,poweroff"},
}
SNAP_GROUP = {"T": "trial", "P": "trial", "K": "trial", "A": "deb"}

STEP = r"^\[(plan|check|repository|prepare|install|verify|arm|reboot|pin|rollback|accept|apply|purge)\] "
START = r"KSWAP-VM CUT-START "
END = r"KSWAP-VM CUT-END "

# command name -> (snapshot, command line, pty, setup before it, kernels GRUB may start after
# a cut, judge)
COMMANDS = {
    "accept": ("T", "kswap --json accept", False, ""),
    # accept's other path: the workload fails on NEW (vm-app.service restarted with the
    # break flag), accept disarms and reboots once into OLD.
    "accept-fail": ("T", "kswap --json accept", False,
                    "touch /etc/kswap-vm/break-on-new; systemctl restart vm-app.service; true"),
    "pin": ("P", "kswap --json pin", False, ""),
    "rollback": ("K", "kswap --json rollback", False, ""),
    # kswap reads apt's phases from its Status-Fd and prints them as its own step lines
    # ("[install] apt unpack: ...", "apt setup: ...", "apt took ..."); without a terminal
    # there is one line per phase, no live percent lines, so each line comes when it happens.
    "apply": ("A", "kswap --json apply --deb @DEB@ --yes", False, ""),
}

# Moments: (pattern, occurrence, delay ms). START: the command's first instant; STEP: the Kth
# step line of kswap; END: after the command returned (what it wrote must already be on disk).
def _moments():
    # pin, rollback and accept's pin run update-grub (about 100 s under TCG) before they write
    # grubenv: the later moments are spread over it.
    m = {}
    # accept's pin prints pin's step lines after the verdict (trial-ok)
    m["accept"] = [(START, 1, 0), (STEP, 1, 0), (STEP, 1, 4000), (r"trial-ok", 1, 0),
                   (r"trial-ok", 1, 1000), (r"^\[pin\] ", 2, 0), (r"^\[pin\] ", 2, 5000),
                   (r"^\[pin\] ", 2, 15000), (END, 1, 0), (END, 1, 1500)]
    m["accept-fail"] = [(STEP, 1, 500), (r"HEALTH FAILED", 1, 0), (r"HEALTH FAILED", 1, 800),
                        (r"rebooting into the old kernel", 1, 0),
                        (r"rebooting into the old kernel", 1, 1500)]
    # pin's step lines: 1 "making NEW the default", 2 "removing the trial's entries ...:
    # update-grub" (25 s here, 100 s on a loaded host), then grubenv
    m["pin"] = [(START, 1, 0), (STEP, 1, 0), (STEP, 2, 0), (STEP, 2, 1000), (STEP, 2, 5000),
                (STEP, 2, 15000), (END, 1, 0), (END, 1, 1500)]
    # rollback after pin runs no update-grub (the trial's entries went at pin): about 1 s
    # from its step line to its return under TCG; then the 30 s in which ext4's journal is
    # not yet home (what GRUB reads)
    m["rollback"] = [(START, 1, 0), (STEP, 1, 0), (STEP, 1, 300), (STEP, 1, 800),
                     (STEP, 1, 1500), (END, 1, 0), (END, 1, 1500), (END, 1, 10000)]
    # apply --deb: dpkg unpacks, then the kernel's postinst runs mkinitramfs and update-grub
    # (zz-update-grub) inside apt's "setup" phase; then verify and arm (update-grub again,
    # the boot files synced and read back, grubenv).
    m["apply"] = [(STEP, 2, 0), (r"^\[prepare\] ", 1, 1500), (r"^\[prepare\] ", 1, 60000),
                  (r"^\[install\] ", 1, 0), (r"apt unpack", 1, 0), (r"apt unpack", 1, 3000),
                  (r"apt setup", 1, 0), (r"apt setup", 1, 5000), (r"apt setup", 1, 40000),
                  (r"apt took", 1, 0), (r"^\[verify\] ", 1, 0), (r"^\[arm\] ", 1, 0),
                  (r"^\[arm\] ", 1, 30000), (r"^\[arm\] ", 1, 90000), (END, 1, 0)]
    return m


MOMENTS = _moments()
# The reduced set (CI, suite vm-powercut): 8 cuts without an install (one prep): each command
# in the middle (rollback's writes, pin's and accept's update-grub) and right after it returned
# (what GRUB reads then, before ext4's journal is home). Chosen also for cheap recoveries: the
# command run again refuses or has nothing left to do, no second update-grub.
CI = [("rollback", 1), ("rollback", 5), ("rollback", 7), ("pin", 4), ("pin", 6), ("accept", 3),
      ("accept", 6), ("accept", 8)]
# pin#4 and accept#6 fall inside update-grub (5 s after it started), whatever the host's speed


def points(which):
    if which == "ci":
        return [(c, i, MOMENTS[c][i]) for c, i in CI]
    return [(c, i, m) for c in MOMENTS for i, m in enumerate(MOMENTS[c])]


def point_name(cmd, i, m):
    pat, k, ms = m
    short = {START: "start", STEP: "step", END: "end"}.get(pat, re.sub(r"\W+", "-", pat).strip("-"))
    return f"{cmd}#{i}:{short}{k if k > 1 else ''}+{ms}ms"


def log(msg):
    print(f"powercut: {msg}", file=sys.stderr, flush=True)


def write_plan(path, kv):
    text = "powercut plan (test/vm/powercut.py)\n"
    text += "".join(f"{k}={v}\n" for k, v in kv.items()) + "script:\n" + GUEST
    data = text.encode()
    assert len(data) < 65536 and text.index("script:") < 4000
    # In place: a running qemu keeps the file it opened, and the guest (reading with
    # O_DIRECT) must see a value written after its start (go.NAME after a snapshot). A rename
    # would leave qemu with the old inode and the guest waiting forever.
    with open(path, "r+b" if os.path.exists(path) else "wb") as f:
        f.write(data.ljust(1 << 20, b"\0"))
        f.flush()
        os.fsync(f.fileno())


class Qemu:
    """One qemu with the serial line read line by line (matched as it comes) and an HMP
    monitor on a unix socket."""

    def __init__(self, disk, plan, log_path, loadvm=None):
        self.work = os.path.dirname(log_path)
        self.mon_path = os.path.join(self.work, "monitor.sock")
        if os.path.exists(self.mon_path):
            os.unlink(self.mon_path)
        args = NICE + common.QEMU + ["-serial", "stdio",
                                     "-monitor", f"unix:{self.mon_path},server=on,wait=off",
                                     "-drive", f"file={disk},format=qcow2,if=virtio",
                                     "-drive", f"file={plan},format=raw,if=virtio,readonly=on"]
        if loadvm:
            args += ["-loadvm", loadvm]
        self.log = open(log_path, "wb")
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        self.lines = []   # (time, text)
        self.cond = threading.Condition()
        self.watchers = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.p.stdout.readline, b""):
            self.log.write(raw)
            self.log.flush()
            t = time.monotonic()
            text = raw.decode(errors="replace").rstrip("\r\n").replace("\r", "")
            with self.cond:
                self.lines.append((t, text))
                for w in list(self.watchers):
                    w(t, text)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_line(self, pattern, start=0, timeout=600):
        """Index of the first line from start that matches, or None at timeout or exit."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for i in range(start, len(self.lines)):
                    if rx.search(self.lines[i][1]):
                        return i
                start = len(self.lines)
                left = end - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not self.reader.is_alive()):
                    return None
                self.cond.wait(min(left, 1.0))

    def hmp(self, command, timeout=600):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        for _ in range(100):
            try:
                s.connect(self.mon_path)
                break
            except OSError:
                time.sleep(0.1)
        buf = b""
        while not buf.endswith(b"(qemu) "):
            buf += s.recv(4096)
        s.sendall(command.encode() + b"\n")
        buf = b""
        while not buf.rstrip(b" ").endswith(b"(qemu)"):
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        s.close()
        # HMP's readline echoes the command as it redraws it ("ssasav..."): what counts is
        # an error line after it (savevm and loadvm print nothing when they succeed)
        out = re.sub(rb"\x1b\[[0-9;]*[A-Za-z]", b"", buf).decode(errors="replace")
        return "\n".join(ln for ln in out.splitlines() if re.search(r"[Ee]rror", ln)).strip()

    def kill(self):
        if self.p.poll() is None:
            os.kill(self.p.pid, signal.SIGKILL)
        self.p.wait()
        self.reader.join(10)
        self.log.close()

    def wait_exit(self, timeout):
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        self.reader.join(10)
        self.log.close()
        return True


def base_plan():
    return {"new": NEW}


def prep(img, group, work):
    """The overlay with the group's snapshots (cached beside the image, keyed by it)."""
    # keyed by the disk (its kswap) and by what runs in the snapshot's RAM: the driver and the
    # group's plan (a cut goes on in the driver the prep booted with)
    key = os.path.basename(img).rsplit(".", 1)[0] + "-" + common.sha(GUEST, json.dumps(PREPS[group]))
    dst = os.path.join(common.CACHE, f"powercut-{group}-{key}.qcow2")
    meta_path = dst + ".json"
    if os.path.exists(dst) and os.path.exists(meta_path):
        return dst, json.load(open(meta_path))
    for n in os.listdir(common.CACHE):
        # snapshots of older disks or drivers
        if n.startswith(f"powercut-{group}-") and not n.startswith(os.path.basename(dst)):
            os.unlink(os.path.join(common.CACHE, n))
    t0 = time.monotonic()
    d = os.path.join(work, f"prep-{group}")
    os.makedirs(d, exist_ok=True)
    ovl = os.path.join(d, "prep.qcow2")
    if os.path.exists(ovl):
        os.unlink(ovl)
    common.run("qemu-img", "create", "-q", "-f", "qcow2", "-b", img, "-F", "raw", ovl)
    plan_path = os.path.join(d, "plan.img")
    kv = base_plan()
    kv.update(PREPS[group])
    write_plan(plan_path, kv)
    log(f"prep {group}: booting to the snapshots {sorted(s for s, g in SNAP_GROUP.items() if g == group)}")
    q = Qemu(ovl, plan_path, os.path.join(d, "serial.log"))
    holds = {}
    pos = 0
    try:
        while True:
            i = q.wait_line(r"KSWAP-VM (HOLD|DONE) ", pos, timeout=PREP_TIMEOUT)
            if i is None:
                raise RuntimeError(f"prep {group}: no HOLD or DONE line (serial log {d}/serial.log)")
            pos = i + 1
            m = re.search(r"KSWAP-VM (HOLD|DONE) (\d+) ?(\S*)", q.lines[i][1])
            if m.group(1) == "DONE":
                break
            name, boot = m.group(3), int(m.group(2))
            ts = time.monotonic()
            out = q.hmp(f"savevm {name}")
            if out:
                raise RuntimeError(f"savevm {name}: {out}")
            holds[name] = {"boot": boot, "savevm_s": round(time.monotonic() - ts, 1),
                           "at_s": round(ts - q.t0, 1)}
            log(f"prep {group}: snapshot {name} at boot {boot} ({holds[name]})")
            kv[f"go.{name}"] = "prep"
            write_plan(plan_path, kv)
        if not q.wait_exit(300):
            raise RuntimeError(f"prep {group}: the VM did not power off")
    finally:
        q.kill()
    text = open(os.path.join(d, "serial.log"), "rb").read().decode(errors="replace")
    for m in re.finditer(r"KSWAP-VM PREP (\d+) (\S+) rc=(\d+)", text):
        if m.group(3) != "0":
            raise RuntimeError(f"prep {group}: {m.group(2)} exited {m.group(3)} (serial log "
                               f"{d}/serial.log)")
    meta = {"holds": holds, "seconds": round(time.monotonic() - t0)}
    shutil.move(ovl, dst + ".tmp")
    os.rename(dst + ".tmp", dst)
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    log(f"prep {group}: {meta['seconds']} s")
    return dst, meta


def grubenv_problems(b64):
    """What is wrong with a grubenv block (empty list: valid, as GRUB reads it)."""
    try:
        data = base64.b64decode(b64, validate=True)
    except ValueError:
        return ["not printed"], {}
    probs = []
    if len(data) != 1024:
        probs.append(f"{len(data)} bytes, not 1024")
    head = b"# GRUB Environment Block\n"
    if not data.startswith(head):
        probs.append("no '# GRUB Environment Block' header")
    # as GRUB reads it: lines, '#' starts a comment; after the last newline only '#' padding
    env = {}
    *lines, tail = data[len(head):].split(b"\n")
    for ln in lines:
        if ln.startswith(b"#"):
            continue
        if b"=" not in ln or b"\0" in ln:
            probs.append(f"a line that is no variable: {ln[:60]!r}")
            continue
        k, v = ln.split(b"=", 1)
        env[k.decode(errors="replace")] = v.decode(errors="replace")
    if tail.strip(b"#"):
        probs.append(f"bytes other than '#' in the padding: {tail.strip(b'#')[:40]!r}")
    return list(dict.fromkeys(probs)), env


# What a command that returned promises for the next boot (its exit code -> the kernel GRUB
# must start): pin and accept's pin NEW, rollback and accept's way back OLD, apply's arming
# the trial of NEW.
PROMISE = {"pin": {0: "NEW"}, "rollback": {0: "OLD"}, "accept": {0: "NEW", 3: "OLD"},
           "accept-fail": {3: "OLD"}, "apply": {0: "NEW"}}


def judge(cmd, boots_text, grub_loads, returned=None):
    """(safe, what was wrong, facts) from the recovery run's serial text. returned: the exit
    code of the command when it returned before the cut (None: it did not)."""
    wrong = []
    facts = {}

    def one(kind):
        m = None
        for m in re.finditer(rf"KSWAP-VM {kind} (\d+) ?(.*)", boots_text):
            pass
        return m.group(2).strip() if m else None

    kernel = None
    for m in re.finditer(r"KSWAP-VM EARLY (\d+) KERNEL (\S+)", boots_text):
        kernel = m.group(2)
    facts["grub"] = grub_loads
    facts["kernel"] = kernel
    if not grub_loads:
        wrong.append("GRUB started no kernel")
    if kernel not in (OLD, NEW):
        wrong.append(f"no boot reached userspace (GRUB: {grub_loads})")
        return False, wrong, facts
    if grub_loads and grub_loads[-1] != kernel:
        wrong.append(f"GRUB last started {grub_loads[-1]}, userspace runs {kernel}")
    cmdline = one("CMDLINE") or ""
    trial = "kswap.trial=" in cmdline
    facts["trial_boot"] = trial
    # The command had returned: what it wrote is on disk, and GRUB must act on it (it reads
    # the file system without its journal: a change only in the journal is not there for it).
    want = PROMISE.get(cmd, {}).get(returned) if returned is not None else None
    if want and kernel != {"OLD": OLD, "NEW": NEW}[want]:
        wrong.append(f"{cmd} had returned {returned} before the cut, yet GRUB started {kernel} "
                     f"(expected {want})")
    # Invariant 1: NEW boots only as the one trial or once pinned.
    if kernel == NEW and cmd == "apply" and not trial:
        wrong.append("NEW booted after a cut during apply without the trial's command line")
    if one("DONE") is None:
        wrong.append("the recovery boot did not reach the end of its driver")
    env_b64 = one("GRUBENV")
    if env_b64 is None:
        wrong.append("grubenv not printed")
        env = {}
    else:
        probs, env = grubenv_problems(env_b64)
        wrong += [f"grubenv after the cut: {p}" for p in probs]
    facts["saved_entry"] = env.get("saved_entry")
    facts["next_entry"] = env.get("next_entry")
    st_raw = one("STATUS")
    try:
        st = json.loads(st_raw or "")
    except ValueError:
        st = None
    j = (st or {}).get("journal") if isinstance(st, dict) else None
    if not isinstance(j, dict):
        wrong.append(f"kswap status --json after the cut: no journal ({(st_raw or '')[:200]})")
        j = {}
    facts["state_after_cut"] = (j.get("state"), j.get("outcome"))
    # Invariant 1: until pinned, the default is OLD's entry; but a pin cut short (its step
    # begun, never ended) wrote GRUB's default first, so NEW's entry there is the pin under way,
    # which the next accept or pin finishes (checked below: the run again ends pinned).
    se = env.get("saved_entry") or ""
    pin_began = any(x.get("name") == "pin" and x.get("status") == "started"
                    for x in j.get("steps") or [])
    if pin_began and NEW in se:
        facts["pin_cut"] = True
    elif j.get("state") != "pinned" and se and OLD not in se:
        wrong.append(f"saved_entry {se} is not OLD's while the journal is {j.get('state')}")
    if kernel == NEW and j.get("state") not in ("pinned", "trial-booted") and \
            not (cmd == "apply"):
        # NEW by GRUB's default only once pin made it so
        if OLD in se:
            wrong.append("NEW booted while saved_entry names OLD")
    rr = one("RERUN2") or one("RERUN")
    err = (one("RERUN2-ERR") or one("RERUN-ERR") or "").replace("|", "\n")
    m = re.match(r"rc=(\d+) ?(.*)", rr or "")
    rc = int(m.group(1)) if m else None
    try:
        out = json.loads(m.group(2)) if m else None
    except ValueError:
        out = None
    facts["rerun_rc"] = rc
    facts["hint"] = one("HINT")
    if rc is None:
        wrong.append("the command was not run again")
    elif out is None:
        wrong.append(f"the command run again printed no JSON document (rc {rc})")
    fin_raw = one("FINAL")
    try:
        fin = json.loads(fin_raw or "")
    except ValueError:
        fin = None
    fj = (fin or {}).get("journal") or {} if isinstance(fin, dict) else {}
    fc = [b.get("kernel") for b in ((fin or {}).get("grub") or {}).get("forecast") or []] \
        if isinstance(fin, dict) else []
    facts["final"] = (fj.get("state"), fj.get("outcome"), fc[:3])
    env2_b64 = one("GRUBENV2")
    if env2_b64 is not None:
        probs, _ = grubenv_problems(env2_b64)
        wrong += [f"grubenv after the command ran again: {p}" for p in probs]
    said = json.dumps(out) + err if out is not None else err
    state, outcome = fj.get("state"), fj.get("outcome")
    if cmd == "pin":
        if kernel == NEW:
            if not (rc == 0 and state == "pinned" and fc[:3] == [NEW] * 3):
                wrong.append(f"pin on NEW again: rc {rc}, journal {state}, forecast {fc[:3]}")
        elif not (rc == 2 and "--force" in said and fc[:3] == [OLD] * 3):
            wrong.append(f"pin on OLD after the cut: rc {rc}, forecast {fc[:3]}, said "
                         f"{said[:300]}")
    elif cmd in ("accept", "accept-fail"):
        good = (rc == 0 and kernel == NEW and state == "pinned" and fc[:3] == [NEW] * 3) or \
               (rc == 3 and kernel == OLD and fc[:3] == [OLD] * 3 and state != "pinned")
        if cmd == "accept-fail":
            good = rc == 3 and kernel == OLD and fc[:3] == [OLD] * 3 and state != "pinned"
        if not good:
            wrong.append(f"accept again on {kernel}: rc {rc}, journal {state} {outcome}, "
                         f"forecast {fc[:3]}")
    elif cmd == "rollback":
        if not (rc == 0 and state == "rolled-back" and fc[:3] == [OLD] * 3):
            wrong.append(f"rollback again: rc {rc}, journal {state}, forecast {fc[:3]}, said "
                         f"{said[:300]}")
    elif cmd == "apply":
        if kernel == NEW:
            # the trial boot: kswap-accept.service judged it and pinned it before the driver
            # ran apply again, which has nothing left to do: exit 0, the pinned record kept
            if not (rc == 0 and state == "pinned" and fc[:3] == [NEW] * 3):
                wrong.append(f"after the trial boot: journal {state} {outcome}, forecast "
                             f"{fc[:3]}, apply again rc {rc}: {said[:300]}")
        elif not (rc == 0 and state == "armed" and fc[:3] == [NEW, OLD, OLD]):
            wrong.append(f"apply again: rc {rc}, journal {state}, forecast {fc[:3]}, said "
                         f"{said[:400]}")
    return not wrong, wrong, facts


def run_cut(cmd, idx, moment, snap_disk, meta, work):
    snap, cmdline, pty, pre = COMMANDS[cmd]
    pat, k, ms = moment
    name = point_name(cmd, idx, moment)
    d = os.path.join(work, re.sub(r"[^\w.+-]", "_", name))
    os.makedirs(d, exist_ok=True)
    disk = os.path.join(d, "disk.qcow2")
    t0 = time.monotonic()
    shutil.copy(snap_disk, disk)
    plan_path = os.path.join(d, "plan.img")
    kv = base_plan()
    kv.update({"cut": name, "holdboot": meta["holds"][snap]["boot"], "cmd": cmdline,
               "pty": "1" if pty else "0", "pre": pre, f"go.{snap}": "cut"})
    write_plan(plan_path, kv)
    res = {"point": name, "cmd": cmd}
    q = Qemu(disk, plan_path, os.path.join(d, "cut.log"), loadvm=snap)
    try:
        i0 = q.wait_line(START, 0, timeout=LOAD_TIMEOUT)
        if i0 is None:
            return dict(res, safe=False, wrong=["the command did not start after -loadvm"])
        t_start = q.lines[i0][0]
        res["load_s"] = round(t_start - t0, 1)
        # the Kth match from the command's start; not found by the command's end (or a new
        # boot): cut there and say so
        rx = re.compile(pat)
        seen = 0
        at = None
        pos = i0 if pat == START else i0 + 1
        while at is None:
            i = q.wait_line(r".", pos, timeout=LOAD_TIMEOUT)
            if i is None:
                break
            pos = i + 1
            text = q.lines[i][1]
            if rx.search(text):
                seen += 1
                if seen == k:
                    at = q.lines[i][0]
                    break
            if re.search(END, text) or "Loading Linux " in text:
                res["moment_missed"] = f"{pat!r} #{k} not seen; cut at {text[:60]!r} + {ms} ms"
                at = q.lines[i][0]
        if at is None:
            return dict(res, safe=False, wrong=["the command hung before the moment"])
        left = at + ms / 1000.0 - time.monotonic()
        if left > 0:
            time.sleep(left)
        t_cut = time.monotonic()
        q.kill()
        res["cut_after_start_s"] = round(t_cut - t_start, 2)
        cut_text = "\n".join(t for _, t in q.lines[i0:])
        res["last_lines"] = [t for _, t in q.lines[-3:]]
        m_end = re.search(END + r"\S+ rc=(\d+)", cut_text)
        res["returned_before_cut"] = bool(m_end)
        res["returned_rc"] = int(m_end.group(1)) if m_end else None
    finally:
        q.kill()
    t1 = time.monotonic()
    q2 = Qemu(disk, plan_path, os.path.join(d, "recover.log"))
    ok = q2.wait_exit(RECOVER_TIMEOUT)
    t2 = time.monotonic()
    text = open(os.path.join(d, "recover.log"), "rb").read().decode(errors="replace")
    grub = re.findall(r"Loading Linux (\S+) \.\.\.", text)
    safe, wrong, facts = judge(cmd, text, grub, res.get("returned_rc"))
    if not ok:
        safe = False
        wrong.append(f"the recovery run did not power off within {RECOVER_TIMEOUT} s")
    res.update(safe=safe, wrong=wrong, facts=facts, recover_s=round(t2 - t1, 1),
               cut_s=round(t1 - t0, 1), total_s=round(t2 - t0, 1), log_dir=d)
    os.unlink(disk)
    return res


def main():
    args = sys.argv[1:]
    if args[:1] == ["check"] and len(args) == 3 and args[1] in COMMANDS:
        # the judge again on a cut's kept logs (cut.log, recover.log in its folder)
        d = args[2]
        cut = open(os.path.join(d, "cut.log"), "rb").read().decode(errors="replace")
        text = open(os.path.join(d, "recover.log"), "rb").read().decode(errors="replace")
        m_end = re.search(END + r"\S+ rc=(\d+)", cut)
        safe, wrong, facts = judge(args[1], text, re.findall(r"Loading Linux (\S+) \.\.\.", text),
                                   int(m_end.group(1)) if m_end else None)
        print(f"{'safe' if safe else 'UNSAFE'} {d}: {json.dumps(facts)}")
        for w in wrong:
            print(f"    {w}")
        return 0 if safe else 1
    if not args or args[0] not in ("run", "list"):
        print(__doc__)
        return 2
    which = "full"
    if "--set" in args:
        which = args[args.index("--set") + 1]
    pts = points(which)
    if "--only" in args:
        only = args[args.index("--only") + 1].split(",")
        pts = [p for p in pts if p[0] in only or point_name(*p) in only]
    if args[0] == "list":
        for p in pts:
            print(point_name(*p))
        print(f"{len(pts)} cut points")
        return 0
    common.prerequisites()
    if not shutil.which("qemu-img"):
        common.skip("qemu-img not found")
    try:
        # KS_PC_DISK: a disk image built before (the kswap it carries is the one under test)
        img = os.environ.get("KS_PC_DISK") or build_disk(
            platforms.Platform(platforms.SUITE, "bios"), "ext4")
    except (subprocess.CalledProcessError, OSError) as e:
        common.skip(f"building the ext4 image failed: {e}")
    t_all = time.monotonic()
    work = os.environ.get("KS_VM_WORK") or tempfile.mkdtemp(prefix="kswap-powercut-")
    os.makedirs(work, exist_ok=True)
    snaps = {}
    results = []
    jobs = max(1, int(os.environ.get("KS_PC_JOBS", "1")))
    lock = threading.Lock()

    def report(r):
        f = r.get("facts", {})
        with lock:
            results.append(r)
            print(f"{'safe' if r['safe'] else 'UNSAFE'} {r['point']}: cut "
                  f"{r.get('cut_after_start_s')} s after the start"
                  f"{' (after it returned)' if r.get('returned_before_cut') else ''}, GRUB "
                  f"{f.get('grub')}, after the cut {f.get('state_after_cut')}, again rc "
                  f"{f.get('rerun_rc')}{' after ' + f['hint'] if f.get('hint') else ''}, final "
                  f"{f.get('final')}; {r.get('total_s')} s (load {r.get('load_s')}, recovery "
                  f"{r.get('recover_s')})" + (f"; {r['moment_missed']}" if r.get("moment_missed") else ""),
                  flush=True)
            for w in r["wrong"]:
                print(f"    {w}", flush=True)

    with common.Lock(os.path.join(common.CACHE, "powercut.lock")):
        # the preps first (one VM each), then the cuts, KS_PC_JOBS at a time (run it under
        # vmslot -n 2 for 2)
        for group in dict.fromkeys(SNAP_GROUP[COMMANDS[c][0]] for c, _, _ in pts):
            try:
                snaps[group] = prep(img, group, work)
            except RuntimeError as e:
                print(f"FAIL: {e}", flush=True)
                return 1
        queue = list(pts)

        def worker():
            while True:
                with lock:
                    if not queue:
                        return
                    cmd, idx, m = queue.pop(0)
                try:
                    r = run_cut(cmd, idx, m, *snaps[SNAP_GROUP[COMMANDS[cmd][0]]], work)
                except Exception as e:  # noqa: BLE001 (a harness error is an unsafe result)
                    r = {"point": point_name(cmd, idx, m), "cmd": cmd, "safe": False,
                         "wrong": [f"the harness failed: {e!r}"]}
                report(r)

        threads = [threading.Thread(target=worker) for _ in range(min(jobs, len(pts)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    n_safe = sum(1 for r in results if r["safe"])
    secs = time.monotonic() - t_all
    per = [r["total_s"] for r in results if "total_s" in r]
    print(f"power cuts: {n_safe} of {len(results)} safe", flush=True)
    for r in results:
        if not r["safe"]:
            print(f"  unsafe {r['point']}: {'; '.join(r['wrong'])} (logs {r.get('log_dir')})")
    print(f"matrix: {secs / 60:.1f} min, {len(results)} cuts, per cut "
          f"{min(per) if per else 0:.0f}-{max(per) if per else 0:.0f} s "
          f"(mean {sum(per) / len(per) if per else 0:.0f} s); prep "
          f"{json.dumps({g: s[1] for g, s in snaps.items()})}; work {work}", flush=True)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0 if n_safe == len(results) and results else 1


if __name__ == "__main__":
    sys.exit(main())
