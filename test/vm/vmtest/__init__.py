# SPDX-License-Identifier: GPL-2.0-or-later
"""The whole-VM harness (test/vm/kswap-vm.py is its command line): a real Debian under qemu
(TCG) with real GRUB, two real kernels, systemd and the kswap build under test goes through
apply, the trial boot, accept and pin, and survives failing, dying and stuck kernels.

  common.py      the cache, bounds, qemu's base command line, logging, the cache lock
  platforms.py   suites and firmwares, OLD and NEW, the mirror lines (vmplatform.py: trixie's
                 indexes, OVMF, the ESP)
  layers.py      the cached trees: layer 1 (mmdebstrap) and the layouts' second layers
                 (vmrepo.py, vmfleet.py)
  disk.py        layer 2, the bootable disk of a layout, and its first boot (update-grub)
  guestfiles.py  what the test adds to every image; driver.sh, the guest driver
  initrd.py      the initrd that cannot find its root disk (scenario panic)
  boot.py        booting a disk through a plan, reading the serial log
  scenarios.py   the registry and the assertions every scenario shares; one module per
                 family: sc_swap.py, sc_stuck.py, sc_repo.py, sc_install.py
  cli.py         build, run, check

Each scenario boots a qcow2 overlay of the disk; a second small raw disk (/dev/vdb) carries the
scenario's plan: what the VM does at its Nth boot (apply, reboot, ...). Every boot prints on the
serial line GRUB's "Loading Linux REL ..." and, from userspace, "KSWAP-VM BOOT n KERNEL REL" and
"KSWAP-VM STATUS n {kswap status --json}"; the scenario asserts the kernel of each boot.
"""
import os
import sys

# test/vm: the sibling modules (vmplatform, vmfleet, vmrepo); test/: kstest
VM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _d in (os.path.dirname(VM_DIR), VM_DIR):
    if _d not in sys.path:
        sys.path.insert(0, _d)
