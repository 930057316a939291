# SPDX-License-Identifier: GPL-2.0-or-later
"""Issue 18: installs that go wrong (suite vm-extra). boot-full (layout smallboot: /boot its own
160 MiB ext4): /boot full in the middle of a real apt install; dpkg-lock: a real apt-get
holding dpkg's lock."""
import json
import re

from .common import Scenario, expect


def bootinfo(line):
    """A BOOTINFO line as a dict (avail, journal, dropin, status, audit, files; env: the rest)."""
    head, _, env = line.partition(" env=")
    info = dict(w.split("=", 1) for w in head.split() if "=" in w)
    info["env"] = env
    return info


def apply_error(doc):
    return (doc or {}).get("error") or "" if isinstance(doc, dict) else str(doc or "")


def check_boot_full(ctx):
    """Issue 18 (a): /boot ran out of space in the install's postinst; nothing armed, OLD boots,
    the half-configured package named with its cleanup, and that cleanup works."""
    pf, boots, state, outcome = ctx.pf, ctx.boots, ctx.state, ctx.outcome
    NEW = pf.new  # noqa: N806
    b1, b2 = boots[1], boots[2]
    m = re.match(r"free=(\d+) bloat=(\d+)", b1.get("bootfull", ""))
    expect(m and int(m.group(1)) >= 120, f"/boot before apply: {b1.get('bootfull')} (plan wants "
           "120 MiB free: the fault must come after its check)")
    applies = b1.get("applies") or []
    expect(len(applies) == 1, f"boot 1: {len(applies)} apply runs")
    rc, doc = applies[0]
    err = apply_error(doc)
    expect(rc == 1 and isinstance(doc, dict) and doc.get("result") == "failed",
           f"apply exited {rc} ({(doc or {}).get('result') if isinstance(doc, dict) else doc!r:.300}), "
           "expected 1, failed")
    # dpkg's and mkinitramfs's own words, and kswap's: what dpkg left, what cleans it up
    for want in ("nothing is armed", f"; dpkg left linux-image-{NEW} (half-configured",
                 "free space in /boot", "'dpkg --configure -a'", "'kswap rollback --purge'"):
        expect(want in err, f"apply's error lacks {want!r}: {err[:1500]}")
    expect("No space left on device" in json.dumps(doc) or
           "No space left on device" in "".join(b1.get("applyerrs") or []),
           f"nothing says 'No space left on device': {err[:1500]}")
    before, after = (bootinfo(x) for x in b1.get("bootinfos", [])[:2])
    expect(after.get("status") == "install_ok_half-configured" and after.get("audit") != "0",
           f"dpkg after apply: {after}")
    expect("next_entry" not in after["env"], f"grubenv armed after the failed apply: {after['env']}")
    expect(before.get("files") == "0", f"NEW's files in /boot before apply: {before}")
    # boot 2 is OLD (the generic check) and kswap there says the same: not armed, the reason
    expect(state not in ("armed", "trial-booted", "pinned"), f"boot 2: journal {state} {outcome}")
    reason = ((b2.get("status") or {}).get("journal") or {}).get("reason") or ""
    expect("'kswap rollback --purge'" in reason and f"linux-image-{NEW}" in reason,
           f"boot 2: the journal's reason does not name the package and its cleanup: {reason}")
    fc = [x.get("kernel") for x in ((b2.get("status") or {}).get("grub") or {}).get("forecast") or []]
    expect(fc[:3] == [pf.old] * 3, f"boot 2: forecast {fc}")
    m = re.match(r"rc=(\d+) ?(.*)", b2.get("cleanup", ""))
    expect(m and m.group(1) == "0", f"the named cleanup (rollback --purge) failed: "
           f"{b2.get('cleanup', '')[:1500]}")
    infos = [bootinfo(x) for x in b2.get("bootinfos", [])]
    expect(len(infos) == 2, f"boot 2: {len(infos)} BOOTINFO lines")
    expect(infos[0].get("status") == "install_ok_half-configured",
           f"boot 2 before the cleanup: {infos[0]}")
    expect(infos[1].get("status") in ("", "unknown_ok_not-installed") and
           infos[1].get("audit") == "0" and infos[1].get("files") == "0",
           f"boot 2 after the cleanup: dpkg and /boot still hold NEW: {infos[1]}")


def check_dpkg_lock(ctx):
    """Issue 18 (b): a real apt-get holds dpkg's lock: apply waits [apply] apt_timeout, then
    refuses naming it (nothing changed); held for 20 s only, apply waits and arms."""
    boots = ctx.boots
    b1 = boots[1]
    holders, applies = b1.get("holders") or [], b1.get("applies") or []
    timed = [int(x) for x in b1.get("timeds") or []]
    errs, infos = b1.get("applyerrs") or [], [bootinfo(x) for x in b1.get("bootinfos") or []]
    expect(len(holders) == 2 and len(applies) == 2 and len(timed) == 2 and len(infos) == 2,
           f"boot 1: {len(holders)} holders, {len(applies)} applies, {len(timed)} times, "
           f"{len(infos)} BOOTINFO lines, expected 2 of each")
    pids = []
    for h in holders:
        m = re.search(r"pid=(\d+) .*continue\?", h)
        expect(m, f"the holder apt-get is not at its prompt: {h}")
        pids.append(m.group(1))
    rc, doc = applies[0]
    err = apply_error(doc)
    expect(rc == 1 and isinstance(doc, dict) and doc.get("result") == "failed",
           f"apply with the lock held: exit {rc}, expected 1, failed: {err[:800]}")
    for want in (f"'/var/lib/dpkg/lock-frontend' is still held by apt-get (pid {pids[0]}",
                 "after 60 s ([apply] apt_timeout)", f"wait for apt-get (pid {pids[0]}) to finish"):
        expect(want in err, f"apply's refusal lacks {want!r}: {err[:1500]}")
    expect(60 <= timed[0] <= 400, f"the refusal came after {timed[0]} s, expected 60 s of waiting "
           "(plan before it)")
    expect(infos[0].get("journal") == "no" and infos[0].get("dropin") == "no" and
           "next_entry" not in infos[0]["env"] and "saved_entry" not in infos[0]["env"],
           f"something changed while apply waited: {infos[0]}")
    rc, doc = applies[1]
    expect(rc == 0 and isinstance(doc, dict) and doc.get("state") == "armed",
           f"apply after the holder let go: exit {rc}, "
           f"{doc.get('state') if isinstance(doc, dict) else doc!r:.300}, expected 0, armed: "
           f"{apply_error(doc)[:800]}")
    said = errs[1].replace("|", "\n") if len(errs) > 1 else ""
    expect(re.search(rf"waiting for '/var/lib/dpkg/lock-frontend': held by apt-get \(pid "
                     rf"{pids[1]}: apt-get remove zstd\)", said) and
           "the dpkg lock is free after" in said,
           f"apply's progress does not name the holder and the end of the wait: {said[-1500:]}")
    expect(timed[1] >= 20, f"the second apply took {timed[1]} s: it did not wait for the holder")
    expect("next_entry" in infos[1]["env"], f"not armed: {infos[1]}")


SCENARIOS = {
    # Issue 18 (a), suite vm-extra: /boot (its own 160 MiB ext4) fills up in the middle of a real
    # apt install (apply --deb, NEW's package purged first): dpkg unpacks, the postinst's
    # mkinitramfs runs out of space. Nothing armed, the error names what dpkg left and the
    # command that cleans it; the next boot is OLD; that command (rollback --purge, after the
    # space is back) leaves dpkg clean.
    "boot-full": Scenario("smallboot", "src=deb\n1=bootfull,bootinfo,applytimed,bootinfo,reboot\n"
                          "2=bootinfo,cleanup,bootinfo,poweroff", ["OLD", "OLD"], ["OLD", "OLD"],
                          check=check_boot_full),
    # Issue 18 (b), suite vm-extra: a real apt-get holds dpkg's lock (at its prompt). apply
    # waits [apply] apt_timeout (60 s) and refuses naming it, nothing changed; the holder lets
    # go 20 s into the second apply's wait, which then goes on and arms.
    "dpkg-lock": Scenario("ext4", "src=deb\n1=locktimeout,lockhold,applytimed,bootinfo,lockrelease,"
                          "lockbrief,applytimed,bootinfo,poweroff", ["OLD"], ["OLD"],
                          check=check_dpkg_lock),
}
