#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `kswap verify --kernel` (module tree with depmod's indexes, plus the initramfs check) against
# `lsinitramfs FILE > /dev/null` on an initrd built from a real Debian kernel package: an early
# microcode cpio, then a zstd cpio with the storage, virtio and file system modules
# (about what MODULES=most puts there). Same columns as bench/verify-deb.sh.
# lsinitramfs comes from initramfs-tools-core (installed, or unpacked into KS_CACHE/tools).
# Usage: bench/verify-initrd.sh [-n RUNS] [FILE.deb]    (env: KSWAP, KS_CACHE)
set -eu
runs=5
if [ "${1:-}" = -n ]; then
    runs=$2
    shift 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
kswap=${KSWAP:-$src/build-verify/cmd/kswap}
cache=${KS_CACHE:-/var/cache/kswap-test}
deb=${1:-$("$src/test/verify/fetch-kernels.sh" generic)}
if ! command -v lsinitramfs > /dev/null; then
    if [ ! -x "$cache/tools/x/usr/bin/lsinitramfs" ]; then
        mkdir -p "$cache/tools"
        (cd "$cache/tools" && apt-get download -q initramfs-tools-core > /dev/null &&
            dpkg-deb -x initramfs-tools-core_*.deb x)
    fi
    PATH=$cache/tools/x/usr/bin:$PATH
fi
export TMPDIR=${TMPDIR:-/var/tmp}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/results
mkdir -p "$out"

root=$work/root
dpkg-deb -x "$deb" "$root"
rel=$(ls "$root/lib/modules")
depmod -b "$root" "$rel"
# / on /dev/vda1, a virtio disk on a PCI function, as on a KVM VPS.
pci=$root/sys/devices/pci0000:00/0000:00:04.0
mkdir -p "$root/proc/self" "$pci/virtio2/block/vda/vda1" "$root/sys/dev/block" \
    "$root/sys/bus/virtio/drivers/virtio_blk" "$root/sys/bus/pci/drivers/virtio-pci"
echo '25 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw' > "$root/proc/self/mountinfo"
echo 1 > "$pci/virtio2/block/vda/vda1/partition"
ln -s ../../../virtio2 "$pci/virtio2/block/vda/device"
ln -s ../../../../bus/virtio/drivers/virtio_blk "$pci/virtio2/driver"
ln -s ../../../../bus/virtio "$pci/virtio2/subsystem"
ln -s ../../../bus/pci/drivers/virtio-pci "$pci/driver"
ln -s ../../../bus/pci "$pci/subsystem"
ln -s ../../devices/pci0000:00/0000:00:04.0/virtio2/block/vda/vda1 "$root/sys/dev/block/252:1"

ird=$work/initrd
mkdir -p "$ird/early/kernel/x86/microcode" "$ird/main/usr/lib/modules/$rel" "$ird/main/usr/bin"
head -c 200000 /dev/urandom > "$ird/early/kernel/x86/microcode/GenuineIntel.bin"
cp /bin/busybox "$ird/main/usr/bin/" 2> /dev/null || cp /bin/bash "$ird/main/usr/bin/"
(cd "$root/lib/modules/$rel" && find kernel/drivers/block kernel/drivers/scsi kernel/drivers/ata \
    kernel/drivers/virtio kernel/drivers/nvme kernel/drivers/md kernel/fs/ext4 kernel/fs/xfs \
    kernel/fs/btrfs kernel/fs/jbd2 kernel/fs/mbcache.ko kernel/lib kernel/crypto \
    -name '*.ko' | cpio -pdm --quiet "$ird/main/usr/lib/modules/$rel")
cp "$root/lib/modules/$rel"/modules.* "$ird/main/usr/lib/modules/$rel/"
initrd=$root/boot/initrd.img-$rel
(cd "$ird/early" && find . | cpio -o -H newc --quiet) > "$initrd"
(cd "$ird/main" && find . | cpio -o -H newc --quiet | zstd -q -c) >> "$initrd"
rm -rf "$ird"

measure() {
    local label=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$out/time" bash -c '
        "$@" > /dev/null 2>&1 || echo "failed: $*" >&2
        while read -r k v; do if [ "$k" = write_bytes: ]; then echo "$v"; fi; done < /proc/$$/io
    ' measure "$@" > "$out/io"
    read -r wall user sys rss < <(tail -n 1 "$out/time")
    echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss $(cat "$out/io")" >> "$out/$label"
}
median() {
    sort -n -k"$2" "$out/$1" | awk -v c="$2" '{v[NR] = $c} END {print v[int((NR + 1) / 2)]}'
}
peak() {
    sort -n -k"$2" "$out/$1" | tail -n 1 | awk -v c="$2" '{print $c}'
}

echo "initrd: $(du -h "$initrd" | cut -f1), $(lsinitramfs "$initrd" | grep -c '\.ko$') modules, $runs runs each" >&2
"$kswap" --root "$root" verify --kernel "$rel" | grep initrd >&2 || true
for cmd in kswap lsinitramfs; do
    case $cmd in
    kswap) set -- "$kswap" --root "$root" verify --kernel "$rel" ;;
    lsinitramfs) set -- lsinitramfs "$initrd" ;;
    esac
    measure warmup "$@"
    for _ in $(seq "$runs"); do
        measure "$cmd" "$@"
    done
done
printf '%-12s %10s %10s %14s %16s\n' command "wall (s)" "cpu (s)" "peak RSS (MiB)" "written (bytes)"
for cmd in kswap lsinitramfs; do
    printf '%-12s %10s %10s %14s %16s\n' "$cmd" "$(median "$cmd" 1)" "$(median "$cmd" 2)" \
        "$(awk -v k="$(peak "$cmd" 3)" 'BEGIN {printf "%.1f", k / 1024}')" "$(median "$cmd" 4)"
done
