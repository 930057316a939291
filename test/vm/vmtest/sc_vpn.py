# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 30: acceptance on the node kswap exists for (layout vpn, vpn.py). Every scenario is a
series of trials on one node, each from the kernel that runs to the other one (apply --deb
NEW, apply --kernel OLD, with --reboot), driven by vpn/actions.sh (act_trials); before each
trial the node settles (its clients shook hands, the proxy's users are connected, the container
runs) and the roaming phone shakes hands once.

  vpn-healthy     (suite vm) KS_VPN_TRIALS healthy trials in a row (default 1), the
                  acceptance configuration cycling through none (no [accept] at all),
                  docs/bootstrap.md's and docs/cloud-init-user-data.yaml's: every one pinned
                  (a false rollback fails it), each verdict's time measured
  vpn-broken      (suite vm) one trial per breakage of KS_VPN_BREAKS (comma-separated, default
                  nat), each breaking one thing on its trial boot only, with no configuration:
                  each health-failed (a pin is a false pin and fails it), the node back on the
                  kernel it came from with sshd answering through the forwarded port; per
                  breakage the time from the failure on the serial line to GRUB loading the
                  old kernel
  vpn-healthy-10  (vm-extra) vpn-healthy with ten trials (the issue's count)
  vpn-broken-all  (vm-extra) vpn-broken with every breakage: wg0 down, the NAT table gone, no
                  shaper, the container stopped, the proxy not on 443, forwarding off, cubic,
                  RPS off
  trixie-vpn-healthy  (vm-extra) vpn-healthy on Debian 13

The host side (watch_host) follows the serial log as it grows: the host time of each GRUB load
and of each breakage line, and sshd's banner read through the forwarded port whenever the guest
says SSHWAIT (it waits for that connection: sshd is socket-activated, the connection starts
ssh.service)."""
import os
import re
import socket
import time

from .common import Scenario, expect

BREAKS = ("wg", "nat", "shaper", "container", "proxy", "forward", "cc", "rps")
# What accept must find missing for each breakage (a pattern over its "  - ID" lines): a
# health-failed trial for another reason (a false rollback's cause) does not count as caught.
MISSED = {
    "wg": r"interface:wg0\b",
    "nat": r"nft-(table|chain):inet:nat\b",
    "shaper": r"qdisc:en\S*:cake\b",
    "container": r"listen:tcp6?:8080\b",
    "proxy": r"listen:tcp6?:443\b",
    "forward": r"sysctl:net\.ipv4\.ip_forward=1\b",
    "cc": r"sysctl:net\.ipv4\.tcp_congestion_control=bbr\b",
    "rps": r"rps|sysctl:net\.core\.rps_sock_flow_entries",
}
CONFS = ("none", "bootstrap", "cloudinit")
# A boot: the kernel, the node settling (at most 300 s), apply with its two update-grub runs
# (200 to 400 s under TCG on a busy machine), accept's wait (at most 300 s): bounds for hangs.
# At load 20 on 2 cores the first boot reached multi-user.target after 1643 s (dockerd's start
# 815 s of it) and 1800 s ended it before apply.
BOOT_TIMEOUT = 3600


def watch_host(hctx):
    """Host times of GRUB's loads and of the guest's BROKEN lines; sshd's banner whenever the
    guest says SSHWAIT. Records in hctx.data: loads [(t, kernel)], broken [(t, boot, what)],
    ssh [(boot, banner or None, seconds, error)]."""
    loads, broken, ssh = [], [], []
    hctx.data.update(loads=loads, broken=broken, ssh=ssh)
    pos, buf = 0, b""
    pat = re.compile(rb"Loading Linux (\S+) \.\.\.|KSWAP-VM (BROKEN|SSHWAIT) (\d+) (\S+)")
    while not hctx.stop.is_set():
        try:
            with open(hctx.log_path, "rb") as f:
                f.seek(pos)
                chunk = f.read()
        except OSError:
            chunk = b""
        if not chunk:
            time.sleep(0.5)
            continue
        pos += len(chunk)
        buf += chunk
        # whole lines only; a line still being written waits for the next round
        cut = buf.rfind(b"\n") + 1
        lines, buf = buf[:cut], buf[cut:]
        now = time.monotonic()
        for m in pat.finditer(lines):
            if m.group(1):
                loads.append((now, m.group(1).decode()))
            elif m.group(2) == b"BROKEN":
                broken.append((now, int(m.group(3)), m.group(4).decode()))
            elif hctx.port:
                ssh.append((int(m.group(3)),) + read_banner(hctx.port))


def read_banner(port, within=90):
    """sshd's first line through the forwarded port: (banner or None, seconds, last error).
    qemu accepts on the host side even when nothing listens in the guest (then it closes):
    only the banner proves sshd answered."""
    t0 = time.monotonic()
    err = None
    while time.monotonic() - t0 < within:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
                s.settimeout(15)
                data = s.recv(256)
            if data.startswith(b"SSH-"):
                return data.split(b"\r\n")[0].decode(errors="replace"), time.monotonic() - t0, None
            err = f"read {data[:40]!r}"
        except OSError as e:
            err = str(e)
        time.sleep(2)
    return None, time.monotonic() - t0, err


def trials(ctx):
    """One dict per trial the guest started (its TRIAL line), in order: k, spec, boot (where
    it armed), old (from), new (to), state (VPNSTATE before arming), journal and outcome of
    the verdict (the trial boot's JOURNAL line, else the next boot's), the trial boot, the
    boot after it, the trial boot's BOOTTIME."""
    out = []
    boots = ctx.boots
    for n in sorted(boots):
        m = re.match(r"(\d+) (\S+) from=(\S+)", boots[n].get("trial", ""))
        if not m:
            continue
        t = {"k": int(m.group(1)), "spec": m.group(2), "boot": n, "old": m.group(3),
             "state": boots[n].get("vpnstate", ""), "conf": boots[n].get("conf", "")}
        t["new"] = ctx.pf.new if t["old"] == ctx.pf.old else ctx.pf.old
        t["trial_boot"] = boots.get(n + 1, {})
        t["after"] = boots.get(n + 2, {})
        j = t["trial_boot"].get("journal") or t["after"].get("journal") or {}
        t["journal"] = j
        t["outcome"], t["jstate"] = j.get("outcome"), j.get("state")
        t["boottime"] = t["trial_boot"].get("boottime", "")
        t["apply"] = boots[n].get("apply")
        out.append(t)
    return out


def step_secs(journal, name):
    """Seconds of a step of the state journal (started to finished), or None."""
    for s in journal.get("steps") or []:
        if s.get("name") == name and s.get("started") and s.get("finished"):
            a = time.mktime(time.strptime(s["started"], "%Y-%m-%dT%H:%M:%SZ"))
            b = time.mktime(time.strptime(s["finished"], "%Y-%m-%dT%H:%M:%SZ"))
            return b - a
    return None


def boottime(line):
    """A BOOTTIME line as a dict of ints (ms since the kernel's start; ranges as (a, b))."""
    out = {}
    for k, v in re.findall(r"(\w+)=(\S+)", line):
        if re.fullmatch(r"\d+-\d+", v):
            out[k] = tuple(int(x) for x in v.split("-"))
        elif v.isdigit():
            out[k] = int(v)
        else:
            out[k] = v
    return out


def check_state(t):
    """The node ran as configured when the trial armed."""
    s = t["state"]
    expect(s.startswith("settled=yes"), f"trial {t['k']}: the node did not settle before arming: "
           f"{s[:600]}")
    wants = ["wg0=UP", "qdisc=cake", "inet:filter,", "inet:nat,", "fwd=1", "cc=bbr",
             "default_qdisc=fq", "panel=running", "users443=4 ", "ssh.socket=active", "failed=[]"]
    if t["k"] == 1:
        # nobody connected yet: sshd's service waits for its socket (after the host's first
        # probe it stays active, as after an operator's login)
        wants.append("ssh.service=inactive")
    for want in wants:
        expect(want in s, f"trial {t['k']}: before arming the node lacks {want!r}: {s[:800]}")
    expect(re.search(r"rps=0*3/32768/32768 ", s), f"trial {t['k']}: RPS before arming: {s[:800]}")
    for port in (443, 8080):
        expect(re.search(rf"listen{port}=[1-9]", s), f"trial {t['k']}: nothing on {port}: "
               f"{s[:800]}")
    # the clients: 1 and 2 talk (2 without keepalive), 3 never, 4 (the phone) right now
    # (the server's side of each peer: its own keepalive is off for all of them)
    for peer, rx in (("10.66.0.2/32", r"\d+:off"), ("10.66.0.3/32", r"\d+:off"),
                     ("10.66.0.4/32", r"never:off")):
        expect(re.search(re.escape(peer) + ":" + rx, s),
               f"trial {t['k']}: client {peer} before arming: {s[:800]}")


def verdict_line(ctx, t):
    bt = boottime(t["boottime"])
    acc = bt.get("accept")
    mu = bt.get("multi_user")
    parts = [f"trial {t['k']} ({t['spec']}): {t['old']} -> {t['new']}: {t['outcome']} "
             f"({t['jstate']})"]
    secs = step_secs(t["journal"], "accept")
    if secs is not None:
        parts.append(f"accept's verdict {secs:.0f} s after it started")
    if isinstance(acc, tuple) and acc[1]:
        parts.append(f"verdict {acc[1] / 1000:.0f} s after the kernel started")
    if isinstance(mu, int) and mu:
        parts.append(f"multi-user.target at {mu / 1000:.0f} s")
    reason = t["journal"].get("reason")
    if t["outcome"] != "trial-ok" and reason:
        parts.append(f"reason: {reason[:300]}")
    return "; ".join(parts)


def check_vpn(ctx):
    ts = trials(ctx)
    specs = [s for s in re.search(r"trials:(\S+)", ctx.sc.plan).group(1).split("+")]
    expect([t["spec"] for t in ts] == specs,
           f"trials started {[t['spec'] for t in ts]}, expected {specs}")
    for t in ts:
        expect(t["apply"] is None, f"trial {t['k']}: apply did not reboot: {str(t['apply'])[:600]}")
    false_rollbacks, false_pins, wrong = [], [], []
    for t in ts:
        check_state(t)
        if t["spec"].startswith("x-"):
            if t["outcome"] == "trial-ok":
                false_pins.append(verdict_line(ctx, t))
            elif t["outcome"] != "health-failed":
                wrong.append(verdict_line(ctx, t))
        elif t["outcome"] != "trial-ok" or t["jstate"] != "pinned":
            false_rollbacks.append(verdict_line(ctx, t))
    expect(not wrong, "trials with another outcome than health-failed: " + " | ".join(wrong))
    expect(not false_pins, f"{len(false_pins)} false pins: " + " | ".join(false_pins))
    expect(not false_rollbacks, f"{len(false_rollbacks)} false rollbacks of "
           f"{sum(1 for t in ts if not t['spec'].startswith('x-'))}: " + " | ".join(false_rollbacks))
    ssh = {b: (banner, secs, err) for b, banner, secs, err in ctx.host.get("ssh", [])}
    for t in ts:
        if not t["spec"].startswith("x-"):
            continue
        what = t["spec"][2:]
        broke = t["trial_boot"].get("broken", "")
        expect(broke.startswith(what + " at uptime"), f"trial {t['k']}: the trial boot did not say "
               f"it broke {what}: {broke!r}")
        after = t["after"]
        expect(after.get("kernel") == t["old"], f"trial {t['k']} ({what}): the boot after it ran "
               f"{after.get('kernel')}, expected {t['old']}")
        n_after = t["boot"] + 2
        banner, secs, err = ssh.get(n_after, (None, None, "the host never probed"))
        expect(banner, f"trial {t['k']} ({what}): sshd did not answer through the forwarded port "
               f"on boot {n_after}: {err}")
        missing = after.get("missing", "")
        expect(re.search(MISSED[what], missing), f"trial {t['k']} ({what}): accept did not find "
               f"the breakage missing ({MISSED[what]}); it missed: {missing or 'nothing'}; "
               f"reason: {t['journal'].get('reason')}")
        expect(after.get("sshseen", "").startswith("ssh.service=active"),
               f"trial {t['k']} ({what}): ssh.service after the probe: {after.get('sshseen')}")


def breakage_times(ctx):
    """(what, boot, seconds from the BROKEN line to GRUB's next load, kernel it loaded)."""
    loads = ctx.host.get("loads", [])
    out = []
    for t_b, boot, what in ctx.host.get("broken", []):
        nxt = [(t, k) for t, k in loads if t > t_b]
        out.append((what, boot, nxt[0][0] - t_b if nxt else None, nxt[0][1] if nxt else None))
    return out


def measure_vpn(ctx):
    out = [verdict_line(ctx, t) for t in trials(ctx)]
    for what, boot, secs, kernel in breakage_times(ctx):
        out.append(f"breakage {what} (boot {boot}): GRUB loaded {kernel} "
                   f"{'?' if secs is None else f'{secs:.0f}'} s after the failure was on the "
                   "serial line (host time; the reboot and qemu's cold restart included)")
    for b, banner, secs, err in ctx.host.get("ssh", []):
        out.append(f"boot {b}: sshd answered in {secs:.1f} s: {banner or err}")
    for n in sorted(ctx.boots):
        bt = boottime(ctx.boots[n].get("boottime", ""))
        if bt.get("multi_user"):
            d = bt.get("docker") or (0, 0)
            out.append(f"boot {n} ({bt.get('kernel')}): multi-user.target {bt['multi_user'] / 1000:.1f} s "
                       f"after the kernel started, network-online {bt.get('online', 0) / 1000:.1f} s, "
                       f"docker.service {(d[1] - d[0]) / 1000:.1f} s")
        if ctx.boots[n].get("blame"):
            out.append(f"boot {n} slowest starts (ms): {ctx.boots[n]['blame']}")
    return out


def plan(specs):
    return "*=trials:" + "+".join(specs) + "\n"


def Vpn(specs, timeout):  # noqa: N802 (a Scenario of this family)
    return Scenario("vpn", plan(specs), None, None, check=check_vpn, measure=measure_vpn,
                    nic=True, host=watch_host, timeout=timeout, boot_timeout=BOOT_TIMEOUT)


def healthy_specs(n):
    """n healthy trials, the acceptance configuration cycling through CONFS."""
    return [CONFS[i % len(CONFS)] for i in range(n)]


def broken_specs(names):
    unknown = [b for b in names if b not in BREAKS]
    if unknown:
        raise ValueError(f"KS_VPN_BREAKS: unknown breakage {unknown[0]!r}; known: "
                         f"{' '.join(BREAKS)}")
    return ["x-" + b for b in names]


# CI's sizes unless the environment says otherwise (a trial is one to three boots of 5-15 min
# under TCG: the bound grows with the count)
N_HEALTHY = int(os.environ.get("KS_VPN_TRIALS", "1"))
CI_BREAKS = [b for b in os.environ.get("KS_VPN_BREAKS", "nat").split(",") if b]
SCENARIOS = {
    "vpn-healthy": Vpn(healthy_specs(N_HEALTHY), 1800 + N_HEALTHY * 1800),
    "vpn-broken": Vpn(broken_specs(CI_BREAKS), 1800 + len(CI_BREAKS) * 3600),
    "vpn-healthy-10": Vpn(healthy_specs(10), 1800 + 10 * 1800),
    "vpn-broken-all": Vpn(broken_specs(BREAKS), 1800 + len(BREAKS) * 3600),
}
