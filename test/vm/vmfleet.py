# SPDX-License-Identifier: GPL-2.0-or-later
"""The fleet layer of the whole-VM suite (layout fleet of kswap-vm.py; test/vm/fleet.py).

The shared bookworm root tree has no SSH server, no Python and no cloud-init; its recipe stays
as it is (every scenario would rebuild it). This layer is that tree plus, installed with apt in
a chroot from the tree's own sources (Debian's archive, as mmdebstrap wrote them):
  openssh-server  Ansible reaches the nodes over real SSH (qemu's user network, a hostfwd on
                  127.0.0.1 only; the key is made per run and comes on the plan disk);
  python3         Ansible's modules run on the node;
  cloud-init      the bootstrap scenario (NoCloud seed: a disk labelled cidata).
and the files below: systemd-networkd with DHCP on the VM's NIC (qemu's user network answers;
restrict=on keeps the guest off every other network), cloud-init looking for NoCloud only.
Without a seed disk (the SSH nodes) cloud-init still runs, with its fallback datasource None
(its per-instance modules once: host keys, a default user); nothing of the test depends on it.
No dbus: `shutdown -r 0` fails there, which is why the role reboots with systemctl reboot.

Cached as CACHE/rootfs-fleet-KEY.tar, keyed by the base tree's key, the packages, the files
and this file's text; a new kswap then costs the fleet disk only a tar extraction.
"""
import hashlib
import os
import shutil
import subprocess
import tempfile

PACKAGES = ["openssh-server", "python3", "cloud-init"]
FILES = {
    # DHCP on the virtio NIC qemu's user network gives (10.0.2.15, route via 10.0.2.2).
    "etc/systemd/network/80-kswap-vm.network": "[Match]\nName=en*\n[Network]\nDHCP=ipv4\n",
    # NoCloud only (a cidata disk); without one cloud-init falls back to its datasource None.
    "etc/cloud/cloud.cfg.d/90-kswap-vm.cfg": "datasource_list: [ NoCloud ]\n",
}
APT_TIMEOUT = 1800


class LayerError(Exception):
    pass


def _run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw)


def _key(base_key):
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    for part in (base_key, *PACKAGES):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


def install(root, packages, what="the fleet tree"):
    """apt-get install packages in a chroot of root: no daemon starts (policy-rc.d), the
    host's resolv.conf only while apt runs, no package lists left behind. Raises LayerError
    naming what (the tree) when apt fails."""
    mounts = []
    policy = os.path.join(root, "usr/sbin/policy-rc.d")
    resolv = os.path.join(root, "etc/resolv.conf")
    had_resolv = os.path.lexists(resolv)
    saved = os.path.join(root, "etc/resolv.conf.kswap-vm") if had_resolv else None
    try:
        for src, dst, opts in (("proc", "proc", ["-t", "proc"]), ("/dev", "dev", ["--bind"]),
                               ("sysfs", "sys", ["-t", "sysfs"])):
            p = os.path.join(root, dst)
            _run("mount", *opts, src, p)
            mounts.append(p)
        with open(policy, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
        if had_resolv:
            os.rename(resolv, saved)
        shutil.copy("/etc/resolv.conf", resolv)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8",
                   PATH="/usr/sbin:/usr/bin:/sbin:/bin")
        for cmd in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
                    ["apt-get", "clean"]):
            r = subprocess.run(["chroot", root, *cmd], capture_output=True, text=True, env=env,
                               timeout=APT_TIMEOUT)
            if r.returncode != 0:
                raise LayerError(f"{' '.join(cmd)} in {what} failed (exit "
                                 f"{r.returncode}): {(r.stdout + r.stderr)[-3000:]}")
    finally:
        for p in reversed(mounts):
            subprocess.run(["umount", "-l", p], check=False)
        for p in (policy, resolv):
            if os.path.lexists(p):
                os.unlink(p)
        if saved:
            os.rename(saved, resolv)
    lists = os.path.join(root, "var/lib/apt/lists")
    for n in os.listdir(lists):
        p = os.path.join(lists, n)
        if os.path.isfile(p):
            os.unlink(p)


def tree(cache, base_tar, base_key):
    """The fleet tree as a cached tar: (path, key). Raises LayerError when apt fails."""
    key = _key(base_key)
    tar = os.path.join(cache, f"rootfs-fleet-{key}.tar")
    if os.path.exists(tar):
        return tar, key
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        _run("tar", "-C", root, "-xpf", base_tar)
        install(root, PACKAGES)
        for rel, text in FILES.items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        # networkd for the NIC; not its wait-online (no NIC in the bootstrap scenario: it would
        # hold network-online.target, and kswap-accept.service after it, for two minutes).
        _run("systemctl", f"--root={root}", "enable", "systemd-networkd.service")
        _run("systemctl", f"--root={root}", "disable", "systemd-networkd-wait-online.service")
        out = os.path.join(tmp, "rootfs.tar")
        _run("tar", "-C", root, "--numeric-owner", "--xattrs", "-cf", out, ".")
        os.rename(out, tar)
    for n in os.listdir(cache):
        if n.startswith("rootfs-fleet-") and n != os.path.basename(tar):
            os.unlink(os.path.join(cache, n))
    return tar, key
