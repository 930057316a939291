#!/bin/sh
# kswap VM test driver (test/vm/vmtest/driver.sh, installed as /usr/local/lib/kswap-vm/vm). Not part
# of kswap. Its phases: early (count the boot), app and hang (test units), firstboot, and late
# (no argument: report this boot, then do what the plan disk says for it).
D=/var/lib/kswap-vm
OLD=@OLD@
NEW=@NEW@
# printf, not echo: dash's echo turns the "\n" of a JSON string into a line break
say() { printf 'KSWAP-VM %s\n' "$*" > /dev/ttyS0; }
# Only the kernel's emergencies (a panic, "reboot: ...") on the serial line from here on: a
# loaded host's clocksource and RCU warnings landed inside the KSWAP-VM STATUS JSON.
dmesg -n 1 2>/dev/null || :
@REPO_SHELL@mkdir -p $D
# A layout's own actions (layout vpn: vmtest/vpn/actions.sh): act_NAME, called for NAME:ARG.
[ -r /usr/local/lib/kswap-vm/actions.sh ] && . /usr/local/lib/kswap-vm/actions.sh
case "$1" in
early)
  if [ -e /etc/kswap-vm/firstboot ]; then exit 0; fi
  n=$(( $(cat $D/boots 2>/dev/null || echo 0) + 1 ))
  echo $n > $D/boots; sync
  say "EARLY $n KERNEL $(uname -r)"
  exit 0 ;;
app)
  # The workload whose health accept checks: fails on NEW once the plan said "break".
  if [ -e /etc/kswap-vm/break-on-new ] && [ "$(uname -r)" = "$NEW" ]; then
    say "APP refusing to start on $NEW at uptime $(cut -d. -f1 /proc/uptime)"; exit 1
  fi
  exit 0 ;;
hang)
  # Issue 12 (d), kswap-vm-trial-hang.service on the trial boot: wait until PID 1 holds the
  # watchdog the trial entry armed (systemd.watchdog_device=), say so, then one SCHED_FIFO 99
  # busy loop per CPU with the RT throttle off (sched_rt_runtime_us=-1). From then on no
  # SCHED_OTHER task runs again: not PID 1 (no watchdog ping, no deadline timer, no reboot),
  # not khungtaskd; the soft-lockup detector sees nothing (its stopper threads outrank RT) and
  # RCU none either (user-mode spinning is a quiescent state), so nothing panics. The kernel's
  # own interrupts and timers still run: softdog would fire too; a lockup of every CPU with
  # interrupts off (lkdtm, test_lockup: not in Debian's kernel) is what only a hypervisor
  # watchdog catches.
  i=0
  while ! ls -l /proc/1/fd 2>/dev/null | grep -q watchdog; do
    # no watchdog after 300 s: no hang either (the scenario then fails on its trial-ok)
    i=$((i + 1)); [ $i -gt 300 ] && { say "NOHANG PID 1 holds no watchdog after 300 s"; exit 1; }
    sleep 1
  done
  w=/sys/class/watchdog/watchdog0
  say "HANG at uptime $(cut -d. -f1 /proc/uptime) watchdog=$(cat $w/identity 2>/dev/null | tr ' ' _) state=$(cat $w/state 2>/dev/null) timeout=$(cat $w/timeout 2>/dev/null) deadline=$(grep -o 'kswap\.deadline=[0-9]*' /proc/cmdline)"
  sync
  echo -1 > /proc/sys/kernel/sched_rt_runtime_us
  for c in $(seq 0 $(($(nproc) - 1))); do
    taskset -c $c chrt -f 99 sh -c 'while :; do :; done' &
  done
  wait; exit 0 ;;
firstboot)
  [ -e /etc/kswap-vm/firstboot ] || exit 0
  # A layout's own first steps (layout vpn: the container), then GRUB's configuration.
  for f in /usr/local/lib/kswap-vm/firstboot.d/*; do
    [ -x "$f" ] || continue
    if ! "$f" > /dev/ttyS0 2>&1; then
      say "FIRSTBOOT FAILED in $f"; systemctl poweroff; exit 0
    fi
  done
  if update-grub > /dev/ttyS0 2>&1; then
    rm -f /etc/kswap-vm/firstboot; sync; say "FIRSTBOOT OK"
  else
    say "FIRSTBOOT FAILED"
  fi
  systemctl poweroff; exit 0 ;;
esac
[ -e /etc/kswap-vm/firstboot ] && exit 0
# No more systemd status lines on the console in this boot (SIGRTMIN+21, systemd(1); 55 as
# dash knows no RTMIN): a tty takes a long KSWAP-VM line in pieces, and "Stopped ..." of a
# unit stopping for the reboot landed inside the STATUS JSON. Emergency mode, which the
# scenarios read from those lines, never reaches this point.
kill -55 1 2>/dev/null || :
n=$(cat $D/boots)
say "BOOT $n KERNEL $(uname -r)"
say "ACCEPT $n $(systemctl show -p ActiveState -p Result -p ExecMainStatus kswap-accept.service | tr '\n' ' ')"
say "STATUS $n $(kswap status --json 2>/dev/null | tr -d '\n')"
# The trial's protections on this boot: the marker on the command line, the deadline unit.
say "GUARD $n marker=$(grep -c 'kswap\.trial=' /proc/cmdline) deadline=$(systemctl show -p LoadState --value kswap-trial-deadline.service) stages=$(tr '\n' '|' < /var/lib/kswap/trial-stages 2>/dev/null)"
all=$(head -c 4096 /dev/vdb 2>/dev/null | tr -d '\000')
plan=$(echo "$all" | sed -n "s/^$n=//p")
# "*=...": the plan of every boot without a line of its own
[ -n "$plan" ] || plan=$(echo "$all" | sed -n 's/^[*]=//p')
# How apply names NEW: --kernel RELEASE (installed already) or --deb FILE (the same package).
src="--kernel $NEW"
[ "$(echo "$all" | sed -n 's/^src=//p')" = deb ] && src="--deb $(ls /var/lib/kswap-vm/linux-image-${NEW}_*.deb)"
# src=repo: neither, kswap installs its metapackage from the configured repository.
[ "$(echo "$all" | sed -n 's/^src=//p')" = repo ] && src=
# test/vm/powercut.py: a plan disk may carry its own driver, after a line "script:".
if echo "$all" | grep -q '^script:$'; then
  head -c 65536 /dev/vdb | tr -d '\000' | sed '1,/^script:$/d' > /run/kswap-vm-plan.sh
  exec sh /run/kswap-vm-plan.sh "$n"
fi
[ -n "$plan" ] || plan=poweroff
for a in $(echo "$plan" | tr ',' ' '); do
  say "ACT $n $a"
  case "$a" in
  apply|apply-reboot)
    opt=; [ "$a" = apply-reboot ] && opt=--reboot
    say "APPLY-START $n kswap --json apply $src --yes $opt"
    # stderr (progress) straight to the serial line: with --reboot nothing after it may run.
    kswap --json apply $src --yes $opt > $D/apply.json 2> /dev/ttyS0
    rc=$?
    say "APPLY $n rc=$rc $(tr -d '\n' < $D/apply.json)" ;;
  break) touch /etc/kswap-vm/break-on-new; sync ;;
  defaults)
    # Issue 13: default acceptance. The list keys of the VM's kswap.conf are cleared (an empty
    # value clears a list, kswap.conf(5)): no configured check is left, the snapshot of what
    # runs is the checklist (besides the floor and the timeouts, ignore, auto_pin, on_failure).
    f=/etc/kswap/kswap.conf.d/50-vm-defaults.conf
    mkdir -p /etc/kswap/kswap.conf.d
    printf '[accept]\nservices =\nlisten =\nsysctl =\nmodules =\n' > $f; sync ;;
  check)
    # Issue 13: kswap check on this kernel (the old one before apply): the whole checklist.
    kswap --json check > $D/check.json 2> /dev/ttyS0
    rc=$?
    say "CHECK $n rc=$rc $(tr -d '\n' < $D/check.json)" ;;
  hangaccept)
    # Issue 12 (e): accept hangs on NEW (a required check that never returns); the trial's
    # deadline (60 s from the kernel's start, written onto its command line at arming) must
    # reboot it by force into OLD.
    mkdir -p /etc/kswap/kswap.conf.d /etc/kswap/checks.d/required
    printf '[accept]\ndeadline = 60\nscript_timeout = 3600\n' > /etc/kswap/kswap.conf.d/50-vm-hang.conf
    printf '#!/bin/sh\n[ "$(uname -r)" = "%s" ] && sleep 3600\nexit 0\n' "$NEW" > /etc/kswap/checks.d/required/50-vm-hang
    chmod 755 /etc/kswap/checks.d/required/50-vm-hang; sync ;;
  deadline|deadline300)
    # Issue 12 (a)-(d): the trial's deadline, short to keep boots cheap (60: the minimum); the
    # watchdog scenario's 300 s lets only the i6300esb bring a hung trial back.
    s=60; [ "$a" = deadline300 ] && s=300
    mkdir -p /etc/kswap/kswap.conf.d
    printf '[accept]\ndeadline = %s\n' "$s" > /etc/kswap/kswap.conf.d/50-vm-deadline.conf; sync ;;
  emergency)
    # Issue 12 (a): the trial boot mounts a data disk that does not exist (the generator
    # kswap-vm-trial-mount, on the boot whose command line carries kswap.trial= only): its
    # device times out, local-fs.target fails, emergency mode, sulogin waits on the console.
    touch /etc/kswap-vm/trial-emergency; sync ;;
  stuckjob)
    # Issue 12 (b): a start job that never ends, multi-user.target waits for it (trial only).
    systemctl enable kswap-vm-trial-stuck.service 2> /dev/ttyS0; sync ;;
  hang)
    # Issue 12 (d): every CPU taken by a SCHED_FIFO spinner once PID 1 holds the watchdog
    # (trial only): nothing else runs again, nothing panics.
    systemctl enable kswap-vm-trial-hang.service 2> /dev/ttyS0; sync ;;
  badkernel)
    # Issue 12 (c): NEW's kernel damaged after arming (its bzImage header zeroed, same size):
    # GRUB cannot load it and must go on to entry 0, OLD, by itself.
    dd if=/dev/zero of=/boot/vmlinuz-$NEW bs=4096 count=1 conv=notrunc 2> /dev/null; sync
    say "BADKERNEL $n $(od -A d -t x1 -j 514 -N 4 /boot/vmlinuz-$NEW | head -1)" ;;
  applytimed)
    # apply as above (no reboot), with its seconds in the guest (the dpkg lock's wait)
    say "APPLY-START $n kswap --json apply $src --yes"
    t0=$(date +%s)
    kswap --json apply $src --yes > $D/apply.json 2> $D/apply.err
    rc=$?
    say "TIMED $n $(( $(date +%s) - t0 ))"
    say "APPLYERR $n $(grep -v '^ *$' $D/apply.err | tail -n 40 | tr '\n' '|' | head -c 3000)"
    say "APPLY $n rc=$rc $(tr -d '\n' < $D/apply.json)" ;;
  bootfull)
    # Issue 18 (a): /boot (layout smallboot) fills up in the middle of the install. NEW's package
    # goes first (apt must install it); then an initramfs hook adds incompressible bytes (as a
    # firmware-heavy initrd would) to NEW's initrd only, 16 MiB more than /boot has left after
    # plan's check passed: dpkg unpacks the kernel, its postinst's mkinitramfs runs out of space.
    dpkg --purge linux-image-$NEW > /dev/ttyS0 2>&1
    free=$(df -m --output=avail /boot | tail -n 1 | tr -d ' ')
    head -c $(( (free + 16) * 1048576 )) /dev/urandom > $D/bloat
    printf '#!/bin/sh\n[ "$1" = prereqs ] && exit 0\n[ "$version" = "%s" ] || exit 0\ncp %s/bloat "$DESTDIR/kswap-vm-bloat"\n' \
      "$NEW" "$D" > /etc/initramfs-tools/hooks/zz-kswap-vm-bloat
    chmod 755 /etc/initramfs-tools/hooks/zz-kswap-vm-bloat; sync
    say "BOOTFULL $n free=$free bloat=$(( free + 16 ))" ;;
  bootinfo)
    # what dpkg, /boot and GRUB's environment say now
    say "BOOTINFO $n avail=$(df -m --output=avail /boot | tail -n 1 | tr -d ' ') journal=$(test -e /var/lib/kswap/state.json && echo yes || echo no) dropin=$(test -e /etc/default/grub.d/90-kswap.cfg && echo yes || echo no) status=$(dpkg-query -W -f '${Status}' linux-image-$NEW 2>/dev/null | tr ' ' _) audit=$(dpkg --audit 2>&1 | grep -c linux-image-$NEW) files=$(ls /boot | grep -c -- "-$NEW") env=$(grub-editenv /boot/grub/grubenv list | tr '\n' ' ')" ;;
  cleanup)
    # What apply's error names for a half-configured kernel: free /boot, then rollback --purge.
    rm -f /etc/initramfs-tools/hooks/zz-kswap-vm-bloat $D/bloat; sync
    kswap --json rollback --purge > $D/cleanup.json 2> /dev/ttyS0
    say "CLEANUP $n rc=$? $(tr -d '\n' < $D/cleanup.json)" ;;
  locktimeout)
    mkdir -p /etc/kswap/kswap.conf.d
    printf '[apply]\napt_timeout = 60\n' > /etc/kswap/kswap.conf.d/50-vm-lock.conf; sync ;;
  lockhold|lockbrief)
    # Issue 18 (b): another apt holds dpkg's lock, as unattended-upgrades would: a real apt-get
    # at its "Do you want to continue?" prompt holds lock-frontend and lock from opening its
    # cache until it exits. lockhold: nobody answers; lockbrief: "n" 20 s after the next
    # applytimed said it waits for the lock (plan before it takes 20 to 100 s under TCG).
    rm -f $D/holder.out $D/apply.err
    if [ "$a" = lockhold ]; then
      (sleep 100000 | apt-get remove zstd > $D/holder.out 2>&1 &)
    else
      ( (while ! grep -q "waiting for '/var/lib/dpkg/lock" $D/apply.err 2>/dev/null; do sleep 1; done
         sleep 20; echo n) | apt-get remove zstd > $D/holder.out 2>&1 & )
    fi
    i=0
    while ! grep -q 'continue?' $D/holder.out 2>/dev/null && [ $i -lt 600 ]; do i=$((i + 1)); sleep 1; done
    say "HOLDER $n $a pid=$(pidof apt-get) $(tail -c 80 $D/holder.out | tr '\n' ' ')" ;;
  lockrelease)
    kill $(pidof apt-get) 2> /dev/null
    while pidof apt-get > /dev/null; do sleep 1; done
    say "RELEASED $n" ;;
  badinitrd)
    # NEW dies after arming: its initrd no longer has the root disk's driver.
    cp /usr/local/lib/kswap-vm/initrd-broken.img /boot/initrd.img-$NEW; sync ;;
  # The local signed repository (scenarios repo*, test/vm/vmrepo.py): show version 1 or 2,
  # report what apt and dpkg have from it.
  repo1) repo_show v1 ;;
  repo2) repo_show v2 ;;
  repoinfo) repo_info ;;
  reboot) sync; systemctl reboot; exit 0 ;;
  poweroff) say "DONE $n"; sync; systemctl poweroff; exit 0 ;;
  wait) sleep 120; say "WAIT-EXPIRED $n"; systemctl poweroff; exit 0 ;;
  *)
    # NAME:ARG of the layout's actions (act_NAME ARG)
    if command -v "act_${a%%:*}" > /dev/null 2>&1; then
      "act_${a%%:*}" "$(echo "$a" | sed -n 's/^[^:]*://p')"
    else
      say "UNKNOWN-ACTION $n $a"
    fi ;;
  esac
done
