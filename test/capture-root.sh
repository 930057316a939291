#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Copies the files kswap reads from this machine into a new fixture root, so that a bug report
# from a real server can become a test (like util-linux's tests/ts/lscpu/mk-input.sh).
# Kernel images and modules become placeholders of the same size or empty files (a kernel's
# and an initrd's first KiB are kept: plan reads their header and magic); the boot device
# becomes its first MiB (all libblkid reads). Run as root on the server:
#   test/capture-root.sh DIR        then   kswap --root DIR plan
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 1; }
out=$1
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=${KSWAP_CAPTURE_SOURCE:-/} # tests capture from another root

copy() { # copy one file or symlink, keeping its path; silently skip what is absent
  local p
  for p in "$@"; do
    [ -e "$src/$p" ] || [ -L "$src/$p" ] || continue
    mkdir -p "$out/$(dirname "$p")"
    if [ -L "$src/$p" ]; then
      cp -P "$src/$p" "$out/$p"
    elif [ -f "$src/$p" ]; then
      # proc and sys files report size 0: cat reads them whole.
      cat "$src/$p" > "$out/$p" 2>/dev/null || true
    fi
  done
}
copy_tree() { # every regular file and symlink below a directory
  local d=$1 f
  [ -d "$src/$d" ] || return 0
  while IFS= read -r -d '' f; do copy "${f#"$src"/}"; done < <(find "$src/$d" \( -type f -o -type l \) -print0)
}
mark_dir() { [ -d "$src/$1" ] && mkdir -p "$out/$1" || true; }
placeholder() { # same name and size, no content
  [ -e "$src/$1" ] || return 0
  mkdir -p "$out/$(dirname "$1")"
  truncate -s "$(stat -L -c %s "$src/$1")" "$out/$1"
}
head_placeholder() { # the first KiB, then a hole up to the same size
  [ -e "$src/$1" ] || return 0
  mkdir -p "$out/$(dirname "$1")"
  head -c 1024 "$src/$1" > "$out/$1"
  truncate -s "$(stat -L -c %s "$src/$1")" "$out/$1"
}

# os-release, virtualization, CPU, running kernel, boot id, live settings
copy etc/os-release usr/lib/os-release proc/cpuinfo proc/self/mountinfo proc/cmdline proc/stat \
  proc/modules proc/sys/kernel/osrelease proc/sys/kernel/random/boot_id \
  proc/sys/net/ipv4/tcp_congestion_control proc/sys/net/ipv4/tcp_available_congestion_control \
  proc/sys/net/core/default_qdisc run/systemd/container run/host/container-manager \
  .dockerenv run/.containerenv sys/hypervisor/type \
  sys/devices/system/clocksource/clocksource0/available_clocksource \
  sys/devices/system/clocksource/clocksource0/current_clocksource
mark_dir proc/vz; mark_dir proc/bc
if [ -r "$src/proc/1/environ" ]; then
  mkdir -p "$out/proc/1"
  # Only container= matters; the rest of PID 1's environment may hold secrets.
  { tr "\\0" "\\n" < "$src/proc/1/environ" | grep "^container=" | tr "\\n" "\\0"; } > "$out/proc/1/environ" 2>/dev/null || true
fi
for f in product_name sys_vendor board_vendor bios_vendor bios_version product_version; do
  copy "sys/class/dmi/id/$f"
done
for v in SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c SetupMode-8be4df61-93ca-11d2-aa0d-00e098032b8c \
         MokSBStateRT-605dab50-e046-4300-abb6-3dd810dd8b23; do
  copy "sys/firmware/efi/efivars/$v"
done
mark_dir sys/firmware/efi

# TCP: the counters since the boot, and the established connections with their congestion
# control (kswap report). The kernel has no file of the connections: kswap's own JSON stands in
# (proc/net/kswap-sock-diag.json, read under --root); from this machine it is asked of the
# kswap on PATH (or $KSWAP), from another root (the tests) the root's file is copied.
copy proc/net/snmp proc/net/netstat proc/net/kswap-sock-diag.json
if [ "$src" = / ]; then
  ks=${KSWAP:-$(command -v kswap || true)}
  if [ -n "$ks" ] && "$ks" --json report --connections > "$out/.sock-diag.json" 2>/dev/null; then
    mkdir -p "$out/proc/net"; mv "$out/.sock-diag.json" "$out/proc/net/kswap-sock-diag.json"
  else
    rm -f "$out/.sock-diag.json"
    echo "no kswap to ask for the TCP connections: proc/net/kswap-sock-diag.json not captured" >&2
  fi
fi

# GRUB and its settings; boot/ itself so that free space is measured where it would be
mark_dir boot
copy boot/grub/grub.cfg boot/grub/grubenv etc/default/grub
copy_tree etc/default/grub.d

# kernels: names and sizes, and the first KiB of images and initrds (header, magic)
for f in "$src"/boot/vmlinuz-* "$src"/boot/initrd.img-*; do
  [ -e "$f" ] && head_placeholder "${f#"$src"/}"
done
for f in "$src"/boot/System.map-* "$src"/boot/config-*; do
  [ -e "$f" ] && placeholder "${f#"$src"/}"
done
for l in vmlinuz vmlinuz.old initrd.img initrd.img.old; do copy "boot/$l"; done
for m in "$src"/lib/modules/* "$src"/usr/lib/modules/*; do
  [ -d "$m" ] || continue
  rel=${m#"$src"/}
  copy "$rel/modules.builtin" "$rel/modules.order" "$rel/modules.builtin.modinfo"
  while IFS= read -r -d '' f; do
    mkdir -p "$out/$(dirname "${f#"$src"/}")"; : > "$out/${f#"$src"/}"
  done < <(find "$m" -name 'tcp_bbr.ko*' -print0)
done

# sysctl and modules-load, in every directory systemd reads
for d in etc run usr/local/lib usr/lib lib; do
  copy_tree "$d/sysctl.d"; copy_tree "$d/modules-load.d"
done
copy etc/sysctl.conf etc/modules var/lib/dpkg/status
# kswap-accept.service: its unit file and the links that enable it
for d in etc/systemd/system lib/systemd/system usr/lib/systemd/system; do copy "$d/kswap-accept.service"; done
for w in "$src"/etc/systemd/system/*.wants/kswap-accept.service; do
  [ -L "$w" ] || [ -e "$w" ] || continue
  copy "${w#"$src"/}"
done

# the device that holds /boot/grub: its first MiB and its sysfs chain
capture_block() { # MAJ:MIN
  local link=sys/dev/block/$1 real rel parent s
  [ -e "$src/$link" ] || return 0
  copy "$link"
  real=$(readlink -f "$src/$link"); rel=${real#"$src"/}
  mkdir -p "$out/$rel"
  for s in partition dev dm/uuid dm/name md/level; do copy "$rel/$s"; done
  if [ -f "$src/$rel/partition" ]; then
    parent=$(dirname "$rel")
    copy "$parent/dev"
    [ -L "$src/$parent/device" ] && { copy "$parent/device"; d=$(readlink -f "$src/$parent/device"); copy "${d#"$src"/}/driver"; }
  else
    [ -L "$src/$rel/device" ] && { copy "$rel/device"; d=$(readlink -f "$src/$rel/device"); copy "${d#"$src"/}/driver"; }
  fi
  if [ -d "$src/$rel/slaves" ]; then
    mkdir -p "$out/$rel/slaves"
    for s in "$src/$rel/slaves"/*; do
      [ -e "$s" ] || continue
      copy "${s#"$src"/}"
      capture_block "$(cat "$s/dev")"
    done
  fi
}
boot_line=$(awk '$5 == "/boot/grub" { l = $0 } END { print l }' "$src/proc/self/mountinfo")
[ -n "$boot_line" ] || boot_line=$(awk '$5 == "/boot" { l = $0 } END { print l }' "$src/proc/self/mountinfo")
[ -n "$boot_line" ] || boot_line=$(awk '$5 == "/" { l = $0 } END { print l }' "$src/proc/self/mountinfo")
if [ -n "$boot_line" ]; then
  majmin=$(echo "$boot_line" | awk '{ print $3 }')
  dev=$(echo "$boot_line" | awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 2); exit } }')
  capture_block "$majmin"
  case "$dev" in
    /dev/*) if [ -b "$src$dev" ] || [ -f "$src$dev" ]; then
              mkdir -p "$out$(dirname "$dev")"
              dd if="$src$dev" of="$out$dev" bs=64K count=16 status=none 2>/dev/null || rm -f "$out$dev"
            fi ;;
  esac
fi
echo "captured into $out; try: kswap --root $out plan" >&2
