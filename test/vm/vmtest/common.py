# SPDX-License-Identifier: GPL-2.0-or-later
"""What every part of the whole-VM harness shares: the cache, the bounds, qemu's base command
line, logging and skipping, running tools, keys of cached layers, the cache lock, the
prerequisites of a run, and the scenarios' assertion."""
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys

SKIP = 77

CACHE = os.environ.get("KS_CACHE", "/var/cache/kswap-test/vm")
# Bounds for hangs, not measures: one boot, one scenario (a healthy one takes 2-6 min), the
# image's mmdebstrap. A boot that runs apply (plan, check, two update-grub runs, the sync and
# read-back of the boot files) took 215 s of apply alone on a busy machine: 600 s a boot.
BOOT_TIMEOUT = int(os.environ.get("KS_VM_BOOT_TIMEOUT", "600"))
SCENARIO_TIMEOUT = int(os.environ.get("KS_VM_SCENARIO_TIMEOUT", "1200"))
MMDEBSTRAP_TIMEOUT = 1500
QEMU = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "Nehalem", "-m", "1024", "-smp", "2",
        "-nodefaults", "-display", "none", "-nic", "none"]


def log(msg):
    print(f"kswap-vm: {msg}", file=sys.stderr, flush=True)


def skip(msg):
    print(f"SKIP: {msg}", flush=True)
    sys.exit(SKIP)


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw)


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def tree_hash(d):
    h = hashlib.sha256()
    for base, dirs, files in sorted(os.walk(d)):
        dirs.sort()
        for n in sorted(files):
            p = os.path.join(base, n)
            h.update(os.path.relpath(p, d).encode() + b"\0")
            if os.path.islink(p):
                h.update(os.readlink(p).encode())
            else:
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()[:16]


def prerequisites():
    if os.environ.get("KSWAP_VM") != "1":
        skip("the vm suite runs only with KSWAP_VM=1 (a whole Debian VM under qemu, minutes)")
    if os.getuid() != 0:
        skip("needs root (mmdebstrap, device nodes in the image tree)")
    for tool in ("mmdebstrap", "qemu-system-x86_64", "qemu-img", "chroot", "gpgv",
                 "grub-editenv", "mkfs.ext4", "mkfs.btrfs", "mkfs.vfat", "mmd", "mcopy", "sfdisk",
                 "cpio"):
        if not shutil.which(tool):
            skip(f"{tool} not found (apt-get install mmdebstrap qemu-system-x86 qemu-utils "
                 "grub-common e2fsprogs btrfs-progs dosfstools mtools fdisk cpio gpgv)")


class Lock:
    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.f = open(path, "w")

    def __enter__(self):
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *a):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


class Failed(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Failed(msg)


class Scenario:
    """One scenario of a family module (sc_*.py).
    layout: the disk's layout (layers.LAYOUTS); plan: the plan disk's text (driver.sh reads it);
    grub, user: the kernels GRUB starts and userspace runs, boot after boot, as names
    ("OLD", "NEW", "REPO_OLD"; scenarios.resolve makes them releases);
    check(ctx): the family's assertions after the shared ones (scenarios.check_scenario);
    serial(ctx): assertions on the serial text (also by 'kswap-vm.py check');
    measure(ctx): lines of measures to print when it passed;
    user_fn(ctx, want_user): the userspace kernels to expect when the boots tell more (None:
    user as it is); disks(pf, name): images attached read-only after the plan disk;
    qemu: qemu options of every boot; watch: serial lines whose first host time is recorded;
    timeout, boot_timeout: bounds other than common's (the environment's win);
    nic: a virtio NIC on qemu's user network (restrict=on: the guest reaches nothing but what
    is forwarded), the guest's port 22 forwarded from a free port on the host's 127.0.0.1;
    host(hctx): runs in a thread beside the boots (HostCtx), what it records is ctx.host.
    grub and user None: the family checks the sequence of kernels itself (the shared check
    then takes the last boot as the one that ends the plan)."""

    def __init__(self, layout, plan, grub, user, check=None, serial=None, measure=None,
                 user_fn=None, disks=None, qemu=(), watch=(), timeout=None, boot_timeout=None,
                 nic=False, host=None):
        self.layout, self.plan, self.grub, self.user = layout, plan, grub, user
        self.check, self.serial, self.measure, self.user_fn = check, serial, measure, user_fn
        self.disks, self.qemu, self.watch = disks, list(qemu), tuple(watch)
        self.timeout, self.boot_timeout = timeout, boot_timeout
        self.nic, self.host = nic, host


class HostCtx:
    """What a scenario's host thread gets: the serial log (growing), the forwarded SSH port
    (None without a NIC), the event set when the boots are over, and a dict for its records."""

    def __init__(self, log_path, port, stop):
        self.log_path, self.port, self.stop = log_path, port, stop
        self.data = {}


class Ctx:
    """What a scenario's checks get: the platform, the bookworm BIOS twin's name, the scenario,
    its resolved kernels, the serial text and what boot.parse made of it, the watched lines'
    times (boot.boot_sequence's seen), the last boot's journal state and outcome."""

    def __init__(self, pf, name, sc, want_grub, want_user, text, grub, boots, seen):
        self.pf, self.name, self.sc = pf, name, sc
        self.want_grub, self.want_user = want_grub, want_user
        self.text, self.grub, self.boots, self.seen = text, grub, boots, seen or {}
        self.host = {}
        self.last = None
        self.state = self.outcome = None
