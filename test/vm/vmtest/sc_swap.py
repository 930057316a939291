# SPDX-License-Identifier: GPL-2.0-or-later
"""The swap itself (suite vm): happy (apply --kernel NEW --yes --reboot, trial, accept pins, NEW
again), happy-deb (the same with apply --deb NEW.deb, NEW's own package installed already),
health (default acceptance, no configured check: kswap check passes on OLD; a service that ran
on OLD fails on NEW: accept reboots once, OLD, health-failed), panic (NEW's initrd replaced after
arming by the same initrd without virtio_blk: the initramfs waits 30 s for the root disk,
panics, panic=5 reboots, GRUB starts OLD, fell-back), btrfs (/boot on btrfs: apply refuses
before arming, OLD keeps booting), accept-hang (accept hangs on the trial: its deadline reboots
into OLD, trial-hung). health, panic and btrfs name NEW with --deb (plan line "src=deb"); happy
uses --kernel."""
import re

from .common import Scenario, expect
from .boot import journal

# The health scenario's workload saying it fails on the trial kernel (the driver's "app").
FAILURE_LINE = "KSWAP-VM APP refusing"


def check_happy(ctx):
    boots, last, a1, NEW = ctx.boots, ctx.last, ctx.boots[1], ctx.pf.new  # noqa: N806
    expect(a1.get("apply_rc") in (None, 0), f"apply exited {a1.get('apply_rc')}")
    expect("wait-expired" not in a1, "apply --reboot did not reboot")
    expect(journal(boots[2].get("status")) == ("pinned", "trial-ok"),
           f"trial boot: journal {journal(boots[2].get('status'))}")
    expect((ctx.state, ctx.outcome) == ("pinned", "trial-ok"),
           f"journal {ctx.state} {ctx.outcome}")
    fc = last["status"]["grub"]["forecast"]
    kernels = [b.get("kernel") for b in fc]
    expect(kernels[:3] == [NEW, NEW, NEW], f"forecast after pin: {kernels}")
    # Issue 12: the old kernel's boot and the pinned kernel's boot carry none of the trial's
    # protections (only boot 2, the trial, does).
    for n, want in ((1, "marker=0 deadline=not-found"), (2, "marker=1 deadline=loaded"),
                    (3, "marker=0 deadline=not-found")):
        g = boots[n].get("guard", "")
        expect(g.startswith(want), f"boot {n}: protections '{g}', expected '{want}'")


def check_health(ctx):
    boots, last, a1, OLD = ctx.boots, ctx.last, ctx.boots[1], ctx.pf.old  # noqa: N806
    state, outcome = ctx.state, ctx.outcome
    # kswap check on the old kernel: the whole checklist (the floor, the snapshot's items;
    # no configured check) passes, exit 0
    chk = a1.get("check")
    bad = [x.get("id") for x in (chk.get("checks") or []) if x.get("required") and
           x.get("status") != "pass"] if isinstance(chk, dict) else None
    expect(a1.get("check_rc") == 0 and isinstance(chk, dict) and chk.get("passed") is True
           and chk.get("kernel") == OLD and len(chk.get("checks") or []) > 10 and bad == [],
           f"kswap check on {OLD}: exit {a1.get('check_rc')}, failing {bad}, "
           f"{str(chk)[:600]}")
    expect(a1.get("apply_rc") in (None, 0), f"apply exited {a1.get('apply_rc')}")
    expect("wait-expired" not in boots[2], "accept did not reboot after the failed check")
    expect(outcome == "health-failed", f"journal {state} {outcome}")
    # default acceptance: the unit that ran on OLD (an item of the snapshot; no configured
    # check names it) did not come back
    j = (last.get("status") or {}).get("journal") or {}
    reason = j.get("reason") or ""
    items = (j.get("running") or {}).get("items") or []
    expect(reason.startswith("service:vm-app.service") and "service:vm-app.service" in items,
           f"the snapshot's vm-app.service named: reason '{reason}'")
    expect(state != "pinned", f"journal {state}")
    fc = last["status"]["grub"]["forecast"]
    expect([b.get("kernel") for b in fc][:3] == [OLD, OLD, OLD], f"forecast {fc}")


def measure_health(ctx):
    """Issue 13's measure: how long a broken trial keeps the node from its old kernel."""
    if FAILURE_LINE not in ctx.seen:
        return []
    t_fail, n_fail = ctx.seen[FAILURE_LINE]
    nxt = [m for m in ctx.seen["marks"][n_fail + 1:-1] if m > t_fail]
    up = re.search(r"APP refusing to start on \S+ at uptime (\d+)", ctx.text)
    if not nxt:
        return []
    return [f"the service failed on the trial kernel {up.group(1) if up else '?'} s after its "
            f"start; GRUB loaded the old kernel {nxt[0] - t_fail:.0f} s after the failure (host "
            "time, qemu's cold restart and firmware included)"]


def check_panic(ctx):
    last, a1, OLD = ctx.last, ctx.boots[1], ctx.pf.old  # noqa: N806
    expect(a1.get("apply_rc") == 0, f"apply exited {a1.get('apply_rc')}")
    expect(ctx.outcome == "fell-back", f"journal {ctx.state} {ctx.outcome}")
    # NEW died in its initramfs: journald's previous boot is the arming boot, and accept
    # must not present that boot's warnings as the trial's.
    reason = ((last.get("status") or {}).get("journal") or {}).get("reason") or ""
    expect("left nothing in the system journal" in reason, f"journal reason: {reason}")
    fc = last["status"]["grub"]["forecast"]
    expect([b.get("kernel") for b in fc][:3] == [OLD, OLD, OLD], f"forecast {fc}")


def serial_panic(ctx):
    # initramfs-tools' panic() with panic=5, after GRUB loaded NEW
    at = ctx.text.find(f"Loading Linux {ctx.pf.new} ")
    expect(at >= 0 and "Rebooting automatically due to panic= boot argument" in ctx.text[at:],
           "NEW's initramfs did not panic and reboot on the serial line")


def check_accept_hang(ctx):
    boots, last, a1, OLD = ctx.boots, ctx.last, ctx.boots[1], ctx.pf.old  # noqa: N806
    expect(a1.get("apply_rc") in (None, 0), f"apply exited {a1.get('apply_rc')}")
    expect("wait-expired" not in a1, "apply --reboot did not reboot")
    expect("status" not in boots[2], "the trial boot got past accept (it should hang there)")
    expect(ctx.outcome == "trial-hung", f"journal {ctx.state} {ctx.outcome}")
    reason = ((last.get("status") or {}).get("journal") or {}).get("reason") or ""
    expect("deadline" in reason and "furthest stage" in reason, f"journal reason: {reason}")
    for n in (1, 3):
        g = boots[n].get("guard", "")
        expect(g.startswith("marker=0 deadline=not-found"), f"boot {n} has trial protections: {g}")
    fc = last["status"]["grub"]["forecast"]
    expect([b.get("kernel") for b in fc][:3] == [OLD, OLD, OLD], f"forecast {fc}")


def check_btrfs(ctx):
    a1 = ctx.boots[1]
    expect(a1.get("apply_rc") == 2, f"apply exited {a1.get('apply_rc')}, expected 2 (refused)")
    ids = [f.get("id") for f in (a1.get("apply") or {}).get("findings", [])
           if f.get("severity") == "block"] if isinstance(a1.get("apply"), dict) else []
    expect("grub.env-unwritable" in ids, f"blocking findings {ids}")
    expect(ctx.state not in ("armed", "trial-booted", "pinned"),
           f"journal {ctx.state} {ctx.outcome}")


SCENARIOS = {
    "happy": Scenario("ext4", "1=apply-reboot,wait\n2=reboot\n3=poweroff",
                      ["OLD", "NEW", "NEW"], ["OLD", "NEW", "NEW"], check=check_happy),
    # The same with apply --deb (NEW's own package, installed already: apt has nothing to do).
    "happy-deb": Scenario("ext4", "src=deb\n1=apply-reboot,wait\n2=reboot\n3=poweroff",
                          ["OLD", "NEW", "NEW"], ["OLD", "NEW", "NEW"], check=check_happy),
    # Issue 13's default acceptance: no configured check (defaults), kswap check passes on OLD
    # (check), then the workload that ran on OLD fails on NEW.
    "health": Scenario("ext4", "src=deb\n1=defaults,check,break,apply-reboot,wait\n2=wait\n"
                       "3=poweroff", ["OLD", "NEW", "OLD"], ["OLD", "NEW", "OLD"],
                       check=check_health, measure=measure_health, watch=(FAILURE_LINE,)),
    "panic": Scenario("ext4", "src=deb\n1=apply,badinitrd,reboot\n2=poweroff",
                      ["OLD", "NEW", "OLD"], ["OLD", "OLD"], check=check_panic,
                      serial=serial_panic),
    "btrfs": Scenario("btrfs", "src=deb\n1=apply-reboot,reboot\n2=poweroff", ["OLD", "OLD"],
                      ["OLD", "OLD"], check=check_btrfs),
    # Issue 12 (e) with the check of every boot but the trial's: accept hangs on the trial boot,
    # its deadline reboots it by force into OLD, accept there records trial-hung; neither boot
    # 1 nor boot 3 (OLD) carries the marker or the deadline unit.
    "accept-hang": Scenario("ext4", "src=deb\n1=hangaccept,apply-reboot,wait\n3=poweroff",
                            ["OLD", "NEW", "OLD"], ["OLD", "NEW", "OLD"],
                            check=check_accept_hang),
}
