#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The disk's first boot on the vpn layout (the guest driver runs it before update-grub):
# the panel container from the local tree, its port published, restarted by dockerd at every
# boot. No registry is reachable: docker import, never docker pull.
set -eu
# where the first boot's time went (the serial log is kept as CACHE/firstboot-vpn.log)
systemctl show -p Id -p InactiveExitTimestampMonotonic -p ActiveEnterTimestampMonotonic \
	containerd.service docker.service multi-user.target | tr '\n' ' '
echo
journalctl -b -o short-monotonic --no-pager -u containerd.service -u docker.service | tail -n 60
docker import /usr/local/lib/kswap-vm/panel.tar panel:local
docker run -d --name panel --restart always -p 8080:8080 panel:local \
	/bin/busybox httpd -f -p 8080 -h /www
docker ps
