# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 12's stuck trials (suite vm-extra): a trial stuck in emergency mode, behind a start job
that never ends, a vmlinuz GRUB cannot load, a hang only qemu's i6300esb ends; each back on OLD
by itself, with no reboot loop, and accept there names what happened."""
import re

from .boot import trial_segment
from .common import Scenario, expect

# The watchdog scenario's trial saying it hangs now (the driver's "hang").
HANG_LINE = "KSWAP-VM HANG at uptime"
# Issue 30, item 5: sulogin's words as emergency mode starts (printed plain, no colour).
EMERGENCY_LINE = "You are in emergency mode"


def measure_stuck(ctx):
    """Issue 12's measures of a stuck trial (host time, to the second): from GRUB loading NEW
    (the trial kernel's start, or GRUB's failed attempt) to GRUB loading OLD again, and for
    the watchdog scenario from the hang to that load."""
    pf, text, grub, seen = ctx.pf, ctx.text, ctx.grub, ctx.seen
    marks = seen.get("marks") or []
    out = []
    i = grub.index(pf.new) if pf.new in grub else -1
    # marks[0] is qemu's start, marks[k] the k-th load
    if 0 <= i and i + 2 < len(marks) - 1 and i + 1 < len(grub) and grub[i + 1] == pf.old:
        out.append(f"GRUB loaded the old kernel {marks[i + 2] - marks[i + 1]:.0f} s after it "
                   "loaded the trial kernel (host time; with a reboot between them qemu's cold "
                   "restart and firmware included)")
    if HANG_LINE in seen and i >= 0 and i + 2 < len(marks) - 1:
        m = re.search(r"KSWAP-VM HANG at uptime (\d+)", text)
        out.append(f"the trial hung at uptime {m.group(1) if m else '?'} s; GRUB loaded the old "
                   f"kernel {marks[i + 2] - seen[HANG_LINE][0]:.0f} s later")
    if EMERGENCY_LINE in seen and i >= 0 and i + 2 < len(marks) - 1:
        m = re.search(r"kswap trial stage: returned (\d+)", text)
        out.append(f"emergency mode on the trial boot; it rebooted itself at uptime "
                   f"{m.group(1) if m else '?'} s; GRUB loaded the old kernel "
                   f"{marks[i + 2] - seen[EMERGENCY_LINE][0]:.0f} s after emergency mode showed")
    return out

def serial_stuck(ctx):
    """The serial line's side of issue 12's stuck trials: how the trial ended."""
    pf, name, text = ctx.pf, ctx.name, ctx.text
    seg = trial_segment(pf, text)
    expect(seg, f"no GRUB load of {pf.old} after {pf.new} on the serial line")
    if name == "trial-bad-kernel":
        # GRUB's own words (2.06): the load failed, then it went on to entry 0 by itself.
        expect("invalid magic number" in seg or "error:" in seg,
               f"GRUB did not say why it could not load {pf.new}: {seg[:600]!r}")
        # GRUB 2.06 prints "Press any key to continue..." and waits (grub_wait_after_message,
        # a bounded wait), then takes the fallback entry kswap set: no key needed.
        expect("Falling back to `kswap way back" in seg,
               f"GRUB did not fall back to kswap's way-back entry: {seg[:600]!r}")
        expect("Linux version" not in seg, "a kernel started between the two GRUB loads")
        return
    expect("Kernel panic" not in seg, "the trial kernel panicked (it must hang or stall)")
    if name == "trial-emergency":
        # systemd's own words on the console: the failed mount, emergency mode, the shell
        # (sulogin, waiting on the console: the root account is locked, nobody answers)
        # (systemd's status lines: colours stripped, unit names cut with "…" at 80 columns)
        plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", seg)
        for want in (rf"KSWAP-VM EARLY \d KERNEL {re.escape(pf.new)}",
                     r"Dependency failed for mnt-(kswapdata\.mount|…)",
                     r"Dependency failed for .*Local File Systems",
                     r"Reached target emergency\.target", r"You are in emergency mode",
                     r"kswap trial stage: returned \d+ emergency mode"):
            expect(re.search(want, plain), f"the trial boot's console lacks {want!r}")
    if name == "trial-watchdog":
        m = re.search(r"KSWAP-VM HANG at uptime (\d+) watchdog=(\S*) state=(\S*) "
                      r"timeout=(\S*) deadline=kswap\.deadline=(\d+)", seg)
        expect(m, "the trial did not say it hangs now (PID 1 holding the watchdog)")
        expect("i6300ESB" in m.group(2) and m.group(3) == "active",
               f"the trial's watchdog is {m.group(2)} {m.group(3)}, expected the i6300ESB, active")
        expect(m.group(5) == "300", f"the trial's deadline is {m.group(5)}, expected 300")
        # Nobody in the guest rebooted it: no "reboot:" of the kernel (the deadline's
        # reboot-force, a panic's reboot) after the hang; the next boot came from the reset.
        after = seg[m.end():]
        expect("reboot: " not in after and "Rebooting" not in after,
               f"the guest rebooted itself after the hang: {after[-800:]!r}")

def check_stuck(ctx):
    """Issue 12 (a)-(d): the trial got stuck (or never started), came back to OLD by itself,
    and accept there names what happened."""
    pf, name, boots, state, outcome, last = (ctx.pf, ctx.name, ctx.boots, ctx.state,
                                             ctx.outcome, ctx.last)
    a1 = boots[1]
    expect("wait-expired" not in a1, "boot 1 did not reboot")
    reason = ((last.get("status") or {}).get("journal") or {}).get("reason") or ""
    fc = last["status"]["grub"]["forecast"]
    expect([b.get("kernel") for b in fc][:3] == [pf.old] * 3, f"forecast {fc}")
    expect(state != "pinned", f"journal {state} {outcome}")
    if name == "trial-bad-kernel":
        expect(a1.get("apply_rc") == 0, f"apply exited {a1.get('apply_rc')}")
        expect("00 00 00 00" in a1.get("badkernel", ""), f"vmlinuz not damaged: "
               f"{a1.get('badkernel')}")
        # NEW never started: nothing of it in the journal, no stage marks
        expect(outcome == "fell-back", f"journal {state} {outcome}")
        expect("GRUB could not load" in reason, f"journal reason: {reason}")
        return
    expect(a1.get("apply_rc") in (None, 0), f"apply exited {a1.get('apply_rc')}")
    back = max(boots)  # OLD again (the emergency trial's boot is not counted: read-only root)
    if name != "trial-emergency":
        expect(boots[2].get("kernel") == pf.new and "status" not in boots[2],
               "the trial boot got to the scenario's report (after multi-user.target and accept)")
    for n in (1, back):
        g = boots[n].get("guard", "")
        expect(g.startswith("marker=0 deadline=not-found"), f"boot {n} has trial protections: {g}")
    stage = {"trial-emergency": "emergency", "trial-stuck-job": "userspace",
             "trial-watchdog": "userspace"}[name]
    if name == "trial-watchdog":
        # The i6300esb reset the hung trial: no deadline mark (its unit never ran out), so
        # accept cannot tell a reset from a panic or a power cut: fell-back, with the stage.
        expect(outcome == "fell-back", f"journal {state} {outcome}")
        expect("deadline" not in reason, f"journal reason: {reason}")
    elif name == "trial-emergency":
        # issue 30 (5): it sent itself back at once, its 300 s deadline did not
        expect(outcome == "trial-hung", f"journal {state} {outcome}")
        expect("stuck in emergency mode and rebooted itself" in reason and "deadline" in reason
               and "missed its boot deadline" not in reason, f"journal reason: {reason}")
    else:
        expect(outcome == "trial-hung", f"journal {state} {outcome}")
        expect("deadline" in reason, f"journal reason: {reason}")
    expect(f"furthest stage: {stage};" in reason, f"journal reason (stage {stage}): {reason}")

def emergency_user(ctx, want_user):
    """trial-emergency: the trial's root was writable in emergency mode, its boot counted."""
    if ctx.boots.get(3):
        return [ctx.pf.old, ctx.pf.new, ctx.pf.old]
    return want_user


def Stuck(plan, grub, user, **kw):  # noqa: N802 (a Scenario of this family)
    return Scenario("ext4", plan, grub, user, check=check_stuck, serial=serial_stuck,
                    measure=measure_stuck, watch=(HANG_LINE, EMERGENCY_LINE), **kw)


SCENARIOS = {
    # (a) The trial mounts a disk that is not there (a generator on the trial boot only): its
    # device times out, local-fs.target fails, emergency mode, sulogin waits; issue 30 (5):
    # kswap-trial-return.service marks "returned" and reboots it at once into OLD, long before
    # its 300 s deadline: trial-hung, furthest stage emergency, no deadline in the reason.
    # Whether the trial's root file system is writable in emergency mode depends on the race
    # between systemd-remount-fs and the device's 5 s (its job goes with the emergency
    # transaction when it has not run yet); the return unit makes it writable for its marks,
    # but the VM's own count of boots may be lost before: the OLD boot after it is boot 2 again
    # (userspace [OLD, OLD], emergency_user). serial_stuck asserts the trial's EARLY line.
    "trial-emergency": Stuck("1=deadline300,emergency,apply-reboot,wait\n2=poweroff\n3=poweroff",
                             ["OLD", "NEW", "OLD"], ["OLD", "OLD"], user_fn=emergency_user),
    # (b) A start job that never ends holds multi-user.target (and accept, ordered after it):
    # the deadline reboots into OLD: trial-hung, furthest stage userspace.
    "trial-stuck-job": Stuck("1=deadline,stuckjob,apply-reboot,wait\n3=poweroff",
                             ["OLD", "NEW", "OLD"], ["OLD", "NEW", "OLD"]),
    # (c) NEW's vmlinuz damaged after apply returned, before the reboot: GRUB cannot load it
    # and starts OLD by itself in the same boot (fallback, no key); NEW never reaches
    # userspace.
    "trial-bad-kernel": Stuck("1=apply,badkernel,reboot\n2=poweroff",
                              ["OLD", "NEW", "OLD"], ["OLD", "OLD"]),
    # (d) qemu's i6300esb on every boot (so the trial arms the device, not softdog); the trial
    # hangs without a panic once PID 1 holds the watchdog, with a 300 s deadline the reset must
    # come well before; only the watchdog brings it back.
    "trial-watchdog": Stuck("1=deadline300,hang,apply-reboot,wait\n3=poweroff",
                            ["OLD", "NEW", "OLD"], ["OLD", "NEW", "OLD"],
                            qemu=["-device", "i6300esb", "-action", "watchdog=reset"]),
}
