#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The tests' kswap_power_cycle_command for a fixture root (test/test-ansible.py): what a hard
# reset does to a node hung on its trial kernel. The machine starts again and GRUB boots what
# it boots now (the trial's one-shot was spent by the hung boot): the kernel of `kswap status`'s
# forecast, with a new boot id; kswap-accept.service runs when the trial flag exists.
# Usage: power-cycle.sh HOST ROOT KSWAP (PATH: the fakes first). Appends HOST to
# ROOT/var/log/sim-power-cycle.log so the test counts the resets.
set -euo pipefail
host=$1 root=$2 kswap=$3
echo "$host" >> "$root/var/log/sim-power-cycle.log"
kernel=$("$kswap" --root "$root" --json status | python3 -c \
    'import json, sys; print(json.load(sys.stdin)["grub"]["forecast"][0]["kernel"])') || true
[ -n "$kernel" ] || { echo "power-cycle.sh: no forecast for $root" >&2; exit 1; }
echo "$kernel" > "$root/proc/sys/kernel/osrelease"
cat /proc/sys/kernel/random/uuid > "$root/proc/sys/kernel/random/boot_id"
if [ -e "$root/var/lib/kswap/trial" ]; then
    setsid "$kswap" --root "$root" accept > "$root/var/log/sim-accept.log" 2>&1 < /dev/null &
fi
