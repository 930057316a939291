# SPDX-License-Identifier: GPL-2.0-or-later
"""What the test adds to every image besides kswap: the guest driver (driver.sh, run early and
late in each boot), its units, the trial-only mount generator (scenario trial-emergency), the
VM's kswap.conf, GRUB's defaults and the small initrds' initramfs-tools configuration."""
import os

import vmrepo

ROOT_UUID = "5a1e0000-6b73-7761-7000-000000000001"
BOOT_UUID = "5a1e0000-6b73-7761-7000-000000000002"
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "driver.sh")

INITRAMFS_CONF = "MODULES=list\nCOMPRESS=zstd\n"
INITRAMFS_HOOK = """#!/bin/sh
# kswap VM test: MODULES=list plus the drivers of the VM's root disk.
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in prereqs) prereqs; exit 0;; esac
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_blk ext4
"""


UNITS = {
    "kswap-vm-early.service": """[Unit]
Description=kswap VM test: count this boot
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target
[Service]
Type=oneshot
ExecStart=/usr/local/lib/kswap-vm/vm early
[Install]
WantedBy=sysinit.target
""",
    "kswap-vm-firstboot.service": """[Unit]
Description=kswap VM test: first boot of the image (update-grub, power off)
ConditionPathExists=/etc/kswap-vm/firstboot
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/lib/kswap-vm/vm firstboot
[Install]
WantedBy=multi-user.target
""",
    "kswap-vm.service": """[Unit]
Description=kswap VM test: report this boot, then do what the plan says
After=kswap-accept.service multi-user.target
[Service]
# simple, not oneshot: the boot does not wait for it (no spinner on the console)
Type=simple
ExecStart=/usr/local/lib/kswap-vm/vm late
[Install]
WantedBy=multi-user.target
""",
    # Issue 12 (b): a start job that never ends; enabled by the plan (stuckjob), harmful on
    # the trial boot only.
    "kswap-vm-trial-stuck.service": """[Unit]
Description=kswap VM test: a start job that never ends (trial boot only)
ConditionKernelCommandLine=kswap.trial
Before=multi-user.target
[Service]
Type=oneshot
ExecStart=/bin/sleep infinity
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
""",
    # Issue 12 (d): the whole machine hangs without a panic (trial boot only; enabled by the
    # plan: hang). Before multi-user.target, so accept never runs.
    "kswap-vm-trial-hang.service": """[Unit]
Description=kswap VM test: a hang only the watchdog ends (trial boot only)
ConditionKernelCommandLine=kswap.trial
Before=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/lib/kswap-vm/vm hang
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
""",
    "vm-app.service": """[Unit]
Description=kswap VM test: the workload accept checks
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/lib/kswap-vm/vm app
[Install]
WantedBy=multi-user.target
""",
    "vm-listen.socket": """[Unit]
Description=kswap VM test: a listening port
[Socket]
ListenStream=7777
Accept=yes
[Install]
WantedBy=sockets.target
""",
    "vm-listen@.service": """[Unit]
Description=kswap VM test: connection on 7777
[Service]
ExecStart=/bin/cat
StandardInput=socket
""",
}

# Issue 12 (a): a mount that fails on the trial boot only, as systemd-fstab-generator would
# write it for an fstab line naming a disk that is not there (its device timeout 5 s instead of
# 90 s, so that emergency mode comes well before the 60 s deadline). Only on the boot whose
# command line carries kswap.trial= and once the plan said "emergency".
TRIAL_MOUNT_GENERATOR = r"""#!/bin/sh
# kswap VM test (test/vm/vmtest, scenario trial-emergency). Not part of kswap.
[ -e /etc/kswap-vm/trial-emergency ] || exit 0
grep -q 'kswap\.trial=' /proc/cmdline 2>/dev/null || exit 0
d=${1:-/run/systemd/generator}
cat > "$d/mnt-kswapdata.mount" <<UNIT
[Unit]
Description=kswap VM test: a data disk only the trial boot mounts (it does not exist)
ConditionKernelCommandLine=kswap.trial
Before=local-fs.target
[Mount]
What=/dev/disk/by-uuid/@MISSING_UUID@
Where=/mnt/kswapdata
Type=ext4
UNIT
dev='dev-disk-by\x2duuid-@MISSING_UNIT@.device'
mkdir -p "$d/$dev.d" "$d/local-fs.target.requires"
printf '[Unit]\nJobRunningTimeoutSec=5s\n' > "$d/$dev.d/timeout.conf"
ln -sf ../mnt-kswapdata.mount "$d/local-fs.target.requires/mnt-kswapdata.mount"
"""
MISSING_UUID = "5a1e0000-6b73-7761-7000-0000000000dd"
TRIAL_MOUNT_GENERATOR = TRIAL_MOUNT_GENERATOR.replace("@MISSING_UUID@", MISSING_UUID).replace(
    "@MISSING_UNIT@", MISSING_UUID.replace("-", "\\x2d"))

KSWAP_CONF = """# kswap VM test (test/vm/vmtest): checks that fit the VM.
[verify]
bbr_version = 1
[accept]
services = vm-app.service
listen = tcp:7777
sysctl = net.ipv4.tcp_congestion_control=bbr net.core.default_qdisc=fq
modules = tcp_bbr sch_fq virtio_blk ext4
timeout = 40
interval = 2
# The scenario's own driver: it runs apply at arming and the plan after accept, so it is active
# in the snapshot and not yet on the trial boot when accept runs.
ignore = service:kswap-vm.service
auto_pin = yes
on_failure = reboot
"""

ACCEPT_DROPIN = """[Service]
# kswap VM test: accept's words on the serial console too.
StandardOutput=journal+console
StandardError=journal+console
"""

DEFAULT_GRUB = """GRUB_DEFAULT="gnulinux-advanced-{root}>gnulinux-{old}-advanced-{root}"
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="console=ttyS0,115200 panic=5"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB_DISABLE_OS_PROBER=true
"""



def driver(old, new):
    """The guest driver with the image's kernels and the repository helpers filled in."""
    with open(DRIVER) as f:
        script = f.read()
    return (script.replace("@OLD@", old).replace("@NEW@", new)
            .replace("@REPO_SHELL@", vmrepo.VM_SHELL))


def vm_files(pf, old=None):
    """path -> (mode, text) of everything the test adds to the image (besides kswap). old: the
    kernel the image starts on (default the platform's OLD; the repo disk's REPO_OLD)."""
    old = old or pf.old
    files = {
        "usr/local/lib/kswap-vm/vm": (0o755, driver(old, pf.new)),
        "etc/kswap/kswap.conf": (0o644, KSWAP_CONF),
        "etc/systemd/system/kswap-accept.service.d/kswap-vm.conf": (0o644, ACCEPT_DROPIN),
        "etc/sysctl.d/90-kswap-vm-bbr.conf": (0o644, "net.core.default_qdisc = fq\n"
                                              "net.ipv4.tcp_congestion_control = bbr\n"),
        "etc/modules-load.d/kswap-vm-bbr.conf": (0o644, "tcp_bbr\nsch_fq\n"),
        "etc/default/grub": (0o644, DEFAULT_GRUB.format(root=ROOT_UUID, old=old)),
        "etc/hostname": (0o644, "kswap-vm\n"),
        "etc/kswap-vm/firstboot": (0o644, ""),
        "etc/systemd/system-generators/kswap-vm-trial-mount": (0o755, TRIAL_MOUNT_GENERATOR),
        "var/lib/kswap-vm/boots": (0o644, "0\n"),
    }
    for n, t in UNITS.items():
        files["etc/systemd/system/" + n] = (0o644, t)
    return files


def first_grub_cfg(boot_prefix, old):
    """Only for the first boot; that boot's update-grub writes the real one."""
    return f"""serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
set timeout=0
menuentry 'kswap-vm first boot' {{
  insmod gzio
  echo 'Loading Linux {old} ...'
  linux {boot_prefix}/vmlinuz-{old} root=UUID={ROOT_UUID} ro console=ttyS0,115200 panic=5
  initrd {boot_prefix}/initrd.img-{old}
}}
"""
