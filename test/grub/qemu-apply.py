#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What kswap apply, pin and rollback leave behind, booted by real GRUB under qemu.

Each scenario runs the kswap binary on a copy of test/roots/ubuntu-24.04-kvm/root with the fakes
of test/fakes first on PATH (as test/test-apply.py does), then boots that root's
boot/grub/grub.cfg and boot/grub/grubenv with real GRUB through test/grub/qemu-grub.py (its
--build: Debian 12's 2.06 for BIOS by default, Debian 13's 2.12 for BIOS or UEFI)
(disk image, entry bodies replaced by `echo KSWAP-BOOT <release>; halt`, grubenv read back out of
the image after every boot). Before booting, `kswap --root DIR status --json` gives the forecast;
after boot N the release GRUB printed must be grub.forecast[N-1].kernel and the block GRUB left
must be grub.env with the env_changes of boots 1..N applied (recordfail unset between boots, as
a booted system's grub-common.service does, and nothing else), byte for byte equal to what
forecast-tool (the same GRUB model) writes.
  armed           apply --deb: boot 1 the new kernel (one-shot), boots 2 and 3 the old kernel
  pinned          apply, the trial boot in qemu, its grubenv copied back into the root, the root
                  "booted" into the new kernel (proc/sys/kernel/osrelease), pin --force:
                  every boot the new kernel
  rolled-back     apply, then rollback while armed: every boot the old kernel
  trial-rollback  apply, the trial boot in qemu, rollback on the trial kernel: every boot the
                  old kernel
  trial-damaged   apply, then the trial entry's kernel and initrd are not loadable: GRUB goes on
                  to the old kernel by itself (fallback, no key), next_entry cleared, boot 2 old
usage: qemu-apply.py KSWAP FORECAST_TOOL [--build 2.06-pc|2.12-pc|2.12-efi] [SCENARIO...]
exit 77 when a tool is missing
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

KSWAP = os.path.abspath(sys.argv[1])
TOOL = os.path.abspath(sys.argv[2])
ARGS = sys.argv[3:]
BUILD = "2.06-pc"
if ARGS[:1] == ["--build"]:
    BUILD, ARGS = ARGS[1], ARGS[2:]
ONLY = ARGS
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import kstest  # noqa: E402
from kstest import FAKES, NEW, NEW_PATH, OLD, OLD_PATH  # noqa: E402

BASE_ROOT = kstest.EXAMPLE_ROOT


H = kstest.load_qemu_grub(TOOL, BUILD)  # also puts /usr/sbin on PATH
for tool in ("dpkg-deb", "depmod", (os.environ.get("CC") or "cc").split()[0], "cpio", "zstd", "xz"):
    if not shutil.which(tool):
        print(f"{tool} not installed (needed by test/fakes/make-kernel-deb.sh): skip")
        sys.exit(77)


class Fail(Exception):
    pass


class Scenario:
    def __init__(self, work, name):
        self.name = name
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.lines = []
        self.ok = True

    def say(self, text):
        self.lines.append(f"  {self.name}: {text}")

    def check(self, cond, what, extra=None):
        if cond:
            return
        self.ok = False
        self.say("FAIL " + what)
        if extra:
            for line in str(extra).rstrip().splitlines()[-40:]:
                self.lines.append("      " + line)

    def require(self, cond, what, extra=None):
        self.check(cond, what, extra)
        if not cond:
            raise Fail(what)


def kswap(root, *args):
    return subprocess.run([KSWAP, "--root", root, *args], capture_output=True, text=True,
                          env=kstest.env(), timeout=120)


def kswap_json(sc, root, *args, codes=(0,)):
    p = kswap(root, "--json", *args)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    sc.require(p.returncode in codes and doc is not None,
               f"kswap {' '.join(args)}: exit {p.returncode}, JSON {'ok' if doc else 'unreadable'}",
               p.stderr + p.stdout[:2000])
    return doc


def boot_into(root, release):
    """What a reboot into release looks like from the files kswap reads (as test-apply.py)."""
    with open(os.path.join(root, "proc/sys/kernel/osrelease"), "w") as f:
        f.write(release + "\n")
    with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w") as f:
        f.write("%08x-0000-4000-8000-000000000000\n" % int(time.time() * 1000 % 2**32))


def env_list(data):
    """grub-editenv's reading of a 1024-byte block, as an ordered list of (name, value)."""
    text = H["list_env"](data)
    return [tuple(l.split("=", 1)) for l in text.splitlines() if "=" in l]


def env_bytes(data):
    """The block without its '#' padding, for reports."""
    return repr(data.rstrip(b"#"))


CHANGE = re.compile(r"^(?P<name>[^:]+): (?P<a>unset|'.*?') -> (?P<b>unset|'.*')$")


def apply_changes(sc, env, changes, boot):
    """grub.env plus a forecast boot's env_changes ("name: 'a' -> 'b'", unset for none)."""
    env = dict(env)
    for c in changes:
        m = CHANGE.match(c)
        sc.require(m is not None, f"boot {boot}: cannot read env_changes entry {c!r}")
        a = None if m["a"] == "unset" else m["a"][1:-1]
        b = None if m["b"] == "unset" else m["b"][1:-1]
        sc.check(env.get(m["name"]) == a, f"boot {boot}: env_changes {c!r} does not start from "
                 f"the forecast's previous block ({m['name']}={env.get(m['name'])!r})")
        if b is None:
            env.pop(m["name"], None)
        else:
            env[m["name"]] = b
    return env


def boot_root(sc, core, root, label, want, boots=3):
    """Boots the root's grub.cfg + grubenv `boots` times; returns the block as GRUB and then the
    booted system's userspace (unset recordfail) left it after the last boot."""
    grub = kswap_json(sc, root, "status", codes=(0, 4))["grub"]
    fc = grub["forecast"]
    kernels = [b["kernel"] for b in fc]
    sc.say(f"{label}: kswap status forecasts {' · '.join(str(k) for k in kernels)}")
    sc.require(kernels[:boots] == want[:boots] and not any(b["waits"] for b in fc[:boots]),
               f"{label}: forecast {kernels}, the promise is {want}", json.dumps(fc, indent=1))
    cfg = os.path.join(root, "boot/grub/grub.cfg")
    envf = os.path.join(root, "boot/grub/grubenv")
    with open(envf, "rb") as f:
        env0 = f.read()
    sc.require(dict(env_list(env0)) == grub["env"],
               f"{label}: status grub.env is not what grub-editenv reads in the root",
               f"status: {grub['env']}\nfile:   {env_list(env0)}")
    sc.require(grub["env_writable"], f"{label}: status says GRUB cannot write grubenv")

    sdir = os.path.join(sc.dir, label)
    os.makedirs(sdir)
    stub = os.path.join(sdir, "stub.cfg")
    H["run"](TOOL, "stub", cfg, stub)
    # Byte-exact expectation from the same GRUB model (forecast-tool writes after-N.env).
    out = H["run"](TOOL, "forecast", cfg, envf, "1", sdir, *(["efi"] if H["EFI"] else [])).stdout.decode()
    tool_kernels = [dict(kv.split("=", 1) for kv in l.split())["kernel"] for l in out.splitlines()]
    sc.check(tool_kernels[:boots] == kernels[:boots],
             f"{label}: forecast-tool {tool_kernels} differs from kswap status {kernels}")
    with open(stub, encoding="utf-8") as f:
        img = H["make_image"](sdir, core, f.read(), envf, "ext4")
    off = H["env_offset"](img, "ext4")
    sc.require(H["read_env"](img, off) == env0, f"{label}: the image does not hold the root's grubenv")

    want_env = dict(grub["env"])
    block = env0
    for i in range(boots):
        n = i + 1
        log = os.path.join(sdir, f"serial-{n}.log")
        got, secs = H["boot"](img, log, H["BOOT_TIMEOUT"])
        after = H["read_env"](img, off)
        b = fc[i]
        want_env = apply_changes(sc, want_env, b["env_changes"], n)
        got_env = env_list(after)
        with open(os.path.join(sdir, f"after-{n}.env"), "rb") as f:
            tool_after = f.read()
        same = dict(got_env) == want_env
        same_bytes = after == tool_after
        sc.say(f"{label} boot {n}: GRUB {got or 'printed nothing'}, kswap {b['kernel']}"
               f"{' (one-shot)' if b['one_shot'] else ''}; grubenv {'same' if same else 'DIFFERENT'}"
               f"{'' if same_bytes else ' (bytes DIFFERENT)'} ({secs:.1f}s)")
        sc.check(got == want[i] == b["kernel"],
                 f"{label} boot {n}: GRUB booted {got}, forecast entry {b['title_path']} "
                 f"({b['id_path']}) = {b['kernel']}, promised {want[i]}",
                 f"grubenv GRUB read: {env_bytes(block)}\nserial log: {log}")
        sc.check(same, f"{label} boot {n}: grubenv GRUB left differs from kswap status's forecast",
                 f"GRUB left:   {got_env}\nkswap says:  {sorted(want_env.items())}\n"
                 f"GRUB bytes:  {env_bytes(after)}\nGRUB read:   {env_bytes(block)}")
        sc.check(same_bytes, f"{label} boot {n}: grubenv bytes differ from forecast-tool's",
                 f"GRUB:          {env_bytes(after)}\nforecast-tool: {env_bytes(tool_after)}")
        if not sc.ok:
            raise Fail(f"{label} boot {n}")
        # The booted system's grub-common.service: grub-editenv grubenv unset recordfail.
        tmp = os.path.join(sdir, "userspace.env")
        with open(tmp, "wb") as f:
            f.write(after)
        H["run"]("grub-editenv", tmp, "unset", "recordfail")
        with open(tmp, "rb") as f:
            block = f.read()
        H["write_env"](img, off, block)
        want_env.pop("recordfail", None)
    return block


def applied_root(sc, deb):
    root = os.path.join(sc.dir, "root")
    shutil.copytree(BASE_ROOT, root, symlinks=True)
    d = kswap_json(sc, root, "apply", "--deb", deb, "--yes")
    fc = [b["kernel"] for b in d.get("grub", {}).get("forecast", [])]
    sc.require(d.get("state") == "armed" and fc == [NEW, OLD, OLD],
               f"apply: state {d.get('state')}, forecast {fc}; promised armed, {[NEW, OLD, OLD]}")
    return root


def grubenv_vars(root):
    with open(os.path.join(root, "boot/grub/grubenv"), "rb") as f:
        return dict(env_list(f.read()))


def trial_boot(sc, core, root):
    """The trial boot under qemu; its grubenv goes back into the root and the root now runs
    the new kernel."""
    block = boot_root(sc, core, root, "trial", [NEW], boots=1)
    with open(os.path.join(root, "boot/grub/grubenv"), "wb") as f:
        f.write(block)
    boot_into(root, NEW)


def armed(sc, core, deb):
    boot_root(sc, core, applied_root(sc, deb), "after apply", [NEW, OLD, OLD])


def pinned(sc, core, deb):
    root = applied_root(sc, deb)
    trial_boot(sc, core, root)
    d = kswap_json(sc, root, "pin", "--force")
    sc.check(d.get("state") == "pinned", f"pin --force: state {d.get('state')}")
    e = grubenv_vars(root)
    sc.check(e.get("saved_entry") == NEW_PATH and not e.get("next_entry") and
             "prev_saved_entry" not in e, "pin: saved_entry = new kernel, no one-shot", e)
    boot_root(sc, core, root, "after pin", [NEW, NEW, NEW])


def rolled_back(sc, core, deb):
    root = applied_root(sc, deb)
    d = kswap_json(sc, root, "rollback")
    sc.check(d.get("state") == "rolled-back", f"rollback: state {d.get('state')}")
    e = grubenv_vars(root)
    sc.check(e.get("saved_entry") == OLD_PATH and not e.get("next_entry"),
             "rollback: saved_entry = old kernel, no one-shot", e)
    boot_root(sc, core, root, "after rollback", [OLD, OLD, OLD])


def trial_rollback(sc, core, deb):
    root = applied_root(sc, deb)
    trial_boot(sc, core, root)
    d = kswap_json(sc, root, "rollback")
    sc.check(d.get("state") == "rolled-back", f"rollback on the trial kernel: state {d.get('state')}")
    boot_root(sc, core, root, "after rollback", [OLD, OLD, OLD])


def trial_damaged(sc, core, deb):
    """The trial kernel damaged after arming: the trial entry's body is the real failing path
    (linux and initrd of a file without the bzImage header), nothing else of kswap's grub.cfg
    changes. GRUB must go on to the old kernel by itself (the fallback kswap sets for the
    one-shot boot only), clear next_entry, and boot the old kernel afterwards."""
    root = applied_root(sc, deb)
    cfg = os.path.join(root, "boot/grub/grub.cfg")
    sdir = os.path.join(sc.dir, "damaged")
    os.makedirs(sdir)
    stub = os.path.join(sdir, "stub.cfg")
    H["run"](TOOL, "stub", cfg, stub)
    with open(stub, encoding="utf-8") as f:
        text = f.read()
    head = re.search(r"^menuentry 'kswap trial: [^\n]*\{\n(.*?)^\}", text, re.S | re.M)
    sc.require(head is not None, "stub.cfg has no kswap trial entry", text[-3000:])
    # The stub's body prints the release and halts; keep its terminal line, load instead.
    body = re.sub(r"\techo KSWAP-BOOT \S+\n\thalt\n",
                  "\tlinux\t/boot/vmlinuz-damaged root=/dev/vda1 ro\n\tinitrd\t/boot/initrd-damaged\n",
                  head.group(1))
    sc.require("vmlinuz-damaged" in body, "the trial entry's stub body has no echo/halt", head.group(1))
    text = text[:head.start(1)] + body + text[head.end(1):]
    sc.require('set fallback="0"' in text, "stub.cfg lost the fallback line")
    envf = os.path.join(root, "boot/grub/grubenv")
    img = H["make_image"](sdir, core, text, envf, "ext4",
                          extra={"/boot/vmlinuz-damaged": b"not a kernel " * 1000,
                                 "/boot/initrd-damaged": b"not an initrd " * 300})
    off = H["env_offset"](img, "ext4")
    for n, want in ((1, OLD), (2, OLD)):
        log = os.path.join(sdir, f"serial-{n}.log")
        got, secs = H["boot"](img, log, max(H["BOOT_TIMEOUT"], 60))
        after = dict(env_list(H["read_env"](img, off)))
        with open(log, "rb") as f:
            serial = f.read().decode("utf-8", "replace")
        sc.say(f"damaged trial boot {n}: GRUB {got or 'printed nothing'} ({secs:.1f}s)")
        sc.check(got == want, f"boot {n}: GRUB booted {got}, want {want} without a key",
                 f"serial log: {log}\n{serial[-1500:]}")
        if n == 1:
            sc.check("invalid magic number" in serial, "boot 1: GRUB refuses the damaged kernel",
                     serial[-1500:])
            sc.check("Falling back to `kswap way back: " + OLD in serial,
                     "boot 1: GRUB says it falls back to the way-back entry", serial[-1500:])
        sc.check(not after.get("next_entry") and after.get("saved_entry") == OLD_PATH,
                 f"boot {n}: next_entry cleared, saved_entry the old kernel", after)
        if not sc.ok:
            raise Fail(f"damaged boot {n}")


SCENARIOS = [("armed", armed), ("pinned", pinned), ("rolled-back", rolled_back),
             ("trial-rollback", trial_rollback), ("trial-damaged", trial_damaged)]


def run_scenario(work, core, deb, name, fn):
    sc = Scenario(work, name)
    t0 = time.monotonic()
    try:
        fn(sc, core, deb)
    except Fail:
        pass
    except Exception as e:  # a tool failed: report it with the scenario
        sc.check(False, f"{type(e).__name__}: {e}", getattr(e, "stderr", None))
    sc.say(f"{'ok' if sc.ok else 'FAILED'} ({time.monotonic() - t0:.0f}s)")
    return sc


def main():
    work = tempfile.mkdtemp(prefix="kswap-qemu-apply-")
    t0 = time.monotonic()
    failed = []
    try:
        deb = os.path.join(work, "xanmod.deb")
        subprocess.run(["bash", os.path.join(FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                        "builtin"], check=True, capture_output=True)
        core = H["build_base"](work)
        jobs = int(os.environ.get("KS_QEMU_JOBS", "2"))
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(run_scenario, work, core, deb, name, fn)
                       for name, fn in SCENARIOS if not ONLY or name in ONLY]
            for fut in futures:
                sc = fut.result()
                print("\n".join(sc.lines), flush=True)
                if not sc.ok:
                    failed.append(sc.name)
    finally:
        if failed or os.environ.get("KS_KEEP"):
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{time.monotonic() - t0:.0f}s, failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
