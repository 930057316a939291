#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Acceptance checks against this machine: a socket the test opens on 127.0.0.1 is seen by the
listen check (and its connection by established_min); in a network namespace the test makes, a
veth interface with a root qdisc and an nftables table are seen by the interface, qdisc and nft
checks. Skips, saying why, where this kernel or machine lacks a feature.
Usage: test-live-accept.py ACCEPT-CHECK-TOOL"""
import os
import shutil
import socket
import subprocess
import sys
import time

import kstest
from kstest import check

tool = os.path.abspath(sys.argv[1])
skipped = []
NS = "kswap-accept-%d" % os.getpid()


def skip(what):
    skipped.append(what)
    print("SKIP " + what)


def run(*args, ns=None):
    cmd = (["ip", "netns", "exec", NS] if ns else []) + [tool, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


# listen and established: sockets the test owns.
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(4)
port = srv.getsockname()[1]
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
uport = udp.getsockname()[1]
p = run("listen", f"tcp:{port}", f"udp:{uport}")
check(p.returncode == 0, f"listen check sees tcp:{port} and udp:{uport} on 127.0.0.1", p.stdout + p.stderr)
srv.close()
udp.close()
p = run("listen", f"tcp:{port}")
check(p.returncode == 1 and "no tcp socket" in p.stdout, "after close: the port no longer listens", p.stdout)

srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(4)
cli = socket.create_connection(srv.getsockname())
conn, _ = srv.accept()
p = run("established_min", "2")
check(p.returncode == 0, "established_min sees the test's connection (both ends)", p.stdout)
cli.close()
conn.close()
srv.close()

p = run("sysctl", "kernel.ostype=Linux")
check(p.returncode == 0, "sysctl check reads the live value", p.stdout)
p = run("sysctl", "kernel.ostype=Plan9")
check(p.returncode == 1 and "Linux" in p.stdout, "a wrong live value fails and says what runs", p.stdout)

# modules of the running kernel: whatever proc/modules lists first.
mods = open("/proc/modules").read().split() if os.path.exists("/proc/modules") else []
sysmods = sorted(os.listdir("/sys/module")) if os.path.isdir("/sys/module") else []
if mods:
    p = run("modules", mods[0])
    check(p.returncode == 0, f"module check sees loaded {mods[0]}", p.stdout)
elif sysmods:
    print("note: no /proc/modules (a kernel without loadable modules); using sys/module")
    p = run("modules", sysmods[0])
    check(p.returncode == 0, f"module check sees {sysmods[0]} in sys/module", p.stdout)
else:
    skip("modules: neither /proc/modules nor /sys/module on this machine")
p = run("modules", "kswap_no_such_module")
check(p.returncode == 1, "a module that is not there fails", p.stdout)

# A network namespace with a veth pair, a root qdisc and an nftables table.
if os.geteuid() != 0 or not shutil.which("ip"):
    skip("network namespace: needs root and ip (iproute2)")
elif sh("ip", "netns", "add", NS).returncode != 0:
    skip("network namespace: 'ip netns add' is not permitted here")
else:
    try:
        made = sh("ip", "-n", NS, "link", "add", "kswap0", "type", "dummy").returncode == 0
        if not made:
            made = sh("ip", "-n", NS, "link", "add", "kswap0", "type", "veth", "peer", "name",
                      "kswap1").returncode == 0
            if made:
                print("note: this kernel has no dummy interfaces; a veth pair stands in")
        if not made:
            skip("interface: this kernel makes neither dummy nor veth interfaces")
        else:
            p = run("interfaces", "kswap0", ns=True)
            check(p.returncode == 1 and "down" in p.stdout, "interface check: kswap0 down fails", p.stdout)
            # A veth's carrier needs its peer up, and the kernel sets the operstate a moment
            # later (linkwatch runs from a workqueue): the peer first, then kswap0, then wait
            # (bounded) until the kernel says up, so the stand-in really is an interface that
            # is up, as a dummy one is at once.
            sh("ip", "-n", NS, "link", "set", "kswap1", "up")
            sh("ip", "-n", NS, "link", "set", "kswap0", "up")
            state = ""
            for _ in range(50):
                q = sh("ip", "netns", "exec", NS, "cat", "/sys/class/net/kswap0/operstate")
                state = q.stdout.strip() if q.returncode == 0 else ""
                if state in ("up", "unknown"):
                    break
                time.sleep(0.1)
            if state not in ("up", "unknown"):
                skip(f"interface up: kswap0 stays '{state}' with its peer up (no carrier here)")
            else:
                p = run("interfaces", "kswap0", ns=True)
                check(p.returncode == 0, "interface check: kswap0 up passes", p.stdout + p.stderr)
            p = run("interfaces", "kswap9", ns=True)
            check(p.returncode == 1 and "does not exist" in p.stdout, "a missing interface fails", p.stdout)
            if not shutil.which("tc"):
                skip("qdisc: tc (iproute2) is not installed")
            else:
                kind = None
                for k in ("cake", "fq", "fq_codel", "htb", "pfifo"):
                    if sh("ip", "netns", "exec", NS, "tc", "qdisc", "replace", "dev", "kswap0",
                          "root", k).returncode == 0:
                        kind = k
                        break
                    print(f"note: this kernel lacks the {k} qdisc")
                if not kind:
                    skip("qdisc: this kernel offers none of cake, fq, fq_codel, htb, pfifo")
                else:
                    p = run("qdisc", f"kswap0:{kind}", ns=True)
                    check(p.returncode == 0, f"qdisc check sees root {kind} on kswap0", p.stdout + p.stderr)
                    p = run("qdisc", "kswap0:kswap_other", ns=True)
                    check(p.returncode == 1 and kind in p.stdout, "another kind fails and names the real one", p.stdout)
        if not shutil.which("nft"):
            skip("nft_tables: nft (nftables) is not installed")
        elif sh("ip", "netns", "exec", NS, "nft", "add", "table", "inet", "kswaptest").returncode != 0:
            skip("nft_tables: this kernel has no nf_tables")
        else:
            p = run("nft_tables", "inet:kswaptest", ns=True)
            check(p.returncode == 0, "nft check sees table inet kswaptest", p.stdout + p.stderr)
            p = run("nft_tables", "ip:kswaptest", ns=True)
            check(p.returncode == 1, "the same name in another family fails", p.stdout)
    finally:
        sh("ip", "netns", "del", NS)

print(f"{kstest.failed} failed, {len(skipped)} skipped")
for s in skipped:
    print("  skipped: " + s)
sys.exit(1 if kstest.failed else 0)
