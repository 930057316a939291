#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Regenerates the fixture roots under test/roots/ from the real data in test/fixtures/ and
# the small synthetic files below. The roots are kept in git; run this only to change them,
# then review the diff and refresh the expected output (KS_UPDATE_EXPECTED=1 meson test
# --suite roots). Needs e2fsprogs, btrfs-progs and dosfstools for the filesystem images.
# Usage: test/roots/generate.sh [SHARED_FIXTURES_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fx=${1:-$here/../fixtures}
fx=$(cd "$fx" && pwd)
export LC_ALL=C

UUID=f93ca2dd-74af-4ee8-b478-970b29be5ca3 # root fs UUID used in ubuntu-24.04-two-kernels.cfg
OLD=6.8.0-48-generic
PREV=6.8.0-45-generic
BOOTID=5b0c1a6e-3f27-4c47-9a51-2f1b8d6a9e40

w() { mkdir -p "$(dirname "$1")"; cat > "$1"; }           # write stdin to a file
line() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }

# A filesystem image standing in for a block device: only the superblock region is kept
# (libblkid needs no more), so the roots stay small.
ext4_image() { # path uuid [label]
  local t; t=$(mktemp); truncate -s 8M "$t"
  mkfs.ext4 -q -F -U "$2" ${3:+-L "$3"} -E root_owner=0:0 "$t"
  truncate -s 64K "$t"; mkdir -p "$(dirname "$1")"; mv "$t" "$1"; chmod 644 "$1"
}
btrfs_image() { # path uuid
  local t; t=$(mktemp); truncate -s 120M "$t"
  mkfs.btrfs -q -f -U "$2" "$t" >/dev/null; truncate -s 1M "$t"; mkdir -p "$(dirname "$1")"; mv "$t" "$1"
  chmod 644 "$1"
}
vfat_image() { # path volid
  local t; t=$(mktemp); truncate -s 34M "$t"
  mkfs.vfat -F 32 -i "$2" "$t" >/dev/null; truncate -s 64K "$t"; mkdir -p "$(dirname "$1")"; mv "$t" "$1"
  chmod 644 "$1"
}

# sysfs for a virtio disk vda with partitions: real sysfs has relative links from
# sys/dev/block/MAJ:MIN into sys/devices/..., and the disk's device/driver link.
virtio_disk() { # root partitions...
  local r=$1; shift
  local d=sys/devices/pci0000:00/0000:00:04.0/virtio1
  mkdir -p "$r/$d/block/vda" "$r/sys/dev/block" "$r/sys/bus/virtio/drivers/virtio_blk"
  ln -sfn ../../../../bus/virtio/drivers/virtio_blk "$r/$d/driver"
  : > "$r/sys/bus/virtio/drivers/virtio_blk/uevent"
  ln -sfn ../../../virtio1 "$r/$d/block/vda/device"
  line "$r/$d/block/vda/dev" "252:0"
  ln -sfn "../../devices/pci0000:00/0000:00:04.0/virtio1/block/vda" "$r/sys/dev/block/252:0"
  for p in "$@"; do
    mkdir -p "$r/$d/block/vda/vda$p"
    line "$r/$d/block/vda/vda$p/partition" "$p"
    line "$r/$d/block/vda/vda$p/dev" "252:$p"
    ln -sfn "../../devices/pci0000:00/0000:00:04.0/virtio1/block/vda/vda$p" "$r/sys/dev/block/252:$p"
  done
}

common_proc() { # root release cmdline
  local r=$1
  line "$r/proc/sys/kernel/osrelease" "$2"
  line "$r/proc/sys/kernel/random/boot_id" "$BOOTID"
  line "$r/proc/cmdline" "$3"
  w "$r/proc/stat" <<EOT
cpu  120837 32 43617 7650923 4913 0 1623 1220 0 0
cpu0 60712 16 21990 3824541 2501 0 1210 611 0 0
cpu1 60125 16 21627 3826382 2412 0 413 609 0 0
intr 12345678 22 9 0 0 0 0 0 0 0 0
ctxt 24562347
btime 1764400000
processes 51234
procs_running 1
procs_blocked 0
softirq 9876543 0 2345678 12 345678 0 0 1234 2345678 0 2345678
EOT
  line "$r/proc/sys/net/ipv4/tcp_congestion_control" "bbr"
  printf 'reno cubic bbr\n' > "$r/proc/sys/net/ipv4/tcp_available_congestion_control"
  line "$r/proc/sys/net/core/default_qdisc" "fq"
}

kvm_dmi() { # root vendor product
  local r=$1 dmi=$1/sys/class/dmi/id
  mkdir -p "$dmi" "$r/sys/devices/system/clocksource/clocksource0"
  line "$dmi/sys_vendor" "$2"
  line "$dmi/product_name" "$3"
  line "$dmi/board_vendor" ""
  line "$dmi/bios_vendor" "SeaBIOS"
  line "$dmi/bios_version" "1.16.3-debian-1.16.3-2"
  line "$r/sys/devices/system/clocksource/clocksource0/available_clocksource" "kvm-clock tsc acpi_pm "
  line "$r/sys/devices/system/clocksource/clocksource0/current_clocksource" "kvm-clock"
}

installed_kernel() { # root release [builtin-bbr]
  local r=$1 rel=$2 m=$1/lib/modules/$2
  mkdir -p "$r/boot" "$m/kernel/net/ipv4" "$m/kernel/net/sched" "$m/kernel/drivers/net/wireguard"
  # What apply and plan read back of a kernel: a bzImage setup header and the length it
  # announces (the tests' synthetic image, 4 KiB), and a real initramfs (a newc archive made by
  # GNU cpio and compressed by zstd, test/fixtures/boot/SOURCES.md) that decompresses.
  python3 "$here/../fakes/synthetic-vmlinuz.py" "$rel" "$r/boot/vmlinuz-$rel"
  cp "$fx/boot/initrd-zstd.head" "$r/boot/initrd.img-$rel"
  printf '# placeholder for System.map\n' > "$r/boot/System.map-$rel"
  printf 'kernel/net/ipv4/tcp_cubic.ko\nkernel/drivers/block/virtio_blk.ko\nkernel/fs/ext4/ext4.ko\n' > "$m/modules.builtin"
  : > "$m/kernel/net/ipv4/tcp_bbr.ko.zst"
  : > "$m/kernel/net/sched/sch_fq.ko.zst"
  : > "$m/kernel/net/sched/sch_cake.ko.zst"
  : > "$m/kernel/drivers/net/wireguard/wireguard.ko.zst"
  printf 'kernel/net/ipv4/tcp_bbr.ko\nkernel/net/sched/sch_fq.ko\nkernel/net/sched/sch_cake.ko\nkernel/drivers/net/wireguard/wireguard.ko\n' > "$m/modules.order"
}

dpkg_status() { # root packages...
  local r=$1; shift
  mkdir -p "$r/var/lib/dpkg"
  : > "$r/var/lib/dpkg/status"
  for p in "$@"; do
    printf 'Package: %s\nStatus: install ok installed\nPriority: optional\nArchitecture: amd64\nVersion: %s\n\n' \
      "${p%%=*}" "${p#*=}" >> "$r/var/lib/dpkg/status"
  done
}

sysctl_bbr() { # root
  w "$1/etc/sysctl.d/60-vpn-tuning.conf" <<'EOT'
# VPN node profile
net.core.default_qdisc = fq
net.ipv4.tcp_congestion_control = bbr
net.ipv4.ip_forward = 1
net.netfilter.nf_conntrack_max = 1048576
EOT
  w "$1/etc/sysctl.conf" <<'EOT'
# /etc/sysctl.conf - Configuration file for setting system variables
#net.ipv4.ip_forward=1
EOT
  ln -sfn ../sysctl.conf "$1/etc/sysctl.d/99-sysctl.conf"
  w "$1/usr/lib/sysctl.d/50-default.conf" <<'EOT'
net.core.default_qdisc = fq_codel
kernel.sysrq = 0x01b6
EOT
}

# The bundled example node: Ubuntu 24.04 cloud image on a KVM VPS (BIOS, /dev/vda1 ext4),
# stock GRUB settings, two generic kernels, BBR configured and live.
accept_unit() { # root: kswap-accept.service installed and enabled, as kswap's package leaves it
  local r=$1
  line "$r/usr/lib/systemd/system/kswap-accept.service" "# kswap-accept.service (fixture: only its presence counts)"
  mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
  ln -sfn /usr/lib/systemd/system/kswap-accept.service \
    "$r/etc/systemd/system/multi-user.target.wants/kswap-accept.service"
}

ubuntu_kvm() { # root
  local r=$1
  rm -rf "$r"; mkdir -p "$r"
  accept_unit "$r"
  cp "$fx/os-release/ubuntu-24.04-noble.os-release" "$r/etc-os-release.tmp"
  mkdir -p "$r/etc" "$r/usr/lib"; mv "$r/etc-os-release.tmp" "$r/usr/lib/os-release"
  ln -sfn ../usr/lib/os-release "$r/etc/os-release"
  mkdir -p "$r/proc/self"
  cp "$fx/cpuinfo/kvm-guest-qemu-model-haswell-noTSX-ibrs-v3.txt" "$r/proc/cpuinfo"
  w "$r/proc/self/mountinfo" <<'EOT'
22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
24 28 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=1972696k,nr_inodes=493174,mode=755,inode64
25 24 0:23 / /dev/pts rw,nosuid,noexec,relatime shared:3 - devpts devpts rw,gid=5,mode=620,ptmxmode=000
26 28 0:24 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=402064k,mode=755,inode64
28 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,discard,errors=remount-ro,commit=30
29 22 0:6 / /sys/kernel/security rw,nosuid,nodev,noexec,relatime shared:8 - securityfs securityfs rw
30 24 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,inode64
31 26 0:26 / /run/lock rw,nosuid,nodev,noexec,relatime shared:6 - tmpfs tmpfs rw,size=5120k,inode64
32 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
33 22 0:28 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:10 - pstore pstore rw
34 22 0:29 / /sys/fs/bpf rw,nosuid,nodev,noexec,relatime shared:11 - bpf bpf rw,mode=700
35 23 0:30 / /proc/sys/fs/binfmt_misc rw,relatime shared:12 - autofs systemd-1 rw,fd=32,pgrp=1,timeout=0,minproto=5,maxproto=5,direct,pipe_ino=2210
36 24 0:20 / /dev/mqueue rw,nosuid,nodev,noexec,relatime shared:14 - mqueue mqueue rw
37 22 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:15 - debugfs debugfs rw
38 22 0:12 / /sys/kernel/tracing rw,nosuid,nodev,noexec,relatime shared:16 - tracefs tracefs rw
39 22 0:31 / /sys/fs/fuse/connections rw,nosuid,nodev,noexec,relatime shared:17 - fusectl fusectl rw
40 22 0:32 / /sys/kernel/config rw,nosuid,nodev,noexec,relatime shared:18 - configfs configfs rw
101 28 7:0 / /snap/core22/1663 ro,nodev,relatime shared:57 - squashfs /dev/loop0 ro,errors=continue,threads=single
103 28 7:1 / /snap/snapd/21759 ro,nodev,relatime shared:59 - squashfs /dev/loop1 ro,errors=continue,threads=single
EOT
  ext4_image "$r/dev/vda1" "$UUID" cloudimg-rootfs
  virtio_disk "$r" 1 14 15
  kvm_dmi "$r" "QEMU" "Standard PC (i440FX + PIIX, 1996)"
  common_proc "$r" "$OLD" "BOOT_IMAGE=/boot/vmlinuz-$OLD root=UUID=$UUID ro console=tty1 console=ttyS0"
  w "$r/proc/modules" <<'EOT'
tcp_bbr 20480 12 - Live 0x0000000000000000
sch_fq 24576 2 - Live 0x0000000000000000
wireguard 114688 0 - Live 0x0000000000000000
libchacha20poly1305 16384 1 wireguard, Live 0x0000000000000000
curve25519_x86_64 36864 1 wireguard, Live 0x0000000000000000
ip6_udp_tunnel 16384 1 wireguard, Live 0x0000000000000000
udp_tunnel 28672 1 wireguard, Live 0x0000000000000000
nft_chain_nat 12288 2 - Live 0x0000000000000000
nf_nat 61440 1 nft_chain_nat, Live 0x0000000000000000
nf_conntrack 196608 1 nf_nat, Live 0x0000000000000000
nf_tables 376832 40 nft_chain_nat, Live 0x0000000000000000
virtio_net 77824 0 - Live 0x0000000000000000
EOT
  installed_kernel "$r" "$OLD"
  installed_kernel "$r" "$PREV"
  ln -sfn "vmlinuz-$OLD" "$r/boot/vmlinuz"; ln -sfn "vmlinuz-$PREV" "$r/boot/vmlinuz.old"
  ln -sfn "initrd.img-$OLD" "$r/boot/initrd.img"; ln -sfn "initrd.img-$PREV" "$r/boot/initrd.img.old"
  mkdir -p "$r/boot/grub"
  cp "$fx/grub/ubuntu-24.04-two-kernels.cfg" "$r/boot/grub/grub.cfg"
  cp "$fx/grub/grubenv.ubuntu-22.04-cloudimg-empty" "$r/boot/grub/grubenv"
  mkdir -p "$r/etc/default/grub.d"
  cp "$fx/grub/default-grub.ubuntu-24.04-aws" "$r/etc/default/grub"
  cp "$fx/grub/50-cloudimg-settings.ubuntu-22.04-generic.cfg" "$r/etc/default/grub.d/50-cloudimg-settings.cfg"
  cp "$fx/grub/init-select.ubuntu-22.04-cloud.cfg" "$r/etc/default/grub.d/init-select.cfg"
  sysctl_bbr "$r"
  line "$r/etc/modules-load.d/bbr.conf" "tcp_bbr"
  dpkg_status "$r" "linux-image-$OLD=6.8.0-48.48" "linux-image-$PREV=6.8.0-45.45" \
    "linux-generic=6.8.0-48.48" "grub-pc=2.12-1ubuntu7" "grub-common=2.12-1ubuntu7"
  mkdir -p "$r/etc/apt/sources.list.d"
  w "$r/etc/apt/sources.list.d/ubuntu.sources" <<'EOT'
Types: deb
URIs: http://archive.ubuntu.com/ubuntu/
Suites: noble noble-updates noble-backports
Components: main restricted universe multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
EOT
}

new_case() { # name description cases-lines...
  local name=$1 desc=$2; shift 2
  local c=$here/$name
  mkdir -p "$c"
  printf '%s\n' "$desc" > "$c/README"
  { printf '# NAME EXIT ARGS...  (see test/run-roots.py)\n'; printf '%s\n' "$@"; } > "$c/cases"
}

gen_ubuntu_kvm() {
  ubuntu_kvm "$here/ubuntu-24.04-kvm/root"
  # What the reachability floor of kswap accept and check needs: a default route via eth0 with
  # a connected route (its address), eth0 up, sshd listening on 22.
  local r=$here/ubuntu-24.04-kvm/root
  printf 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\neth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n' |
    w "$r/proc/net/route"
  printf '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6 1 0 100 0 0 10 0\n' |
    w "$r/proc/net/tcp"
  line "$r/sys/class/net/eth0/flags" 0x1003
  line "$r/sys/class/net/eth0/operstate" up
  new_case ubuntu-24.04-kvm \
    "The bundled example node: stock Ubuntu 24.04 cloud image on a KVM VPS (x86-64-v3, BIOS, ext4 /dev/vda1), GRUB_DEFAULT=0 and no panic= (two warnings that apply fixes)." \
    "plan.txt 0 plan" "plan.json 0 plan --json" "plan-main.json 0 --json plan --branch main"
}

gen_ready() {
  local r=$here/ubuntu-24.04-kvm-ready/root
  ubuntu_kvm "$r"
  printf '# kswap: boot the old kernel until the new one passed acceptance\nGRUB_DEFAULT=saved\nGRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} panic=10"\n' \
    > "$r/etc/default/grub.d/90-kswap.cfg"
  line "$r/proc/cmdline" "BOOT_IMAGE=/boot/vmlinuz-$OLD root=UUID=$UUID ro console=tty1 console=ttyS0 panic=10"
  new_case ubuntu-24.04-kvm-ready "Ubuntu 24.04 KVM v3 with GRUB_DEFAULT=saved and panic=10: verdict ok." \
    "plan.json 0 plan --json"
}

gen_v4() {
  local r=$here/ubuntu-24.04-nitro-v4/root
  ubuntu_kvm "$r"
  cp "$fx/cpuinfo/aws-ec2-nitro-kvm-xeon-8259cl-cascadelake-v4.txt" "$r/proc/cpuinfo"
  line "$r/sys/class/dmi/id/sys_vendor" "Amazon EC2"
  line "$r/sys/class/dmi/id/product_name" "m5.large"
  line "$r/sys/class/dmi/id/bios_vendor" "Amazon EC2"
  new_case ubuntu-24.04-nitro-v4 "EC2 Nitro (KVM-based, virt word amazon) with an x86-64-v4 CPU: gets the x64v3 package (no v4 builds)." \
    "plan.json 0 plan --json"
}

gen_v2() {
  local r=$here/ubuntu-24.04-kvm-v2/root
  ubuntu_kvm "$r"
  # A Sandy Bridge host CPU passed through to a KVM guest: avx without avx2, so v2.
  sed 's/^flags\t\t: \(.*\)$/flags\t\t: \1 hypervisor/' "$fx/cpuinfo/baremetal-desktop-i7-2600-sandybridge-v2.txt" > "$r/proc/cpuinfo"
  new_case ubuntu-24.04-kvm-v2 "KVM guest with a Sandy Bridge CPU (x86-64-v2; cpuinfo of a real i7-2600 plus the hypervisor flag): gets the x64v2 package." \
    "plan.json 0 plan --json" "plan-main.json 0 plan --json --branch main"
}

gen_qemu64() {
  local r=$here/ubuntu-24.04-kvm-qemu64/root
  ubuntu_kvm "$r"
  cp "$fx/cpuinfo/kvm-guest-default-qemu64-below-v2.txt" "$r/proc/cpuinfo"
  new_case ubuntu-24.04-kvm-qemu64 "KVM guest with QEMU's default qemu64 CPU model (below x86-64-v2): no XanMod build runs there, blocked." \
    "plan.json 2 plan --json" "plan.txt 2 plan"
}

gen_openvz() {
  local r=$here/openvz/root
  ubuntu_kvm "$r"
  rm -rf "$r/sys/class/dmi" "$r/dev/vda1"
  # git keeps no empty directories; real /proc/vz holds files like these.
  mkdir -p "$r/proc/vz"
  line "$r/proc/vz/veinfo" "     0     0     2     0.0.0.0"
  line "$r/proc/vz/version" "028stab123.1"
  w "$r/proc/self/mountinfo" <<'EOT'
1074 988 182:3487505 / / rw,relatime shared:474 master:1 - ext4 /dev/ploop54797p1 rw,data=ordered,balloon_ino=12,pfcache_csum,usrquota,grpquota
1075 1074 0:1002 / /dev rw,nosuid,relatime shared:475 - devtmpfs devtmpfs rw,size=1048576k,nr_inodes=262144,mode=755
1076 1074 0:1003 / /proc rw,nosuid,nodev,noexec,relatime shared:477 - proc proc rw
1077 1074 0:1004 / /sys rw,nosuid,nodev,noexec,relatime shared:478 - sysfs sysfs rw
EOT
  new_case openvz "OpenVZ container (proc/vz without proc/bc): the kernel cannot be changed, blocked." "plan.json 2 plan --json"
}

gen_lxc() {
  local r=$here/lxc/root
  ubuntu_kvm "$r"
  rm -rf "$r/dev/vda1"
  cp "$fx/mountinfo/lxd-container-ext4-subdir-root.mountinfo" "$r/proc/self/mountinfo"
  mkdir -p "$r/proc/1"
  printf 'container=lxc\0PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin\0' > "$r/proc/1/environ"
  new_case lxc "LXD system container (container=lxc in proc/1/environ): blocked." "plan.json 2 plan --json"
}

gen_docker() {
  local r=$here/docker/root
  ubuntu_kvm "$r"
  rm -rf "$r/dev/vda1" "$r/boot/grub"
  cp "$fx/mountinfo/docker-container-overlay-root-oneline.mountinfo" "$r/proc/self/mountinfo"
  : > "$r/.dockerenv"
  new_case docker "Docker container (/.dockerenv): blocked." "plan.json 2 plan --json"
}

gen_debian() {
  local r=$here/debian-12-kvm/root
  ubuntu_kvm "$r"
  rm -f "$r/etc/os-release" "$r/usr/lib/os-release"
  cp "$fx/os-release/debian-12-bookworm.os-release" "$r/usr/lib/os-release"
  ln -sfn ../usr/lib/os-release "$r/etc/os-release"
  rm -rf "$r/lib/modules" "$r/boot"
  local rel=6.1.0-28-amd64 u=3b6e2d1c-0f5a-4a8e-9d7b-61c2a9e4f0d2
  installed_kernel "$r" "$rel"
  ext4_image "$r/dev/vda1" "$u"
  common_proc "$r" "$rel" "BOOT_IMAGE=/boot/vmlinuz-$rel root=UUID=$u ro quiet panic=10"
  mkdir -p "$r/boot/grub"
  sed -e "s/f93ca2dd-74af-4ee8-b478-970b29be5ca3/$u/g" "$here/debian-12.grub.cfg.in" > "$r/boot/grub/grub.cfg"
  cp "$fx/grub/grubenv.ubuntu-22.04-cloudimg-empty" "$r/boot/grub/grubenv"
  rm -rf "$r/etc/default/grub.d"
  w "$r/etc/default/grub" <<'EOT'
# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in this file, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=saved
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT="quiet panic=10"
GRUB_CMDLINE_LINUX=""
EOT
  rm -f "$r/etc/modules-load.d/bbr.conf"; rmdir "$r/etc/modules-load.d"
  line "$r/etc/modules" "tcp_bbr"
  dpkg_status "$r" "linux-image-$rel=6.1.119-1" "linux-image-amd64=6.1.119-1" "grub-pc=2.06-13+deb12u1"
  rm -f "$r/etc/apt/sources.list.d/ubuntu.sources"
  new_case debian-12-kvm "Debian 12 on KVM, GRUB_DEFAULT=saved, panic=10, tcp_bbr in /etc/modules: verdict ok." "plan.json 0 plan --json"
}

gen_rocky() {
  local r=$here/rocky-9-kvm/root
  ubuntu_kvm "$r"
  rm -f "$r/etc/os-release" "$r/usr/lib/os-release"
  cp "$fx/os-release/rocky-9.3.os-release" "$r/etc/os-release"
  new_case rocky-9-kvm "Rocky Linux 9 (not Debian or Ubuntu): os.unsupported, blocked." "plan.json 2 plan --json"
}

gen_jammy() {
  local r=$here/ubuntu-22.04-kvm/root
  ubuntu_kvm "$r"
  rm -f "$r/etc/os-release" "$r/usr/lib/os-release"
  cp "$fx/os-release/ubuntu-22.04-jammy.os-release" "$r/usr/lib/os-release"
  ln -sfn ../usr/lib/os-release "$r/etc/os-release"
  new_case ubuntu-22.04-kvm "Ubuntu 22.04: XanMod's archive has no jammy packages; only a local package works (os.no-xanmod-suite)." \
    "plan.json 0 plan --json" "plan-kernel.json 0 plan --json --kernel 6.18.45-x64v3-xanmod1"
}

gen_btrfs() {
  local r=$here/boot-btrfs/root
  ubuntu_kvm "$r"
  btrfs_image "$r/dev/vda2" 0c4f2b8e-7d1a-4f3b-8e2c-5a9d6b1f3e77
  echo '41 28 252:2 / /boot rw,relatime shared:30 - btrfs /dev/vda2 rw,space_cache=v2,subvolid=5,subvol=/' >> "$r/proc/self/mountinfo"
  rm -rf "$r/sys/devices/pci0000:00" "$r/sys/dev/block"; virtio_disk "$r" 1 2 14 15
  # What Ubuntu's 00_header writes into recordfail when grub-probe says btrfs.
  sed -i 's/^  if \[ -n "\${have_grubenv}" \]; then if \[ -z "\${boot_once}" \]; then save_env recordfail; fi; fi$/  # GRUB lacks write support for btrfs, so recordfail support is disabled./' "$r/boot/grub/grub.cfg"
  new_case boot-btrfs "/boot on its own btrfs partition: GRUB cannot clear next_entry there, blocked." "plan.json 2 plan --json"
}

gen_lvm() {
  local r=$here/boot-lvm/root
  ubuntu_kvm "$r"
  rm -f "$r/dev/vda1"
  ext4_image "$r/dev/mapper/ubuntu--vg-ubuntu--lv" "$UUID"
  sed -i 's|252:1 / / rw,relatime shared:1 - ext4 /dev/vda1|253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/ubuntu--vg-ubuntu--lv|' "$r/proc/self/mountinfo"
  rm -rf "$r/sys/devices/pci0000:00" "$r/sys/dev/block"; virtio_disk "$r" 1 2 3
  local dm=$r/sys/devices/virtual/block/dm-0
  mkdir -p "$dm/dm" "$dm/slaves"
  line "$dm/dm/name" "ubuntu--vg-ubuntu--lv"
  line "$dm/dm/uuid" "LVM-mO7dWbEtMdhW4NPxlvNi0lQ4sBHJ3zAHa8UWt8Sh4dEJv1KBuL2CJWoqSdpP2aC6"
  line "$dm/dev" "253:0"
  ln -sfn "../../../../pci0000:00/0000:00:04.0/virtio1/block/vda/vda3" "$dm/slaves/vda3"
  ln -sfn ../../devices/virtual/block/dm-0 "$r/sys/dev/block/253:0"
  new_case boot-lvm "/boot inside the root LV on LVM (dm uuid LVM-...): GRUB refuses diskfilter writes, blocked." "plan.json 2 plan --json"
}

gen_md() {
  local r=$here/boot-mdraid/root
  ubuntu_kvm "$r"
  rm -f "$r/dev/vda1"
  cp "$fx/mountinfo/mdraid-root-md2-boot-md1.mountinfo" "$r/proc/self/mountinfo"
  ext4_image "$r/dev/md2" "$UUID"
  ext4_image "$r/dev/md1" 7e2d4c1a-9b3f-4d2e-8a1c-0f5e6d7c8b9a
  rm -rf "$r/sys/devices/pci0000:00" "$r/sys/dev/block"
  mkdir -p "$r/sys/dev/block"
  for n in 1 2; do
    local md=$r/sys/devices/virtual/block/md$n
    mkdir -p "$md/md" "$md/slaves"
    line "$md/md/level" "raid1"
    line "$md/dev" "9:$n"
    ln -sfn "../../devices/virtual/block/md$n" "$r/sys/dev/block/9:$n"
  done
  new_case boot-mdraid "/boot on mdraid (md1, raid1): GRUB refuses diskfilter writes, blocked." "plan.json 2 plan --json"
}

gen_secureboot() {
  local r=$here/secureboot-on/root
  ubuntu_kvm "$r"
  local ev=$r/sys/firmware/efi/efivars
  mkdir -p "$ev"
  printf '\x06\x00\x00\x00\x01' > "$ev/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
  printf '\x06\x00\x00\x00\x00' > "$ev/SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c"
  vfat_image "$r/dev/vda15" 5A1B2C3D
  echo '137 28 252:15 / /boot/efi rw,relatime shared:74 - vfat /dev/vda15 rw,fmask=0077,dmask=0077,codepage=437,iocharset=iso8859-1,shortname=mixed,errors=remount-ro' >> "$r/proc/self/mountinfo"
  new_case secureboot-on "UEFI with Secure Boot enabled: XanMod kernels are not signed for the shim, blocked." "plan.json 2 plan --json"
}

gen_recordfail() {
  local r=$here/recordfail-wait/root
  ubuntu_kvm "$r"
  sed -i '/^if \[ "\${recordfail}" = 1 \] ; then$/{n;s/set timeout=30/set timeout=-1/}' "$r/boot/grub/grub.cfg"
  line "$r/etc/default/grub.d/60-recordfail.cfg" "GRUB_RECORDFAIL_TIMEOUT=-1"
  new_case recordfail-wait "GRUB_RECORDFAIL_TIMEOUT=-1 baked into grub.cfg: after a failed boot GRUB waits at the menu forever, blocked." \
    "plan.json 2 plan --json"
}

gen_bbr_cubic() {
  local r=$here/bbr-cubic-live/root
  ubuntu_kvm "$r"
  line "$r/proc/sys/net/ipv4/tcp_congestion_control" "cubic"
  line "$r/proc/sys/net/core/default_qdisc" "fq_codel"
  printf 'reno cubic\n' > "$r/proc/sys/net/ipv4/tcp_available_congestion_control"
  rm -rf "$r/etc/modules-load.d"
  sed -i '/^tcp_bbr /d' "$r/proc/modules"
  new_case bbr-cubic-live "sysctl files ask for bbr and fq, the live values are cubic and fq_codel, tcp_bbr is a module not listed in modules-load.d: two warnings." \
    "plan.json 0 plan --json" "plan.txt 0 plan"
}

gen_tcp_effect() {
  # The example node with traffic: the counters of a real /proc/net/snmp and netstat (Linux
  # 6.18, test/fixtures/tcp), connections as sock_diag gave them (kswap's JSON stand-in): two on
  # bbr, one on cubic (set by its application), one on loopback; BBRv3's module version.
  local r=$here/tcp-effect/root
  rm -rf "$r"; mkdir -p "$(dirname "$r")"
  cp -a "$here/ubuntu-24.04-kvm/root" "$r"
  cp "$fx/tcp/snmp-6.18" "$r/proc/net/snmp"
  cp "$fx/tcp/netstat-6.18" "$r/proc/net/netstat"
  line "$r/sys/module/tcp_bbr/version" 3
  w "$r/proc/net/kswap-sock-diag.json" <<'EOT'
{
  "connections": [
    { "family": "ipv4", "local": "10.0.0.2:443", "remote": "203.0.113.7:50312", "congestion_control": "bbr",
      "uid": 995, "inode": 31337, "rtt_us": 41250, "rttvar_us": 3100, "min_rtt_us": 38900, "retrans": 0,
      "total_retrans": 12, "segs_out": 9120, "data_segs_out": 9090, "bytes_acked": 12904411,
      "bytes_retrans": 17376, "delivery_rate": 1562500, "delivery_rate_app_limited": false, "pacing_rate": 2031250 },
    { "family": "ipv6", "local": "[2001:db8::2]:443", "remote": "[2001:db8:42::9]:61002", "congestion_control": "bbr",
      "uid": 995, "inode": 31338, "rtt_us": 87000, "rttvar_us": 9000, "min_rtt_us": 80100, "retrans": 1,
      "total_retrans": 3, "segs_out": 610, "data_segs_out": 600, "bytes_acked": 812000, "bytes_retrans": 4344,
      "delivery_rate": 406250, "delivery_rate_app_limited": true, "pacing_rate": 528125 },
    { "family": "ipv4", "local": "10.0.0.2:8443", "remote": "198.51.100.23:44120", "congestion_control": "cubic",
      "uid": 995, "inode": 31339, "rtt_us": 23800, "rttvar_us": 1200, "min_rtt_us": 22000, "retrans": 0,
      "total_retrans": 40, "segs_out": 2000, "data_segs_out": 1990, "bytes_acked": 2801000, "bytes_retrans": 57920,
      "delivery_rate": 2250000, "delivery_rate_app_limited": false, "pacing_rate": 0 },
    { "family": "ipv4", "local": "127.0.0.1:10085", "remote": "127.0.0.1:40200", "congestion_control": "bbr",
      "uid": 995, "inode": 31340, "rtt_us": 40, "segs_out": 12, "data_segs_out": 6 }
  ]
}
EOT
  # (kswap check's verdict on it, 1 of 3 connections on cubic, is in test/test-accept.py: its
  # snapshot depends on the programs this machine has.)
  new_case tcp-effect "The example node with traffic (real 6.18 counters, sock_diag's connections as kswap's JSON): kswap report shows its figures since the boot and each connection; nothing to record without a pinned swap (exit 2)." \
    "report.txt 0 report --connections" "report.json 0 --json report --connections" \
    "record.txt 2 report --record"
}

for g in gen_ubuntu_kvm gen_ready gen_v4 gen_v2 gen_qemu64 gen_openvz gen_lxc gen_docker gen_debian gen_rocky \
         gen_jammy gen_btrfs gen_lvm gen_md gen_secureboot gen_recordfail gen_bbr_cubic gen_tcp_effect; do
  "$g"
done
echo "fixture roots regenerated under $here"
