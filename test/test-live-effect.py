#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The swap's effect, measured on this machine: for each congestion control (cubic, and bbr
when this kernel has it), three network namespaces made here (sender, router, receiver) joined
by veth pairs, the router's way to the receiver a lossy link (netem loss and delay when the
kernel has sch_netem; otherwise a tbf bottleneck with a shallow buffer and an nftables rule
dropping 1 % of the forwarded TCP segments), bounded traffic from sender to receiver, and `kswap report --connections` and `kswap check` run inside the
sender's namespace while its connections are open: every connection shows the congestion
control it runs, the node's retransmission ratio (its namespace's /proc/net/snmp, counted from
the namespace's creation) differs between the two runs, and the congestion-control check fails
on cubic connections where bbr is configured and passes on bbr ones. Skips (exit 77), saying why,
without root, network namespaces or any way to make a link lossy.
Usage: test-live-effect.py KSWAP"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import kstest
from kstest import check

exe = os.path.abspath(sys.argv[1])
TRAFFIC = os.path.join(kstest.SRC, "test", "effect-traffic.py")
TAG = "kse%d" % (os.getpid() % 100000)
# Bounds: 4 connections of 3 MiB each, 20 s at most a run.
CONNS, BYTES, SECONDS = 4, 3 << 20, 20


def sh(*cmd, ns=None, timeout=60, **kw):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, capture_output=True, text=True, timeout=timeout, **kw)


def skip(why):
    print("SKIP " + why)
    sys.exit(77)


if os.geteuid() != 0:
    skip("needs root for network namespaces")
if not shutil.which("ip") or not shutil.which("tc"):
    skip("needs ip and tc (iproute2)")
probe = sh("ip", "netns", "add", TAG + "-probe")
if probe.returncode != 0:
    skip("cannot make a network namespace: " + probe.stderr.strip())
sh("ip", "netns", "del", TAG + "-probe")
available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
algorithms = ["cubic"] + (["bbr"] if "bbr" in available else [])
if "bbr" not in available:
    print("note: this kernel offers no bbr (%s): cubic only, no comparison" % " ".join(available))

work = tempfile.mkdtemp(prefix="kswap-effect.")
conf = os.path.join(work, "kswap.conf")
with open(conf, "w") as f:
    f.write("[accept]\ncongestion_control = bbr\n")


def make_link(i):
    """Namespaces TAG-i-a (the sender), TAG-i-r (a router) and TAG-i-b (the receiver), veth
    pairs a-r and r-b, addresses of 10.213.i.0/24 and 10.214.i.0/24; the router's way to b is
    the lossy link, so that the sender's own stack drops nothing (a local drop is no loss to
    TCP). Returns ((a, b), how the link was made) or (None, why not)."""
    a, r, b = f"{TAG}-{i}-a", f"{TAG}-{i}-r", f"{TAG}-{i}-b"
    for ns in (a, r, b):
        sh("ip", "netns", "add", ns, timeout=10)
        sh("ip", "link", "set", "lo", "up", ns=ns)
    for x, y in ((a, r), (r, b)):
        p = sh("ip", "link", "add", f"ve-{x[-1]}{y[-1]}", "netns", x, "type", "veth", "peer",
               "name", f"ve-{y[-1]}{x[-1]}", "netns", y)
        if p.returncode != 0:
            return None, "cannot make a veth pair: " + p.stderr.strip()
    for ns, dev, addr in ((a, "ve-ar", f"10.213.{i}.1/24"), (r, "ve-ra", f"10.213.{i}.254/24"),
                          (r, "ve-rb", f"10.214.{i}.254/24"), (b, "ve-br", f"10.214.{i}.2/24")):
        sh("ip", "addr", "add", addr, "dev", dev, ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
    sh("ip", "route", "add", "default", "via", f"10.213.{i}.254", ns=a)
    sh("ip", "route", "add", "default", "via", f"10.214.{i}.254", ns=b)
    # the router's own namespace: its sysctl, not this machine's
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=r)
    p = sh("tc", "qdisc", "add", "dev", "ve-rb", "root", "netem", "delay", "20ms", "loss", "1%",
           "rate", "50mbit", "limit", "1000", ns=r)
    if p.returncode == 0:
        return (a, b), "netem on the router: 20 ms delay, 1 % loss, 50 Mbit/s"
    netem_err = p.stderr.strip()
    p = sh("tc", "qdisc", "add", "dev", "ve-rb", "root", "tbf", "rate", "20mbit", "burst", "16kb",
           "latency", "10ms", ns=r)
    if p.returncode != 0:
        return None, f"no netem ({netem_err}) and no tbf ({p.stderr.strip()})"
    if not shutil.which("nft"):
        return None, f"no netem ({netem_err}) and no nft for random loss"
    rules = ("table inet kse {\n chain lossy {\n  type filter hook forward priority 0;\n"
             "  tcp dport 5201 numgen random mod 100 < 1 drop\n }\n}\n")
    p = sh("nft", "-f", "-", ns=r, input=rules)
    if p.returncode != 0:
        return None, f"no netem ({netem_err}) and no nft rule ({p.stderr.strip()})"
    return (a, b), ("on the router, tbf 20 Mbit/s with a 10 ms buffer and nftables dropping 1 % "
                    "of the forwarded TCP segments (no sch_netem: " + netem_err + ")")


def drop_link(i):
    for side in ("a", "r", "b"):
        sh("ip", "netns", "del", f"{TAG}-{i}-{side}", timeout=10)


def kswap_json(ns, *args):
    p = sh(exe, "--json", "--config", conf, *args, ns=ns, timeout=120)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, None


results = {}
try:
    for i, cc in enumerate(algorithms):
        nss, how = make_link(i)
        if not nss:
            drop_link(i)
            skip("cannot make a lossy link: " + how)
        a, b = nss
        print(f"run {cc}: {how}")
        server = subprocess.Popen(["ip", "netns", "exec", b, sys.executable, TRAFFIC, "serve",
                                   f"10.214.{i}.2", "5201", str(2 * SECONDS + 10)])
        for _ in range(50):
            if "5201" in sh("ss", "-ltnH", ns=b).stdout:
                break
            sh("sleep", "0.1")
        client = subprocess.Popen(["ip", "netns", "exec", a, sys.executable, TRAFFIC, "send",
                                   f"10.214.{i}.2", "5201", cc, str(CONNS), str(BYTES),
                                   str(SECONDS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        ready = client.stdout.readline().strip()
        check(ready == "ready", f"{cc}: the sender sent its bytes")
        p, rep = kswap_json(a, "report", "--connections")
        q, chk = kswap_json(a, "check")
        client.stdin.write("done\n")
        client.stdin.flush()
        client.wait(timeout=2 * SECONDS)
        server.kill()
        server.wait()
        drop_link(i)
        check(p.returncode == 0 and rep and rep.get("command") == "report",
              f"{cc}: kswap report --connections --json answers", p.stderr[-500:])
        if not rep:
            continue
        conns = [c for c in rep.get("connections", []) if not c["loopback"]]
        check(len(conns) == CONNS and all(c["congestion_control"] == cc for c in conns),
              f"{cc}: report shows {CONNS} connections, each running {cc}",
              [(c["remote"], c["congestion_control"]) for c in conns])
        now = rep["now"]
        check(now["congestion_control"] == {cc: CONNS},
              f"{cc}: the node's mix is {cc} {CONNS}", now["congestion_control"])
        ratio = now["retransmit_ratio"]
        conn_ratios = [c["retransmit_ratio"] for c in conns]
        results[cc] = (ratio, now["segments_sent"], now["segments_retransmitted"],
                       now["rtt_median_us"], now["delivery_rate_median"], conn_ratios)
        print(f"     {cc}: {now['segments_retransmitted']} of {now['segments_sent']} segments "
              f"retransmitted, ratio {ratio:.4f}; per connection "
              + ", ".join(f"{x:.4f}" for x in conn_ratios if x is not None)
              + f"; median RTT {now['rtt_median_us']} us, median delivery rate "
              f"{now['delivery_rate_median']} B/s")
        check(now["segments_sent"] > CONNS * BYTES // 1500 // 2,
              f"{cc}: the namespace's counters saw the traffic", now)
        ids = {c["id"]: c for c in (chk or {}).get("checks", [])}
        cid = ids.get("congestion-control:bbr", {})
        if cc == "bbr":
            check(cid.get("status") == "pass" and
                  f"{CONNS} of {CONNS} connections run bbr" in cid.get("detail", ""),
                  "bbr: the congestion-control check passes on bbr connections", cid)
        else:
            # Not a trial boot (this machine's): reported with the numbers, not required.
            check(cid.get("status") == "fail" and not cid.get("required") and
                  f"{CONNS} of {CONNS} connections run cubic, not bbr" in cid.get("detail", ""),
                  "cubic: bbr configured, connections on cubic: the check fails with the numbers",
                  (q.returncode, cid))
finally:
    for i in range(len(algorithms)):
        drop_link(i)
    shutil.rmtree(work, ignore_errors=True)

if len(results) == 2:
    (rc, *_), (rb, *_) = results["cubic"], results["bbr"]
    check(rc != rb, f"the retransmission ratio differs: cubic {rc:.4f}, bbr {rb:.4f}")
    check(rc > 0 and rb > 0, "both runs retransmitted on the lossy link", results)
print(f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
