#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The VPN node's configuration, as its operator makes it after installing the packages (run
# in a chroot of the vpn tree by vmtest/vpn.py; root/ is in place already). kswap VM test,
# layout vpn. The container is made at the disk's first boot (firstboot.sh: dockerd runs there).
set -eu
umask 077

# WireGuard: the server wg0 (10.66.0.1/24, port 51820) and its four clients (vpn-clients).
mkdir -p /etc/wireguard/clients
srv_key=$(wg genkey)
srv_pub=$(printf '%s\n' "$srv_key" | wg pubkey)
{
	printf '[Interface]\nAddress = 10.66.0.1/24\nListenPort = 51820\nPrivateKey = %s\n' "$srv_key"
	for i in 1 2 3 4; do
		key=$(wg genkey)
		pub=$(printf '%s\n' "$key" | wg pubkey)
		printf '\n[Peer]\n# client %s (vpn-clients)\nPublicKey = %s\nAllowedIPs = 10.66.0.%s/32\n' \
			"$i" "$pub" "$((i + 1))"
		{
			printf '[Interface]\nPrivateKey = %s\n\n[Peer]\nPublicKey = %s\n' "$key" "$srv_pub"
			printf 'Endpoint = 10.99.0.1:51820\nAllowedIPs = 10.66.0.1/32\n'
			[ "$i" = 1 ] && printf 'PersistentKeepalive = 25\n'
		} > "/etc/wireguard/clients/wgc$i.conf"
	done
} > /etc/wireguard/wg0.conf

# The container: a small tree (busybox-static's binary and a page), imported at the first boot.
umask 022
t=$(mktemp -d)
mkdir -p "$t/bin" "$t/www"
cp /bin/busybox "$t/bin/busybox"
ln -s busybox "$t/bin/sh"
echo 'kswap VM test: the panel' > "$t/www/index.html"
tar -C "$t" -cf /usr/local/lib/kswap-vm/panel.tar .
rm -rf "$t"

# Units: what an operator enables. sshd socket-activated (as Ubuntu 24.04 ships it): ssh.socket
# enabled, ssh.service not. The uplink by systemd-networkd with DHCP, network-online waiting for it.
systemctl enable systemd-networkd.service systemd-networkd-wait-online.service \
	wg-quick@wg0.service nftables.service haproxy.service docker.service containerd.service \
	ssh.socket vpn-shaper.service vpn-rps.service vpn-backend.service vpn-clients.service \
	vpn-client-traffic.service vpn-proxy-clients.service vpn-report.timer
systemctl disable ssh.service
