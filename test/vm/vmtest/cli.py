# SPDX-License-Identifier: GPL-2.0-or-later
"""usage: kswap-vm.py build [--layout LAYOUT] [--suite bookworm|trixie] [--firmware bios|uefi]
                         build (or find in the cache) the image; layouts: LAYOUTS
       kswap-vm.py run SCENARIO...       run scenarios (default: every bookworm BIOS one):
                                         SCENARIOS
       kswap-vm.py check SCENARIO SERIAL_LOG   the scenario's assertions on a kept serial log
Environment: KSWAP_VM=1 is required (otherwise exit 77); KS_CACHE (default
/var/cache/kswap-test/vm) holds the images; KS_BUILD_ROOT is the meson build dir whose kswap is
installed into the image (meson install --destdir); KS_VM_WORK keeps the serial logs there.
KS_VM_BOOT_TIMEOUT and KS_VM_SCENARIO_TIMEOUT override the bounds. Exit 77 when a prerequisite
is missing (root, mmdebstrap, qemu, the Debian mirror, the image build)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import boot, common, disk, layers, platforms, scenarios
from .common import Failed, HostCtx, expect, skip


def usage():
    return (__doc__.replace("LAYOUTS", " ".join(layers.LAYOUTS))
            .replace("SCENARIOS", " ".join(scenarios.ALL)))


def bounds(sc):
    """(the whole scenario's, one boot's) bounds: the environment's, else the scenario's own."""
    limit = common.SCENARIO_TIMEOUT
    if sc.timeout and "KS_VM_SCENARIO_TIMEOUT" not in os.environ:
        limit = sc.timeout
    boot_limit = common.BOOT_TIMEOUT
    if sc.boot_timeout and "KS_VM_BOOT_TIMEOUT" not in os.environ:
        boot_limit = sc.boot_timeout
    return limit, boot_limit


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nic_args(port):
    """A virtio NIC on qemu's user network: DHCP, nothing reachable but the forwarded port."""
    return ["-nic", "user,restrict=on,model=virtio-net-pci,"
            f"hostfwd=tcp:127.0.0.1:{port}-:22"]


def run_one(name):
    """Builds the scenario's disk, boots it through its plan and checks it. None when it
    passed, else why it failed."""
    pf, twin, sc, want_grub, want_user = scenarios.resolve(name)
    t0 = time.monotonic()
    extra = []
    try:
        img = disk.build_disk(pf, sc.layout)
        if sc.disks:
            extra = sc.disks(pf, twin)
    except (subprocess.CalledProcessError, OSError) as e:
        err = getattr(e, "stderr", b"") or b""
        print(err.decode(errors="replace")[-2000:] if isinstance(err, bytes) else err)
        skip(f"building the {pf.name} {sc.layout} image failed: {e}")
    t1 = time.monotonic()
    work = os.path.join(os.environ.get("KS_VM_WORK") or tempfile.mkdtemp(prefix="kswap-vm-"), name)
    os.makedirs(work, exist_ok=True)
    log_path = os.path.join(work, "serial.log")
    limit, boot_limit = bounds(sc)
    seen = {}
    port = free_port() if sc.nic else None
    hctx = HostCtx(log_path, port, threading.Event())
    open(log_path, "wb").close()
    companion = None
    if sc.host:
        companion = threading.Thread(target=sc.host, args=(hctx,), name=f"{name}-host",
                                     daemon=True)
        companion.start()
    total = limit if want_grub is None else min(len(want_grub) * boot_limit, limit)
    try:
        text, why, secs, per_boot = boot.boot_sequence(
            pf, img, sc.plan, log_path, total_timeout=total, extra=extra,
            boot_timeout=boot_limit, watch=sc.watch, seen=seen,
            qemu_extra=sc.qemu + (nic_args(port) if port else []))
    finally:
        hctx.stop.set()
        if companion:
            companion.join(120)
    grub, boots = boot.parse(text)
    ctx = scenarios.context(name, text, grub, boots, seen)
    ctx.host = hctx.data
    try:
        expect(why is None, why or "")
        scenarios.check_all(ctx)
    except Failed as e:
        print(f"FAIL {name} ({pf.name}): {e}\n  GRUB: {grub}\n  boots: "
              f"{json.dumps({k: {x: y for x, y in v.items() if x != 'status'} for k, v in boots.items()})}"
              f"\n  serial log {log_path}", flush=True)
        for n, b in sorted(boots.items()):
            print(f"  boot {n} journal {boot.journal(b.get('status'))}")
        print("---- last KSWAP-VM lines ----")
        for ln in text.splitlines():
            if "KSWAP-VM" in ln or "kswap" in ln.lower():
                print("  " + ln[:400])
        return str(e)
    print(f"ok {name} ({pf.name}): {len(grub)} boots {grub}, {secs:.0f} s (image "
          f"{t1 - t0:.0f} s); to the first kernel, then per boot: "
          f"{' '.join(f'{x:.0f}' for x in per_boot)} s; serial log {log_path}", flush=True)
    for ln in (sc.measure(ctx) if sc.measure else []):
        print("  measured: " + ln, flush=True)
    for n, whole, inst in boot.apply_times(boots):
        print(f"  apply of boot {n}: {whole:.0f} s, of it the install step (apt-get "
              f"update, install, dpkg and its hooks) {inst:.0f} s, the other steps "
              f"(kswap and its update-grub runs) {whole - inst:.0f} s", flush=True)
    return None


def run_scenarios(names):
    t_all = time.monotonic()
    unknown = [n for n in names if n not in scenarios.ALL]
    if unknown:
        print(f"unknown scenario {unknown[0]}; known: {' '.join(scenarios.ALL)}")
        return 1
    failed = [n for n in names if run_one(n) is not None]
    print(f"vm suite: {len(names) - len(failed)}/{len(names)} passed in "
          f"{time.monotonic() - t_all:.0f} s", flush=True)
    return 1 if failed else 0


def check_log(name, path):
    """The assertions again on a kept serial log (developing them, proving they can fail)."""
    text = open(path, "rb").read().decode(errors="replace")
    grub, boots = boot.parse(text)
    ctx = scenarios.context(name, text, grub, boots)
    try:
        scenarios.check_all(ctx)
    except Failed as e:
        print(f"FAIL {name}: {e}")
        return 1
    print(f"ok {name}: {grub}")
    return 0


def build(args):
    layout, suite, firmware = "ext4", "bookworm", "bios"
    for opt in ("--layout", "--suite", "--firmware"):
        if opt in args:
            v = args[args.index(opt) + 1]
            if opt == "--layout":
                layout = v
            elif opt == "--suite":
                suite = v
            else:
                firmware = v
    if suite not in platforms.SUITE_PACKAGES or firmware not in platforms.GRUB_TARGET:
        print(f"unknown suite {suite} or firmware {firmware}")
        return 2
    pf = platforms.Platform(suite, firmware)
    if layout not in layers.LAYOUTS or not layers.LAYOUTS[layout].available(pf):
        print(f"no {layout} layout for {suite} {firmware}: "
              + "; ".join(f"{n} on {' '.join(lay.only or ('every suite',))} "
                          f"{'/'.join(lay.firmware)}" for n, lay in layers.LAYOUTS.items()))
        return 2
    try:
        print(disk.build_disk(pf, layout))
    except (subprocess.CalledProcessError, OSError) as e:
        skip(f"building the {pf.name} {layout} image failed: {e} {getattr(e, 'stderr', '')}")
    return 0


def main(argv):
    if not argv or argv[0] not in ("build", "run", "check"):
        print(usage())
        return 2
    if argv[0] == "check":
        if len(argv) != 3 or argv[1] not in scenarios.ALL:
            print(usage())
            return 2
        return check_log(argv[1], argv[2])
    common.prerequisites()
    if argv[0] == "build":
        return build(argv[1:])
    # the default: bookworm BIOS's scenarios (the other platforms by name)
    return run_scenarios(argv[1:] or list(scenarios.SCENARIOS))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
