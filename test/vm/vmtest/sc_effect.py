# SPDX-License-Identifier: GPL-2.0-or-later
"""The swap's effect on TCP in a whole VM (suite vm-extra; issue 33): a Debian 12 node sends
bounded traffic to a network namespace the test makes inside the VM, over a veth pair whose
sending side is a netem link (20 ms delay, 1 % loss, 10 Mbit/s), once on cubic and once on bbr,
and kswap measures it from what runs.

Scenario effect, layout effect (layer 1 plus iproute2 and iperf3, cached like the fleet tree):
  boot 1 (OLD)  iperf3 with 4 streams on cubic (-C cubic: the node's default stays bbr) for 40 s;
                30 s in, kswap report --connections inside the VM; then 4 slow cubic streams
                (50 kbit/s, 240 s at most) while apply --reboot runs, so that the arm step's
                baseline has the cubic connections and the counters of their retransmissions;
  boot 2 (NEW)  accept pins (no connection yet: congestion-control is wanted), then iperf3 on
                the node's default (bbr from its sysctl.d), report --connections 30 s in,
                kswap report (before: OLD's cubic traffic from its boot to arming; after: NEW's
                bbr traffic from the pin to now) and report --record; power off.
The connections and the counters are the VM's own (its init namespace sends); the peer's
namespace only answers. Every line is printed on the serial console as KSWAP-VM EFFECT-*."""
import json
import re
import time

import vmfleet

from .common import Scenario, expect, log, skip

PACKAGES = ["iproute2", "iperf3"]
# Bounds of the traffic: 4 streams, 240 s at most a run, 10 Mbit/s on the link.
STREAMS, SECONDS = 4, 240

ACTIONS = r"""# kswap VM test, layout effect (test/vm/vmtest/sc_effect.py): bounded traffic from this node
# to a network namespace the test makes, over a netem link; kswap report's figures.
effect_link() {
  ip netns list 2>/dev/null | grep -q '^kse-peer' && return 0
  ip netns add kse-peer
  ip link add veth-kse0 type veth peer name veth-kse1 netns kse-peer
  ip addr add 10.215.0.1/24 dev veth-kse0
  ip link set veth-kse0 up
  ip -n kse-peer link set lo up
  ip -n kse-peer addr add 10.215.0.2/24 dev veth-kse1
  ip -n kse-peer link set veth-kse1 up
  tc qdisc add dev veth-kse0 root netem delay 20ms loss 1% rate 10mbit limit 1000 > $D/netem.out 2>&1
  say "EFFECT-LINK $n rc=$? $(tc qdisc show dev veth-kse0 | head -n 1) $(head -c 300 $D/netem.out)"
}
# effect:CC: iperf3 to the peer with CC (default: the node's own): @STREAMS@ streams as fast as the
# link goes for 40 s (the counters' traffic; kswap report --connections 30 s in), then
# @STREAMS@ slow ones (50 kbit/s each) for @SECONDS@ s at most in the background, so that apply's
# arm step sees the connections without the emulated machine spending itself on packets.
act_effect() {
  effect_link
  cc="-C $1"; [ "$1" = default ] && cc=
  ip netns exec kse-peer iperf3 -s -1 -B 10.215.0.2 > $D/iperf-server.out 2>&1 &
  sleep 1
  timeout 60 iperf3 -c 10.215.0.2 -P @STREAMS@ -t 40 $cc > $D/iperf.out 2>&1 &
  sleep 30
  kswap --json report --connections > $D/effect.json 2> /dev/null
  say "EFFECT-CONNS $n $1 rc=$? $(tr -d '\n' < $D/effect.json)"
  wait
  ip netns exec kse-peer iperf3 -s -1 -B 10.215.0.2 > $D/iperf-server2.out 2>&1 &
  sleep 1
  timeout $((@SECONDS@ + 20)) iperf3 -c 10.215.0.2 -P @STREAMS@ -t @SECONDS@ -b 50k $cc > $D/iperf2.out 2>&1 &
  sleep 5
}
act_effectreport() {
  kswap --json report > $D/report.json 2> /dev/null
  say "EFFECT-REPORT $n rc=$? $(tr -d '\n' < $D/report.json)"
  kswap report > $D/report.txt 2>&1
  say "EFFECT-TEXT $n $(tr '\n' '|' < $D/report.txt)"
}
act_effectrecord() {
  kswap --json report --record > $D/record.json 2> /dev/null
  say "EFFECT-RECORD $n rc=$? $(tr -d '\n' < $D/record.json)"
}
""".replace("@SECONDS@", str(SECONDS)).replace("@STREAMS@", str(STREAMS))


# The link is made in each boot by the driver, after accept, as an operator makes one by hand:
# what it holds is no item of what ran (the interface, veth*, is one of kswap's own ignored
# names; its netem qdisc and the two modules the link holds at arming, sch_netem and veth, are
# not). A node's own shaper comes from a unit and comes back on the trial boot (layout vpn).
KSWAP_DROPIN = "[accept]\nignore = qdisc:veth-kse* module:sch_netem module:veth\n"


def files(pf):
    """The layout's own driver actions (driver.sh sources them) and kswap.conf drop-in."""
    return {"usr/local/lib/kswap-vm/actions.sh": (0o644, ACTIONS),
            "etc/kswap/kswap.conf.d/50-vm-effect.conf": (0o644, KSWAP_DROPIN)}


def tree(cache, pf, base_tar, base_key):
    """Layer 1 plus PACKAGES, as the fleet tree is made (test/vm/vmfleet.py): (tar, key)."""
    import hashlib
    import os
    import subprocess
    import tempfile

    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    for part in (base_key, *PACKAGES):
        h.update(part.encode() + b"\0")
    key = h.hexdigest()[:16]
    tar = os.path.join(cache, f"rootfs-effect-{pf.suite}-{key}.tar")
    if os.path.exists(tar):
        return tar, key
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        subprocess.run(["tar", "-C", root, "-xpf", base_tar], check=True)
        try:
            vmfleet.install(root, PACKAGES, "the effect tree")
        except vmfleet.LayerError as e:
            skip(str(e))
        out = os.path.join(tmp, "rootfs.tar")
        subprocess.run(["tar", "-C", root, "--numeric-owner", "--xattrs", "-cf", out, "."],
                       check=True)
        os.rename(out, tar)
    for n in os.listdir(cache):
        if n.startswith(f"rootfs-effect-{pf.suite}-") and n != os.path.basename(tar):
            os.unlink(os.path.join(cache, n))
    log(f"the effect tree ({' '.join(PACKAGES)}): {time.monotonic() - t0:.0f} s")
    return tar, key


def lines(text, kind):
    """(boot, rest) of each KSWAP-VM EFFECT-KIND line."""
    return [(int(m.group(1)), m.group(2).strip())
            for m in re.finditer(rf"KSWAP-VM EFFECT-{kind} (\d+) (.*)", text)]


def doc(rest):
    m = re.match(r"(?:\S+ )?rc=(\d+) (.*)", rest)
    if not m:
        return None, None
    try:
        return int(m.group(1)), json.loads(m.group(2))
    except ValueError:
        return int(m.group(1)), None


def conns_of(d):
    return [c for c in (d or {}).get("connections") or [] if not c.get("loopback")]


def check_effect(ctx):
    text, OLD, NEW = ctx.text, ctx.pf.old, ctx.pf.new  # noqa: N806
    link = lines(text, "LINK")
    expect(link and all("netem" in r and "rc=0" in r for _, r in link),
           f"the netem link: {link}")
    runs = {}
    for n, rest in lines(text, "CONNS"):
        rc, d = doc(rest)
        cc = rest.split()[0]
        runs[cc] = (n, rc, d)
    expect(set(runs) == {"cubic", "default"}, f"report --connections runs: {sorted(runs)}")
    for cc, want, kernel in (("cubic", "cubic", OLD), ("default", "bbr", NEW)):
        n, rc, d = runs.get(cc, (None, None, None))
        cs = conns_of(d)
        data = [c for c in cs if c.get("remote", "").startswith("10.215.0.2:")
                and (c.get("segs_out") or 0) > 100]
        expect(rc == 0 and d and d["now"]["kernel"] == kernel,
               f"{cc}: report on {kernel} (boot {n}): rc {rc}")
        expect(len(data) >= STREAMS and all(c["congestion_control"] == want for c in data),
               f"{cc}: the {STREAMS} streams run {want}: "
               f"{[(c['remote'], c['congestion_control'], c['segs_out']) for c in cs]}")
        expect(d and (d["now"].get("segments_retransmitted") or 0) > 0,
               f"{cc}: retransmissions on the lossy link: {d and d['now']}")
    reps = lines(text, "REPORT")
    expect(len(reps) == 1, f"one kswap report: {len(reps)}")
    rc, rep = doc(reps[0][1]) if reps else (None, None)
    expect(rc == 0 and rep, f"kswap report: rc {rc}")
    before, after = (rep or {}).get("before") or {}, (rep or {}).get("after") or {}
    expect(before.get("kernel") == OLD and after.get("kernel") == NEW,
           f"before on {before.get('kernel')}, after on {after.get('kernel')}")
    expect((before.get("congestion_control") or {}).get("cubic", 0) >= STREAMS,
           f"the baseline at arming saw the cubic streams: {before.get('congestion_control')}")
    expect((after.get("congestion_control") or {}).get("bbr", 0) >= STREAMS,
           f"after: the streams on bbr: {after.get('congestion_control')}")
    expect(after.get("window", {}).get("since_boot") is False,
           f"after: from the pin to now: {after.get('window')}")
    expect(before.get("retransmit_ratio") and after.get("retransmit_ratio") and
           before["retransmit_ratio"] != after["retransmit_ratio"],
           f"the ratios differ: before {before.get('retransmit_ratio')}, after "
           f"{after.get('retransmit_ratio')}")
    expect(((rep or {}).get("change") or {}).get("retransmit_ratio_percent") is not None,
           f"the change in percent: {(rep or {}).get('change')}")
    recs = lines(text, "RECORD")
    rc, rec = doc(recs[0][1]) if recs else (None, None)
    expect(rc == 0 and rec and rec.get("recorded") is True, f"report --record: rc {rc}")
    ctx.effect = (before, after, (rep or {}).get("change"), runs)


def measure_effect(ctx):
    before, after, change, runs = getattr(ctx, "effect", ({}, {}, {}, {}))
    out = []
    for cc in ("cubic", "default"):
        _, _, d = runs.get(cc, (None, None, None))
        now = (d or {}).get("now") or {}
        ratios = [round(c["retransmit_ratio"], 4) for c in conns_of(d)
                  if c.get("retransmit_ratio") is not None and (c.get("segs_out") or 0) > 100]
        out.append(f"{cc} on {now.get('kernel')}: {now.get('segments_retransmitted')} of "
                   f"{now.get('segments_sent')} segments retransmitted since the boot "
                   f"({(now.get('retransmit_ratio') or 0) * 100:.2f} %), per stream {ratios}, "
                   f"median RTT {now.get('rtt_median_us')} us")
    out.append(f"kswap report: before {before.get('kernel')} "
               f"{(before.get('retransmit_ratio') or 0) * 100:.2f} % of "
               f"{before.get('segments_sent')} (mix {before.get('congestion_control')}), after "
               f"{after.get('kernel')} {(after.get('retransmit_ratio') or 0) * 100:.2f} % of "
               f"{after.get('segments_sent')} (mix {after.get('congestion_control')}), change "
               f"{(change or {}).get('retransmit_ratio_percent')} %")
    return out


SCENARIOS = {
    # Under TCG on a loaded host a boot with apply takes many minutes: bounds above common's.
    "effect": Scenario("effect", "src=deb\n1=effect:cubic,apply-reboot,wait\n"
                       "2=effect:default,effectreport,effectrecord,poweroff",
                       ["OLD", "NEW"], ["OLD", "NEW"], check=check_effect,
                       measure=measure_effect, timeout=5400, boot_timeout=1800),
}
