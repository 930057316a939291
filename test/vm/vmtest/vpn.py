# SPDX-License-Identifier: GPL-2.0-or-later
"""Layout vpn: a VPN/proxy node as its operator configures one, from Debian packages only
(issue 30), on Debian 12 or 13 (BIOS).

The tree, in two cached stages: rootfs-vpnpkgs-SUITE-KEY.tar, layer 1 plus PACKAGES with apt in
a chroot from the tree's own sources; over it rootfs-vpn-SUITE-KEY.tar, vpn/node/root/ copied in
and vpn/node/configure.sh run there (what the operator does after installing: WireGuard keys
and wg0.conf, units enabled, sshd socket-activated). The disk's first boot has the NIC (as
every boot of this layout: the node's units wait for the uplink). The node:
  uplink     the virtio NIC by systemd-networkd with DHCP (qemu's -nic user,restrict=on: it
             reaches nothing but the host's forwarded ports), network-online waiting for it
  wg0        wg-quick@wg0, 10.66.0.1/24 on 51820; IPv4 forwarding; NAT masquerade
  clients    a network namespace joined by a veth pair, four WireGuard clients (keepalive and
             traffic; traffic only; never sending; a phone that sends only before arming)
  nftables   nftables.service: table inet filter (one chain named with a ':') and inet nat
  shaper     CAKE on the uplink (vpn-shaper.service), fq elsewhere (net.core.default_qdisc)
  sysctl     the tuned node's profile (99-vpn-tuning.conf: bbr, fq, buffers, forwarding) and
             tcp_bbr in modules-load.d
  rps        Receive Packet Steering on the single-queue NIC (vpn-rps.service)
  haproxy    TCP on 443 to a backend on loopback; users in the namespace hold long
             connections and reconnect (vpn-proxy-clients.service)
  docker     docker.io; the container "panel" imported from a local tree at the disk's first
             boot (vpn/node/firstboot.sh), its port 8080 published, --restart always
  sshd       ssh.socket enabled, ssh.service not (as Ubuntu 24.04 ships it)
  timer      vpn-report.timer runs a oneshot every minute; vpn-shaper and vpn-rps are oneshots
Cached like the fleet tree: a new kswap costs the vpn disk only a tar extraction.

The disk's test files (test_files): vpn/test/ (the trial-only breakages, the driver's unit as a
oneshot), the driver's VPN actions (vpn/actions.sh), the kswap.conf without [accept], and the
acceptance checklists of docs/bootstrap.md and docs/cloud-init-user-data.yaml as they are
written there."""
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import vmfleet

from .common import log, run, skip

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vpn")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
NODE = os.path.join(HERE, "node")
PACKAGES = ["wireguard-tools", "nftables", "iproute2", "haproxy", "docker.io", "openssh-server",
            "socat", "busybox-static", "iputils-ping", "procps", "apparmor"]
# Units the test enables besides the image's own (vpn/test/)
ENABLE = ["kswap-vm-vpn-break.service"]
# The disk's first boot: the node's boot (dockerd's first start under TCG took minutes), the
# container's import, update-grub.
FIRSTBOOT_TIMEOUT = 1500
KSWAP_CONF = """# kswap VM test, layout vpn: no [accept] configuration at all (the scenarios add the
# checklists of docs/bootstrap.md and docs/cloud-init-user-data.yaml as drop-ins).
"""


def _dir_files(top):
    """rel path -> (mode, text) of every file under top."""
    out = {}
    for base, dirs, files in os.walk(top):
        dirs.sort()
        for n in sorted(files):
            p = os.path.join(base, n)
            with open(p) as f:
                out[os.path.relpath(p, top)] = (os.stat(p).st_mode & 0o777, f.read())
    return out


def _packages_key(base_key):
    h = hashlib.sha256()
    for part in (base_key, *PACKAGES, open(vmfleet.__file__).read()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def _key(packages_key):
    h = hashlib.sha256()
    h.update(packages_key.encode() + b"\0" + open(os.path.abspath(__file__)).read().encode())
    for rel, (mode, text) in sorted(_dir_files(NODE).items()):
        h.update(f"{rel}\0{mode}\0{text}\0".encode())
    return h.hexdigest()[:16]


def _drop_stale(cache, prefix, keep):
    for n in os.listdir(cache):
        if n.startswith(prefix) and n != os.path.basename(keep):
            os.unlink(os.path.join(cache, n))


def _packages_tree(cache, pf, base_tar, base_key):
    """Stage 1, rootfs-vpnpkgs-SUITE-KEY.tar: layer 1 plus PACKAGES (apt in a chroot, the slow
    part: minutes), keyed by the base tree and the packages only, so that editing the node's
    configuration (stage 2) costs no apt run. Skips when apt fails."""
    key = _packages_key(base_key)
    tar = os.path.join(cache, f"rootfs-vpnpkgs-{pf.suite}-{key}.tar")
    if os.path.exists(tar):
        return tar, key
    log(f"building the {pf.suite} vpn packages tree ({' '.join(PACKAGES)}) with apt in a chroot")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        run("tar", "-C", root, "-xpf", base_tar)
        try:
            vmfleet.install(root, PACKAGES, what=f"the {pf.suite} vpn tree")
        except vmfleet.LayerError as e:
            skip(str(e))
        out = os.path.join(tmp, "rootfs.tar")
        run("tar", "-C", root, "--numeric-owner", "--xattrs", "-cf", out, ".")
        os.rename(out, tar)
    _drop_stale(cache, f"rootfs-vpnpkgs-{pf.suite}-", tar)
    return tar, key


def tree(cache, pf, base_tar, base_key):
    """The vpn tree of pf's suite as a cached tar: (path, key). Stage 2 over stage 1
    (_packages_tree): vpn/node/root/ copied in, vpn/node/configure.sh run in a chroot."""
    pkgs_tar, pkgs_key = _packages_tree(cache, pf, base_tar, base_key)
    key = _key(pkgs_key)
    tar = os.path.join(cache, f"rootfs-vpn-{pf.suite}-{key}.tar")
    if os.path.exists(tar):
        return tar, key
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        run("tar", "-C", root, "-xpf", pkgs_tar)
        # the operator's files over the packages' (after apt: dpkg would ask about each
        # conffile), then the operator's commands
        os.makedirs(os.path.join(root, "usr/local/lib/kswap-vm"), exist_ok=True)
        run("cp", "-a", os.path.join(NODE, "root") + "/.", root)
        shutil.copy(os.path.join(NODE, "configure.sh"), os.path.join(root, "tmp"))
        r = subprocess.run(["chroot", root, "sh", "-e", "/tmp/configure.sh"], capture_output=True,
                           text=True, env=dict(os.environ, PATH="/usr/sbin:/usr/bin:/sbin:/bin"))
        if r.returncode != 0:
            raise ValueError(f"vpn/node/configure.sh failed (exit {r.returncode}): "
                             f"{(r.stdout + r.stderr)[-3000:]}")
        os.unlink(os.path.join(root, "tmp/configure.sh"))
        out = os.path.join(tmp, "rootfs.tar")
        run("tar", "-C", root, "--numeric-owner", "--xattrs", "-cf", out, ".")
        os.rename(out, tar)
    _drop_stale(cache, f"rootfs-vpn-{pf.suite}-", tar)
    return tar, key


def bootstrap_conf():
    """The [accept] drop-in docs/bootstrap.md writes (its heredoc), as it is there."""
    text = open(os.path.join(SRC, "docs", "bootstrap.md")).read()
    m = re.search(r"cat > /etc/kswap/kswap\.conf\.d/50-bootstrap\.conf <<'EOF'\n(.*?)\n *EOF\n",
                  text, re.S)
    if not m:
        raise ValueError("docs/bootstrap.md: no heredoc writing 50-bootstrap.conf")
    lines = m.group(1).split("\n")
    indent = min(len(ln) - len(ln.lstrip()) for ln in lines if ln.strip())
    return "".join(ln[indent:] + "\n" for ln in lines)


def cloudinit_conf():
    """The [accept] drop-in docs/cloud-init-user-data.yaml writes (write_files), as it is there."""
    import yaml
    doc = yaml.safe_load(open(os.path.join(SRC, "docs", "cloud-init-user-data.yaml")))
    for f in doc.get("write_files") or []:
        if f.get("path") == "/etc/kswap/kswap.conf.d/50-bootstrap.conf":
            return f["content"]
    raise ValueError("docs/cloud-init-user-data.yaml writes no 50-bootstrap.conf")


def test_files(pf):
    """path -> (mode, text): what the test adds to the vpn disk (over guestfiles.vm_files)."""
    files = _dir_files(os.path.join(HERE, "test"))
    with open(os.path.join(HERE, "actions.sh")) as f:
        files["usr/local/lib/kswap-vm/actions.sh"] = (0o644, f.read())
    with open(os.path.join(NODE, "firstboot.sh")) as f:
        files["usr/local/lib/kswap-vm/firstboot.d/vpn"] = (0o755, f.read())
    with open(os.path.join(NODE, "root/etc/haproxy/haproxy.cfg")) as f:
        cfg = f.read()
    if "\tbind :443\n" not in cfg:
        raise ValueError("vpn/node: haproxy.cfg has no 'bind :443' line")
    files["usr/local/lib/kswap-vm/haproxy-no443.cfg"] = (
        0o644, cfg.replace("\tbind :443\n", "\tbind :8443\n"))
    files["etc/kswap/kswap.conf"] = (0o644, KSWAP_CONF)
    files["usr/local/lib/kswap-vm/conf/bootstrap.conf"] = (0o644, bootstrap_conf())
    files["usr/local/lib/kswap-vm/conf/cloudinit.conf"] = (0o644, cloudinit_conf())
    return files
