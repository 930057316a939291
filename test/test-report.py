#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kswap report, the swap's effect on TCP, through a whole swap on a copy of the example root
with the fakes first on PATH: apply keeps the old kernel's baseline at arming, accept's pin a
sample of the trial kernel, report compares before and after (the window from the pin while in
the pin's boot, from the boot after a reboot), --record keeps the figures in the journal, the
history and kswap.prom (promtool checks it when installed). The node's counters and
connections are the root's proc/net/snmp, netstat and kswap-sock-diag.json, set by the test
between the steps as the kernel would have them. Usage: test-report.py KSWAP"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import kstest
from kstest import NEW, OLD, check

exe = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp(prefix="kswap-report.")
PROM_DIR = "var/lib/prometheus/node-exporter"


def kswap(root, *args, **kw):
    return kstest.run_kswap(exe, root, *args, SUDO_USER="", INVOCATION_ID="", **kw)


def put(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def get(root, rel):
    with open(os.path.join(root, rel)) as f:
        return f.read()


def counters(root, out, retrans, timeouts):
    """proc/net/snmp and netstat as the kernel writes them, with these counters."""
    put(root, "proc/net/snmp",
        "Ip: Forwarding DefaultTTL\nIp: 2 64\n"
        "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails "
        "EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
        f"Tcp: 1 200 120000 -1 10 2000 0 0 3 {out} {out} {retrans} 0 0 0\n")
    put(root, "proc/net/netstat",
        "TcpExt: SyncookiesSent TCPTimeouts TCPLostRetransmit\n"
        f"TcpExt: 0 {timeouts} {timeouts // 10}\n")


def connections(root, cc, n, rtt_us, rate):
    put(root, "proc/net/kswap-sock-diag.json", json.dumps({"connections": [
        {"local": "10.0.0.2:443", "remote": f"203.0.113.{i + 1}:5{i:04d}", "congestion_control": cc,
         "rtt_us": rtt_us + i, "segs_out": 5000, "data_segs_out": 4990, "total_retrans": 50,
         "delivery_rate": rate + i} for i in range(n)]}))


def boot_into(root, release, boot_id):
    put(root, "proc/sys/kernel/osrelease", release + "\n")
    put(root, "proc/sys/kernel/random/boot_id", boot_id + "\n")


def report(root, *args):
    p, d = kswap(root, "--json", "report", *args)
    check(p.returncode in (0, 2) and d and d.get("command") == "report",
          f"report {' '.join(args)}: one JSON document", p.stdout + p.stderr)
    return p, d or {}


deb = os.path.join(work, "xanmod.deb")
subprocess.run(["bash", os.path.join(kstest.FAKES, "make-kernel-deb.sh"), NEW, deb, "--bbr",
                "builtin", "--compress", "zst"], check=True, capture_output=True)
r = os.path.join(work, "node")
shutil.copytree(kstest.EXAMPLE_ROOT, r, symlinks=True)
os.makedirs(os.path.join(r, PROM_DIR))
# The old kernel, since its boot: 2 % retransmitted, three connections on cubic.
counters(r, 1000000, 20000, 300)
connections(r, "cubic", 3, 48000, 1000000)

p, _ = kswap(r, "apply", "--deb", deb, "--yes")
check(p.returncode == 0, "apply arms", p.stderr[-2000:])
check(f"TCP on {OLD} since its boot: 1000000 segments sent, 2.00 % retransmitted; connections "
      "by congestion control: cubic 3" in p.stderr, "the arm step says what the baseline saw",
      p.stderr[-2000:])
j = json.loads(get(r, "var/lib/kswap/state.json"))
b = (j.get("tcp") or {}).get("baseline") or {}
check(b.get("kernel") == OLD and b.get("out_segs") == 1000000 and b.get("retrans_segs") == 20000
      and b.get("congestion_control") == {"cubic": 3} and b.get("rtt_median_us") == 48001 and
      j["tcp"].get("pinned") is None, "the journal keeps the baseline (tcp.baseline)", j.get("tcp"))

p, d = report(r)
check(p.returncode == 0 and d["swap"]["source"] == "journal" and d["swap"]["status"] == "armed" and
      d["before"]["retransmit_ratio"] == 0.02 and d["after"] is None and
      d["no_after"] == "the node does not run the new kernel" and d["change"] is None,
      "armed, the old kernel runs: before only", d)

# The trial boot: the new kernel since its boot, two connections on bbr.
boot_into(r, NEW, "11111111-2222-4333-8444-555555555555")
counters(r, 10000, 100, 2)
connections(r, "bbr", 2, 40000, 1200000)
p, d = kswap(r, "--json", "accept")
check(p.returncode == 0 and d and d.get("pinned"), "accept pins", p.stderr[-2000:])
c = {x["id"]: x for x in (d or {}).get("checks", [])}.get("congestion-control:bbr", {})
check(c.get("status") == "pass" and c.get("required") and "2 of 2 connections run bbr" in c["detail"],
      "accept: the trial's connections run bbr", c)
j = json.loads(get(r, "var/lib/kswap/state.json"))
pin = (j.get("tcp") or {}).get("pinned") or {}
check(pin.get("kernel") == NEW and pin.get("out_segs") == 10000 and
      pin.get("boot_id") == "11111111-2222-4333-8444-555555555555",
      "the pin keeps a sample of the new kernel (tcp.pinned)", j.get("tcp"))
h = json.loads(get(r, "var/lib/kswap/history.json"))["swaps"]
check(len(h) == 1 and h[0]["tcp"]["baseline"]["out_segs"] == 1000000 and
      h[0]["tcp"]["pinned"]["out_segs"] == 10000 and h[0]["tcp"]["after"] is None,
      "the history's record keeps the swap's samples", h)

# A day later, the same boot: 500000 more segments, 5000 more retransmitted (1 %).
counters(r, 510000, 5100, 40)
p, d = report(r)
a = d.get("after") or {}
check(p.returncode == 0 and d["swap"]["status"] == "pinned" and a.get("kernel") == NEW and
      a["window"]["since_boot"] is False and a["window"]["from"] == pin.get("at") and
      a["segments_sent"] == 500000 and a["segments_retransmitted"] == 5000 and
      a["retransmit_ratio"] == 0.01 and a["timeouts"] == 38 and a["congestion_control"] == {"bbr": 2},
      "after: from the pin to now, two samples of one boot", a)
ch = d.get("change") or {}
check(abs(ch.get("retransmit_ratio_percent", 0) + 50) < 1e-9 and
      abs(ch.get("rtt_median_percent", 0) - (40000 - 48001) / 48001 * 100) < 1e-9 and
      abs(ch.get("delivery_rate_median_percent", 0) - (1200000 - 1000001) / 1000001 * 100) < 1e-9,
      "the change in percent: retransmissions -50 %, RTT and delivery rate", ch)
p, _ = kswap(r, "report")
lines = {l[:22].strip(): l for l in p.stdout.splitlines()}
check(p.returncode == 0 and f"swap {OLD} -> {NEW} (pinned; from the state journal)" in p.stdout and
      "2.000 %" in lines.get("retransmitted", "") and "1.000 %" in lines.get("retransmitted", "") and
      lines.get("retransmitted", "").rstrip().endswith("-50.0 %") and
      "cubic 3" in lines.get("connections", "") and "bbr 2" in lines.get("connections", "") and
      "boot to arming" in lines.get("window", "") and "pin to now" in lines.get("window", ""),
      "the text: before and after side by side, the change", p.stdout)
p, _ = kswap(r, "-q", "report")
check(p.returncode == 0 and
      p.stdout == f"retransmitted: 2.000 % on {OLD} -> 1.000 % on {NEW} (-50.0 %)\n",
      "-q: the one line that judges the effect", p.stdout)
before_prom = os.path.exists(os.path.join(r, PROM_DIR, "kswap.prom")) and \
    get(r, os.path.join(PROM_DIR, "kswap.prom"))
check(before_prom and f'kswap_tcp_retransmit_ratio{{kernel="{OLD}",phase="before"}} 0.02' in before_prom
      and f'kswap_tcp_retransmit_ratio{{kernel="{NEW}",phase="after"}} 0.01' in before_prom,
      "kswap.prom after the pin: before, and after as the trial boot up to the pin", before_prom)

# --record: the figures after the pin kept in the journal, the history and kswap.prom.
journal_before = get(r, "var/lib/kswap/state.json")
p, d = report(r, "--record")
check(p.returncode == 0 and d.get("recorded") is True and d.get("warning") is None,
      "report --record: exit 0", p.stderr)
j = json.loads(get(r, "var/lib/kswap/state.json"))
check(j["tcp"]["after"]["out_segs"] == 510000 and j["state"] == "pinned",
      "the journal keeps the sample as tcp.after", j.get("tcp"))
h = json.loads(get(r, "var/lib/kswap/history.json"))["swaps"]
check(len(h) == 1 and h[0]["tcp"]["after"]["out_segs"] == 510000 and h[0]["outcome"] == "pinned",
      "the history's record of the swap gets it, still one record", h)
prom = get(r, os.path.join(PROM_DIR, "kswap.prom"))
want = [f'kswap_tcp_retransmit_ratio{{kernel="{OLD}",phase="before"}} 0.02',
        f'kswap_tcp_retransmit_ratio{{kernel="{NEW}",phase="after"}} 0.01',
        f'kswap_tcp_segments_sent{{kernel="{NEW}",phase="after"}} 500000',
        f'kswap_tcp_connections{{kernel="{OLD}",phase="before",congestion_control="cubic"}} 3',
        f'kswap_tcp_connections{{kernel="{NEW}",phase="after",congestion_control="bbr"}} 2',
        f'kswap_tcp_rtt_median_seconds{{kernel="{NEW}",phase="after"}} 0.04',
        "# TYPE kswap_tcp_retransmit_ratio gauge"]
check(all(w in prom for w in want), "kswap.prom: the figures by kernel and phase",
      [w for w in want if w not in prom] + [prom])
promtool = shutil.which("promtool")
if promtool:
    q = subprocess.run([promtool, "check", "metrics"], input=prom, capture_output=True, text=True)
    check(q.returncode == 0, "promtool check metrics accepts kswap.prom", q.stdout + q.stderr)
else:
    print("note: promtool not installed: kswap.prom not checked by it")
p, _ = kswap(r, "status", "--history")
check(p.returncode == 0 and "pinned" in p.stdout, "status --history still reads the history",
      p.stdout + p.stderr)

# After a reboot into the pinned kernel: the window starts at the boot.
boot_into(r, NEW, "22222222-2222-4333-8444-555555555555")
counters(r, 2000, 10, 0)
p, d = report(r)
a = d.get("after") or {}
check(a.get("window", {}).get("since_boot") is True and a.get("segments_sent") == 2000 and
      a.get("retransmit_ratio") == 0.005, "after a reboot: from the boot", a)

# Nothing to record on the old kernel; refused without changing anything.
boot_into(r, OLD, "33333333-2222-4333-8444-555555555555")
before = get(r, "var/lib/kswap/state.json")
p, d = kswap(r, "--json", "report", "--record")
check(p.returncode == 2 and d and "not the pinned" in (d.get("error") or "") and
      get(r, "var/lib/kswap/state.json") == before,
      "report --record on another kernel: refused (exit 2), the journal unchanged", p.stdout)
p, d = report(r)
check(d.get("after") is None and d.get("no_after") == "the node does not run the new kernel",
      "report on the old kernel: no after", d)

# A node whose journal has no baseline: the newest swap of the history that has one.
r2 = os.path.join(work, "history-only")
shutil.copytree(r, r2, symlinks=True)
os.unlink(os.path.join(r2, "var/lib/kswap/state.json"))
boot_into(r2, NEW, "44444444-2222-4333-8444-555555555555")
p, d = report(r2)
check(d.get("swap", {}).get("source") == "history" and d["swap"]["history_id"] == 1 and
      d["before"]["retransmit_ratio"] == 0.02, "without a journal: the swap from the history", d)

# A node without any swap: its figures since the boot.
r3 = os.path.join(work, "plain")
shutil.copytree(kstest.EXAMPLE_ROOT, r3, symlinks=True)
counters(r3, 400, 4, 0)
p, d = report(r3)
check(d.get("swap") is None and d["now"]["retransmit_ratio"] == 0.01 and d["before"] is None,
      "no swap: the node now, since its boot", d)
os.unlink(os.path.join(r3, "proc/net/snmp"))
p, d = kswap(r3, "--json", "report")
check(p.returncode == 1 and d and d.get("result") == "error" and
      "/proc/net/snmp" in (d.get("error") or ""), "no counters: exit 1, named", p.stdout)

shutil.rmtree(work, ignore_errors=True)
print(f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
