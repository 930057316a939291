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
            # Receive Packet Steering as a tuned VPN node sets it from a unit: the snapshot takes
            # the queue that steers, its check passes, and fails once the unit's work is undone.
            q0 = "/sys/class/net/kswap0/queues/rx-0/"
            set_rps = lambda cpus, flows: (
                sh("ip", "netns", "exec", NS, "bash", "-c",
                   f"echo {cpus} > {q0}rps_cpus && echo {flows} > {q0}rps_flow_cnt").returncode == 0)
            if not set_rps(1, 64):
                skip("rps: this kernel has no Receive Packet Steering on kswap0 (CONFIG_RPS)")
            else:
                p = run("--snapshot", "rps:kswap0", ns=True)
                check(p.returncode == 0 and p.stdout.startswith("pass rps:kswap0:rx-0:1:64: "),
                      "the snapshot takes kswap0's steering queue: rps:kswap0:rx-0:1:64, and it passes",
                      p.stdout + p.stderr)
                set_rps(0, 0)
                p = run("rps", "kswap0:rx-0:1:64", ns=True)
                check(p.returncode == 1 and "rps_cpus 0, rps_flow_cnt 0; wanted rps_cpus 1" in p.stdout,
                      "... and fails once RPS is off, saying what runs", p.stdout + p.stderr)
                p = run("--snapshot", "rps:", ns=True)
                check(p.returncode == 0 and "rps:" not in p.stdout, "... a queue without RPS is no item",
                      p.stdout)
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
        # A bridge whose last port left, up: what docker0 is with containers on host
        # networking (NO-CARRIER, operstate down; a bridge that never had a port says unknown).
        # Judged as at arming, it asks for "up" only.
        if sh("ip", "-n", NS, "link", "add", "kswapbr0", "type", "bridge").returncode != 0 or \
                sh("ip", "-n", NS, "link", "add", "kswapv0", "type", "veth", "peer", "name",
                   "kswapv1").returncode != 0:
            skip("interface without carrier: this kernel makes no bridges or veth pairs")
        else:
            for cmd in (("kswapbr0", "up"), ("kswapv0", "master", "kswapbr0"), ("kswapv0", "up"),
                        ("kswapv0", "nomaster")):
                sh("ip", "-n", NS, "link", "set", *cmd)
            # The kernel's link watch sets operstate a moment later (net/core/link_watch.c).
            for _ in range(30):
                if "state DOWN" in sh("ip", "-n", NS, "link", "show", "kswapbr0").stdout:
                    break
                time.sleep(0.1)
            p = run("interfaces", "kswapbr0", ns=True)
            check(p.returncode == 1 and "operstate down, administratively up" in p.stdout,
                  "a bridge without ports is up without a carrier: the full interface check fails",
                  p.stdout)
            p = run("interfaces", "kswapbr0:no-carrier", ns=True)
            check(p.returncode == 0 and "no carrier at arming" in p.stdout,
                  "interface:kswapbr0:no-carrier (as a snapshot takes it) passes", p.stdout + p.stderr)
            p = run("--snapshot", "interface:kswapbr0", ns=True)
            check(p.returncode == 0 and p.stdout.startswith("pass interface:kswapbr0:no-carrier:"),
                  "the snapshot takes the bridge as it is: interface:kswapbr0:no-carrier, and it passes",
                  p.stdout + p.stderr)
            sh("ip", "-n", NS, "link", "set", "kswapbr0", "down")
            p = run("interfaces", "kswapbr0:no-carrier", ns=True)
            check(p.returncode == 1 and "administratively down" in p.stdout,
                  "... and fails once the bridge is down", p.stdout)
        # nft names with ':' and a space (legal with quotes), taken by the snapshot from the real
        # nft and checked again: each id splits back into its names (issue 34).
        nft_json = ('{"nftables": [{"add": {"table": {"family": "inet", "name": "kswap ids"}}},'
                    ' {"add": {"chain": {"family": "inet", "table": "kswap ids", "name": "allow:ssh"}}}]}')
        if shutil.which("nft") and subprocess.run(
                ["ip", "netns", "exec", NS, "nft", "-j", "-f", "-"], input=nft_json, text=True,
                capture_output=True, timeout=30).returncode == 0:
            p = run("--snapshot", "nft-", ns=True)
            check(p.returncode == 0 and "pass nft-chain:inet:kswap%20ids:allow:ssh:" in p.stdout and
                  "pass nft-table:inet:kswap%20ids:" in p.stdout,
                  "the snapshot's nft items of 'kswap ids' and 'allow:ssh' come back", p.stdout + p.stderr)
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
