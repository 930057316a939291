# SPDX-License-Identifier: GPL-2.0-or-later
# kswap VM test, layout vpn: the guest driver's actions on the VPN node (sourced by driver.sh,
# which calls act_NAME ARG for a plan action NAME:ARG; n is the boot number, D the driver's
# directory, OLD and NEW the kernels, say() writes a KSWAP-VM line on the serial console).
#
# The scenarios' plan is one line for every boot, "*=trials:SPEC+SPEC+...": a series of trials
# on one node, each from the kernel that runs to the other one (apply --deb NEW, or --kernel
# OLD). A SPEC is the acceptance configuration of a healthy trial (none: no [accept] at all;
# bootstrap, cloudinit: the checklist of docs/bootstrap.md or docs/cloud-init-user-data.yaml)
# or x-WHAT: a trial with no configuration that breaks WHAT on its trial boot only (vpn-break).

# shellcheck disable=SC2154 # n, D, OLD, NEW, say: the driver's
VPN_NS=vpnclients

# systemd's monotonic timestamp of a unit's property in milliseconds (0: never)
vpn_ms() { v=$(systemctl show -p "$2" --value "$1" 2>/dev/null); echo $(( ${v:-0} / 1000 )); }

# One line of what the node shows: the tunnel and its peers (allowed IP, seconds since the
# handshake, keepalive), the qdisc of the uplink, the nft tables, the sysctls, RPS, the
# container, the listeners and users of the proxy, sshd, failed units.
vpn_state() {
	up=$(/usr/local/sbin/vpn-uplink)
	now=$(date +%s)
	peers=$(wg show wg0 dump 2>/dev/null | tail -n +2 |
		awk -v now="$now" '{ printf "%s:%s:%s ", $4, ($5 == 0 ? "never" : now - $5), $8 }')
	printf 'uplink=%s wg0=%s peers=[%s] qdisc=%s nft=%s fwd=%s cc=%s default_qdisc=%s ' \
		"$up" "$(ip -br link show wg0 2>/dev/null | awk '{print $2}')" "$peers" \
		"$(tc qdisc show dev "$up" root | awk '{print $2}')" \
		"$(nft list tables 2>/dev/null | awk '{printf "%s:%s,", $2, $3}')" \
		"$(cat /proc/sys/net/ipv4/ip_forward)" \
		"$(cat /proc/sys/net/ipv4/tcp_congestion_control)" \
		"$(cat /proc/sys/net/core/default_qdisc)"
	printf 'rps=%s/%s/%s panel=%s listen443=%s users443=%s listen8080=%s ssh.socket=%s ' \
		"$(cat /sys/class/net/"$up"/queues/rx-0/rps_cpus)" \
		"$(cat /sys/class/net/"$up"/queues/rx-0/rps_flow_cnt)" \
		"$(cat /proc/sys/net/core/rps_sock_flow_entries)" \
		"$(docker inspect -f '{{.State.Status}}' panel 2>/dev/null)" \
		"$(ss -Htln 'sport = :443' | wc -l)" \
		"$(ss -Htn state established '( sport = :443 )' | grep -vc ' 127\.0\.0\.1:')" \
		"$(ss -Htln 'sport = :8080' | wc -l)" "$(systemctl is-active ssh.socket)"
	printf 'ssh.service=%s failed=[%s]\n' "$(systemctl is-active ssh.service)" \
		"$(systemctl list-units --failed --no-legend --plain | awk '{printf "%s ", $1}')"
}

# Wait (at most 300 s of wall clock: one round of vpn_state took tens of seconds at load 20)
# until the node runs as configured: both talking clients shook hands, the proxy has its four
# users, the container runs, CAKE is on the uplink. Then say what it shows.
act_settle() {
	t0=$(date +%s)
	settled=no
	while [ $(($(date +%s) - t0)) -lt 300 ]; do
		s=$(vpn_state)
		case $s in
		*"10.66.0.2/32:never"* | *"10.66.0.3/32:never"*) ;;
		*"panel=running"*"users443=4 "*) case $s in *qdisc=cake*) settled=yes; break ;; esac ;;
		esac
		sleep 2
	done
	say "VPNSTATE $n settled=$settled after=$(($(date +%s) - t0)) $s"
}

# The phone (wgc4): in use until the reboot (a ping every 30 s in the background, so that its
# handshake is fresh when apply takes the snapshot minutes later), idle on the trial boot (no
# one starts it there): a roaming client that shook hands shortly before arming and sleeps
# during the trial.
act_roam() {
	ip netns exec "$VPN_NS" ping -q -n -c 3 -i 0.5 -I 10.66.0.5 10.66.0.1 > /dev/null 2>&1
	(ip netns exec "$VPN_NS" ping -q -n -c 60 -i 30 -I 10.66.0.5 10.66.0.1 > /dev/null 2>&1 &)
	say "ROAM $n $(wg show wg0 latest-handshakes | tr '\t\n' ': ')"
}

# Back on the old kernel after a failed trial: what the trial boot's accept found missing (its
# "  - ID" lines in the persistent journal), to tell the breakage from another failure.
act_missing() {
	say "MISSING $n $(journalctl -b -1 -u kswap-accept.service -o cat --no-pager 2>/dev/null |
		sed -n 's/^  - //p' | tr '\n' ' ')"
}

# The acceptance configuration of the next trial: none, bootstrap or cloudinit.
act_conf() {
	rm -f /etc/kswap/kswap.conf.d/50-bootstrap.conf
	case $1 in
	none) ;;
	*)
		mkdir -p /etc/kswap/kswap.conf.d
		cp "/usr/local/lib/kswap-vm/conf/$1.conf" /etc/kswap/kswap.conf.d/50-bootstrap.conf ;;
	esac
	sync
	say "CONF $n $1 $(cat /etc/kswap/kswap.conf /etc/kswap/kswap.conf.d/*.conf 2>/dev/null | grep -v '^#' | tr '\n' '|')"
}

# What the next trial boot breaks (vpn-break), or nothing.
act_break() {
	if [ "$1" = none ]; then rm -f /etc/kswap-vm/vpn-break; else echo "$1" > /etc/kswap-vm/vpn-break; fi
	sync
}

# apply to the other kernel, with --reboot: NEW by its package, OLD by its release.
act_swap() {
	if [ "$(uname -r)" = "$NEW" ]; then
		src="--kernel $OLD"
	else
		src="--deb $(ls /var/lib/kswap-vm/linux-image-"${NEW}"_*.deb)"
	fi
	say "APPLY-START $n kswap --json apply $src --yes --reboot"
	# shellcheck disable=SC2086 # two words: --deb FILE or --kernel RELEASE
	kswap --json apply $src --yes --reboot > "$D/apply.json" 2> /dev/ttyS0
	rc=$?
	# apply --reboot returned: it did not reboot
	say "APPLY $n rc=$rc $(tr -d '\n' < "$D/apply.json")"
}

# This boot's times (ms since the kernel's start) and accept's verdict on it, and the journal.
# Sets vpn_trial_failed=1 on a trial boot whose verdict was not a pin (accept reboots it).
act_verdict() {
	say "BOOTTIME $n kernel=$(uname -r) multi_user=$(vpn_ms multi-user.target ActiveEnterTimestampMonotonic) online=$(vpn_ms network-online.target ActiveEnterTimestampMonotonic) docker=$(vpn_ms docker.service InactiveExitTimestampMonotonic)-$(vpn_ms docker.service ActiveEnterTimestampMonotonic) accept=$(vpn_ms kswap-accept.service ExecMainStartTimestampMonotonic)-$(vpn_ms kswap-accept.service ExecMainExitTimestampMonotonic) accept_rc=$(systemctl show -p ExecMainStatus --value kswap-accept.service)"
	say "JOURNAL $n $(tr -d '\n' < /var/lib/kswap/state.json 2>/dev/null)"
	vpn_trial_failed=0
	if grep -q 'kswap\.trial=' /proc/cmdline &&
		[ "$(systemctl show -p ExecMainStatus --value kswap-accept.service)" != 0 ]; then
		vpn_trial_failed=1
	fi
}

# The slowest units of this boot (their start, ms), once: where a boot's time goes.
vpn_blame() {
	units=$(systemctl list-units --type=service --no-legend --plain | awk '{print $1}')
	# shellcheck disable=SC2086
	systemctl show -p Id -p InactiveExitTimestampMonotonic -p ActiveEnterTimestampMonotonic $units |
		awk -F= '/^Id=/ {id=$2} /^InactiveExit/ {s=$2} /^ActiveEnter/ {if (s > 0 && $2 > s) printf "%d %s\n", ($2 - s) / 1000, id}' |
		sort -rn | head -n 12 | tr '\n' ','
}

act_blame() {
	# (one line without a newline at its end: no "while read", which would drop it)
	say "BLAME $n $(vpn_blame)"
}

# Back on a kernel after a breakage: the host reads sshd's banner through its forwarded port
# (it watches for this line); sshd is socket-activated, so its service turns active once the
# host connected. Wait for that, at most 180 s.
act_sshwait() {
	say "SSHWAIT $n $(uname -r)"
	i=0
	while [ $i -lt 180 ] && [ "$(systemctl is-active ssh.service)" != active ]; do
		sleep 1
		i=$((i + 1))
	done
	say "SSHSEEN $n ssh.service=$(systemctl is-active ssh.service) after=$i"
}

act_trials() {
	# shellcheck disable=SC2046
	set -- $(echo "$1" | tr '+' ' ')
	act_verdict
	if [ "$vpn_trial_failed" = 1 ]; then
		say "WAITREBOOT $n the trial failed, accept reboots into the old kernel"
		sleep 900
		exit 0
	fi
	k=$(cat "$D/vpn-trials" 2>/dev/null || echo 0)
	[ "$k" = 0 ] && act_blame
	if [ "$k" -gt 0 ]; then
		eval "prev=\${$k}"
		# shellcheck disable=SC2154
		case $prev in x-*) act_missing; act_sshwait ;; esac
	fi
	if [ "$k" -ge $# ]; then
		act_break none
		say "DONE $n"
		sync
		systemctl poweroff
		exit 0
	fi
	shift "$k"
	spec=$1
	k=$((k + 1))
	act_settle
	case $spec in
	x-*) act_conf none; act_break "${spec#x-}" ;;
	*) act_conf "$spec"; act_break none ;;
	esac
	act_roam
	echo "$k" > "$D/vpn-trials"
	sync
	say "TRIAL $n $k $spec from=$(uname -r)"
	act_swap
	# not rebooted: apply refused or failed (the host sees the APPLY line)
	say "DONE $n"
	sync
	systemctl poweroff
	exit 0
}
