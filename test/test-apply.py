#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""kswap apply, pin and rollback on copies of a fixture root, with the fakes of apt-get,
update-grub and systemctl first on PATH (test/fakes/), real dpkg-deb, depmod and gpg, and the
real grub-editenv reading what kswap wrote. Usage: test-apply.py KSWAP [SCENARIO...]"""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import kstest
from kstest import NEW, NEW_PATH, OLD, OLD_PATH, check, env

exe = os.path.abspath(sys.argv[1])
only = sys.argv[2:]
src = kstest.SRC
fakes = kstest.FAKES
base_root = kstest.EXAMPLE_ROOT
key = kstest.XANMOD_KEY
work = tempfile.mkdtemp(prefix="kswap-apply.")


def kswap(root, *args, timeout=120, **kw):
    return kstest.run_kswap(exe, root, *args, timeout=timeout, **kw)


def make_deb(name, *opts):
    out = os.path.join(work, name)
    if not os.path.exists(out):
        subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW, out, *opts],
                       check=True, capture_output=True)
    return out


def fresh_root(name):
    r = os.path.join(work, name)
    shutil.copytree(base_root, r, symlinks=True)
    return r


def grubenv(root):
    p = subprocess.run(["grub-editenv", os.path.join(root, "boot/grub/grubenv"), "list"],
                       capture_output=True, text=True)
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


def kernels(doc):
    return [b["kernel"] for b in doc["grub"]["forecast"]]


def status(root):
    p, d = kswap(root, "status", "--json")
    return d


def boot_into(root, release):
    """What a reboot into release looks like from the files kswap reads."""
    with open(os.path.join(root, "proc/sys/kernel/osrelease"), "w") as f:
        f.write(release + "\n")
    with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w") as f:
        f.write("%08x-0000-4000-8000-000000000000\n" % int(time.time() * 1000 % 2**32))


def scenario(name):
    return not only or name in only


good = make_deb("xanmod.deb", "--bbr", "builtin", "--compress", "zst")

if scenario("happy"):
    r = fresh_root("happy")
    before = open(os.path.join(r, "etc/default/grub"), "rb").read()
    acc = os.path.join(work, "accept.conf")
    with open(acc, "w") as f:
        f.write("[accept]\nsysctl = net.ipv4.tcp_congestion_control=bbr net.core.default_qdisc=fq\n")
    p, d = kswap(r, "--json", "--config", acc, "apply", "--deb", good, "--yes")
    check(p.returncode == 0 and d and d.get("state") == "armed", "apply --deb arms the trial",
          p.stderr + p.stdout)
    if d:
        check(kernels(d) == [NEW, OLD, OLD], f"forecast after apply: {kernels(d)}")
        check(d["grub"]["forecast"][0]["one_shot"], "boot 1 is a one-shot")
        check(d.get("old_kernel") == OLD and d.get("new_kernel") == NEW, "journal names both kernels")
        snap = d.get("snapshot") or {}
        check(snap.get("kernel") == OLD and {x["name"]: x["value"] for x in snap.get("sysctls", [])} ==
              {"net.ipv4.tcp_congestion_control": "bbr", "net.core.default_qdisc": "fq"},
              "the snapshot holds the running kernel and the live sysctls acceptance will judge", snap)
    e = grubenv(r)
    check(e.get("saved_entry") == OLD_PATH, "grub-editenv reads saved_entry = old id path", e)
    check(e.get("next_entry") == "kswap-trial", "grub-editenv reads next_entry = kswap-trial", e)
    cfg = open(os.path.join(r, "boot/grub/grub.cfg")).read()
    trial = re.search(r"^menuentry 'kswap trial: (\S+)'.*?^}", cfg, re.S | re.M)
    back = re.search(r"^menuentry 'kswap way back: (\S+)'.*?^}", cfg, re.S | re.M)
    check(trial and trial.group(1) == NEW and re.search(
        r"^\s*linux\s+\S+vmlinuz-" + re.escape(NEW) + r" .* kswap\.trial=[0-9a-f]+ kswap\.deadline=900 "
        r"oops=panic softlockup_panic=1 nmi_watchdog=panic modprobe\.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci "
        r"kswap.softdog=1 systemd\.watchdog_device=/dev/watchdog0 systemd\.watchdog_sec=60$",
        trial.group(0), re.M), "grub.cfg: the trial entry carries the trial-only arguments",
        trial.group(0) if trial else cfg[-2000:])
    check(back and back.group(1) == OLD and "kswap." not in back.group(0) and
          "watchdog" not in back.group(0) and "softdog" not in back.group(0) and
          re.search(r"^\s*linux\s+\S+vmlinuz-" + re.escape(OLD) + " ", back.group(0), re.M),
          "grub.cfg: the way-back entry boots the old kernel with its own arguments")
    check('if [ "${default}" = "kswap-trial" ]; then\n  set fallback="0"\nfi' in cfg,
          "grub.cfg: fallback set only when the default is the trial entry")
    check(re.findall(r"^menuentry '([^']*)'", cfg, re.M)[:2] == ["kswap way back: " + OLD, "kswap trial: " + NEW],
          "grub.cfg: the way-back entry is entry 0 (fallback is a position), the trial entry next")
    check(cfg.count("kswap.trial=") == 1, "grub.cfg: the marker is on the trial entry only")
    check(cfg.count("systemd.watchdog_sec=") == 1 and cfg.count("kswap.softdog=1") == 1 and
          cfg.count("nmi_watchdog=panic") == 1,
          "grub.cfg: no watchdog device: softdog is loaded and armed on the trial entry alone")
    check("no watchdog device: the trial boot loads softdog and arms it (60 s)" in p.stderr,
          "apply says the trial boot arms softdog", p.stderr[-1500:])
    check(os.path.getsize(os.path.join(r, "boot/grub/grubenv")) == 1024, "grubenv stays 1024 bytes")
    dropin = open(os.path.join(r, "etc/default/grub.d/90-kswap.cfg")).read()
    check("GRUB_DEFAULT=saved" in dropin and "panic=10" in dropin, "drop-in sets saved and panic")
    check(open(os.path.join(r, "etc/default/grub"), "rb").read() == before,
          "the operator's /etc/default/grub is untouched")
    cfg = open(os.path.join(r, "boot/grub/grub.cfg")).read()
    check('set default="${saved_entry}"' in cfg and "panic=10" in cfg,
          "update-grub ran with the drop-in")
    check(not os.path.exists(os.path.join(r, "run/fake-reboot-requested")), "no reboot without --reboot")
    raw = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
    p2, d2 = kswap(r, "--json", "apply", "--deb", good, "--yes")
    check(p2.returncode == 0 and d2 and d2.get("result") == "unchanged",
          "apply again when armed: exit 0, unchanged", p2.stderr)
    check(open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == raw, "... and grubenv unchanged")
    p3, _ = kswap(r, "pin")
    check(p3.returncode == 2, "pin before the trial boot is refused (exit 2)", p3.stderr)
    boot_into(r, NEW)
    p4, _ = kswap(r, "pin")
    check(p4.returncode == 2 and "acceptance" in p4.stderr, "pin without acceptance is refused",
          p4.stderr)
    # apply run again on the trial boot before the verdict (a bootstrap started twice; the
    # journal as accept leaves it when it starts): refused, nothing written.
    jp = os.path.join(r, "var/lib/kswap/state.json")
    armed_text = open(jp).read()
    doc = json.loads(armed_text)
    doc["state"] = "trial-booted"
    with open(jp, "w") as f:
        json.dump(doc, f)
    booted_text = open(jp).read()
    raw = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
    p6, d6 = kswap(r, "--json", "apply", "--deb", good, "--yes")
    check(p6.returncode == 2 and d6 and d6.get("result") == "refused" and
          "status --wait" in (d6.get("error") or "") and open(jp).read() == booted_text and
          open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == raw,
          "apply on the trial boot before the verdict: refused (exit 2), journal and grubenv "
          "unchanged", p6.stderr[-1500:])
    # ... and after a verdict that did not end pinned (accept's pin failed): status says what next
    doc["outcome"], doc["outcome_at"] = "trial-ok", doc["armed_at"]
    with open(jp, "w") as f:
        json.dump(doc, f)
    booted_text = open(jp).read()
    p6, d6 = kswap(r, "--json", "apply", "--deb", good, "--yes")
    check(p6.returncode == 2 and d6 and d6.get("result") == "refused" and
          "judged trial-ok and not pinned" in (d6.get("error") or "") and
          open(jp).read() == booted_text, "apply on the trial boot judged but not pinned: "
          "refused (exit 2), naming the verdict, journal unchanged", p6.stderr[-1500:])
    with open(jp, "w") as f:
        f.write(armed_text)
    p5, d5 = kswap(r, "--json", "pin", "--force")
    check(p5.returncode == 0 and d5 and kernels(d5) == [NEW, NEW, NEW] and
          d5.get("state") == "pinned", "pin --force on the trial kernel pins it", p5.stderr)
    e = grubenv(r)
    check(e.get("saved_entry") == NEW_PATH and "next_entry" not in e, "saved_entry = new, no next_entry", e)
    check(not os.path.exists(os.path.join(r, "etc/grub.d/01_kswap_trial")) and
          "kswap" not in open(os.path.join(r, "boot/grub/grub.cfg")).read().replace("kswap.cfg", ""),
          "pin removes the trial entries (script and grub.cfg)")
    cfg = open(os.path.join(r, "boot/grub/grub.cfg")).read()
    check(not re.search(r"watchdog|softdog|oops=panic|softlockup_panic", cfg),
          "pinned: no entry carries the trial's watchdog or panic switches",
          re.findall(r".*(?:watchdog|softdog).*", cfg))
    # apply --deb of the pinned kernel run again (a bootstrap run after the node came back on
    # NEW; found by the power-cut matrix, apply#13): nothing to do, the pinned record stays.
    pinned_text = open(jp).read()
    raw = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
    p7, d7 = kswap(r, "--json", "apply", "--deb", good, "--yes")
    check(p7.returncode == 0 and d7 and d7.get("result") == "unchanged" and
          d7.get("state") == "pinned" and "pinned already" in (d7.get("error") or "") and
          open(jp).read() == pinned_text and
          open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == raw,
          "apply --deb of the pinned, running kernel: exit 0, unchanged, journal and grubenv "
          "as they were", p7.stderr[-1500:])
    p8, d8 = kswap(r, "--json", "apply", "--kernel", NEW, "--yes")
    check(p8.returncode == 0 and d8 and d8.get("result") == "unchanged" and
          open(jp).read() == pinned_text, "... and so does apply --kernel NEW", p8.stderr[-800:])
    p9, d9 = kswap(r, "--json", "apply", "--dry-run", "--deb", good)
    check(p9.returncode == 0 and d9 and d9.get("result") == "unchanged",
          "... and apply --dry-run says unchanged", p9.stderr[-800:])
    # The package's kernel runs, but kswap never swapped to it (no journal): refused, nothing
    # written, not even a journal.
    r2 = fresh_root("runs-already")
    boot_into(r2, NEW)
    raw = open(os.path.join(r2, "boot/grub/grubenv"), "rb").read()
    p10, d10 = kswap(r2, "--json", "apply", "--deb", good, "--yes")
    check(p10.returncode == 2 and d10 and d10.get("result") == "refused" and
          "running kernel already" in (d10.get("error") or "") and
          not os.path.exists(os.path.join(r2, "var/lib/kswap/state.json")) and
          open(os.path.join(r2, "boot/grub/grubenv"), "rb").read() == raw,
          "apply --deb of the running kernel kswap did not pin: refused (exit 2), no journal, "
          "grubenv unchanged", p10.stderr[-1500:])

if scenario("watchdog"):
    # The node has a watchdog device (KVM's i6300esb): the trial arms it, softdog stays out.
    r = fresh_root("watchdog-device")
    os.makedirs(os.path.join(r, "sys/class/watchdog/watchdog0"))
    with open(os.path.join(r, "sys/class/watchdog/watchdog0/identity"), "w") as f:
        f.write("i6300ESB timer\n")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    cfg = open(os.path.join(r, "boot/grub/grub.cfg")).read()
    trial = re.search(r"^menuentry 'kswap trial: (\S+)'.*?^}", cfg, re.S | re.M)
    check(p.returncode == 0 and trial and re.search(
        r" nmi_watchdog=panic modprobe\.blacklist=pvpanic,pvpanic_mmio,pvpanic_pci "
        r"systemd\.watchdog_device=/dev/watchdog0 systemd\.watchdog_sec=60$", trial.group(0), re.M) and
        "softdog" not in cfg, "a watchdog device: the trial entry arms it (no softdog)",
        (p.stderr[-800:], trial.group(0) if trial else cfg[-1500:]))
    check(cfg.count("systemd.watchdog_sec=") == 1, "... on the trial entry alone")
    check("the trial boot arms the watchdog /dev/watchdog0 (60 s); the verdict disarms it" in p.stderr,
          "apply says which watchdog the trial arms", p.stderr[-800:])
    _, pd = kswap(r, "--json", "plan")
    wd = [f for f in (pd or {}).get("findings", []) if f["id"] == "host.watchdog"]
    check(wd and wd[0]["severity"] == "ok" and "watchdog0 (i6300ESB timer)" in wd[0]["message"] and
          "trial boot arms it" in wd[0]["message"], "plan: host.watchdog says the trial arms the device", wd)

if scenario("watchdog"):
    # Only softdog under sys/class/watchdog: one a pinned trial loaded, gone on the next boot.
    # Not the node's device: the trial loads softdog itself (found by the VM's repo scenario,
    # whose second trial armed /dev/watchdog0 and had none).
    r = fresh_root("watchdog-softdog-running")
    os.makedirs(os.path.join(r, "sys/class/watchdog/watchdog0"))
    with open(os.path.join(r, "sys/class/watchdog/watchdog0/identity"), "w") as f:
        f.write("Software Watchdog\n")
    _, pd = kswap(r, "--json", "plan")
    wd = [f for f in (pd or {}).get("findings", []) if f["id"] == "host.watchdog"]
    check(wd and wd[0]["severity"] == "warn" and "or only softdog" in wd[0]["message"],
          "plan: a running softdog is no watchdog device of the node (warn)", wd)
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    cfg = open(os.path.join(r, "boot/grub/grub.cfg")).read()
    check(p.returncode == 0 and cfg.count("kswap.softdog=1 systemd.watchdog_device=/dev/watchdog0") == 1,
          "a running softdog: the trial loads softdog itself (kswap.softdog=1)",
          (p.stderr[-800:], re.findall(r".*kswap\.trial.*", cfg)))

if scenario("watchdog"):
    # Neither a device nor softdog in the new kernel: no watchdog arguments, the rest stays.
    r = fresh_root("watchdog-none")
    bare = make_deb("xanmod-nosoftdog.deb", "--bbr", "builtin", "--without", "softdog")
    p, d = kswap(r, "--json", "apply", "--deb", bare, "--yes")
    cfg = open(os.path.join(r, "boot/grub/grub.cfg")).read()
    check(p.returncode == 0 and "systemd.watchdog" not in cfg and "softdog" not in cfg and
          cfg.count("nmi_watchdog=panic") == 1 and cfg.count("softlockup_panic=1") == 1,
          "no device and no softdog: the trial arms no watchdog, the panic switches stay",
          (p.stderr[-800:], re.findall(r".*kswap\.trial.*", cfg)))
    check("no watchdog device and " + NEW + " has no softdog: the trial boot arms none" in p.stderr,
          "apply says the trial arms none", p.stderr[-800:])

if scenario("happy"):
    r = fresh_root("nopanic")
    cfg = os.path.join(work, "nopanic.conf")
    with open(cfg, "w") as f:
        f.write("[apply]\nadd_panic = no\n")
    p, d = kswap(r, "--json", "--config", cfg, "apply", "--deb", good, "--yes")
    dropin = open(os.path.join(r, "etc/default/grub.d/90-kswap.cfg")).read()
    check(p.returncode == 0 and "GRUB_DEFAULT=saved" in dropin and "panic=" not in dropin,
          "[apply] add_panic = no: the drop-in leaves the command line alone", dropin)

if scenario("happy"):
    # --kernel with an installed release (any kernel, not only XanMod): no apt, and the journal
    # names the trial kernel so that accept can judge it (found by the VM suite)
    r = fresh_root("kernel")
    subprocess.run([os.path.join(fakes, "apt-get"), "install", "-y", good], env=env(KSWAP_ROOT=r),
                   check=True, capture_output=True)
    os.unlink(os.path.join(r, "var/log/fake-apt.log"))
    p, d = kswap(r, "--json", "apply", "--kernel", NEW, "--yes")
    check(p.returncode == 0 and d and d.get("state") == "armed" and d.get("new_kernel") == NEW
          and kernels(d) == [NEW, OLD, OLD], "apply --kernel INSTALLED arms it and names it", p.stderr)
    check(not os.path.exists(os.path.join(r, "var/log/fake-apt.log")), "... without apt")
    boot_into(r, NEW)
    p, d = kswap(r, "--json", "accept")
    check(p.returncode == 0 and d and d.get("outcome") == "trial-ok" and d.get("pinned"),
          "... and accept judges and pins it", p.stderr)

if scenario("happy"):
    # A module the apply itself loads (Debian 13: update-grub's grub-probe loads dm_mod) is not
    # asked of the trial: the arming snapshot leaves it out and says why.
    r = fresh_root("apply-loads-module")
    hook = "grep -q '^dm_mod ' $KSWAP_ROOT/proc/modules || echo 'dm_mod 184320 0 - Live 0x0' >> $KSWAP_ROOT/proc/modules"
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", KSWAP_FAKE_UPDATE_GRUB_POST_HOOK=hook)
    st = json.load(open(os.path.join(r, "var/lib/kswap/state.json")))
    items = (st.get("running") or {}).get("items") or []
    skipped = (st.get("running") or {}).get("skipped") or []
    check(p.returncode == 0 and "module:tcp_bbr" in items and "module:dm_mod" not in items and
          any(x.startswith("module:dm_mod: loaded by this apply") for x in skipped),
          "a module loaded during apply is not in the arming snapshot (skipped, with why)",
          json.dumps(st.get("running"))[:1500] + p.stderr[-1500:])

if scenario("rollback"):
    r = fresh_root("rollback")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    check(p.returncode == 0, "apply before rollback", p.stderr)
    p, d = kswap(r, "--json", "rollback")
    check(p.returncode == 0 and d and kernels(d) == [OLD, OLD, OLD] and d.get("state") == "rolled-back",
          "rollback disarms: every boot starts the old kernel", p.stderr)
    check("next_entry" not in grubenv(r), "no next_entry after rollback")
    check(not os.path.exists(os.path.join(r, "etc/grub.d/01_kswap_trial")) and
          "kswap-trial" not in open(os.path.join(r, "boot/grub/grub.cfg")).read(),
          "rollback removes the trial entries (script and grub.cfg)")
    p, d = kswap(r, "--json", "rollback", "--purge")
    check(p.returncode == 0, "rollback --purge", p.stderr)
    check(not os.path.exists(os.path.join(r, f"boot/vmlinuz-{NEW}")), "--purge removed the kernel")
    check(d and kernels(d) == [OLD, OLD, OLD], "forecast after purge: old kernel")

if scenario("refused"):
    r = fresh_root("nocake")
    bad = make_deb("nocake.deb", "--bbr", "builtin", "--without", "sch_cake")
    p, d = kswap(r, "--json", "apply", "--deb", bad, "--yes")
    ids = [f["id"] for f in (d or {}).get("findings", []) if f["severity"] == "block"]
    check(p.returncode == 2 and "modules.missing" in ids, "a kernel without sch_cake: exit 2, modules.missing", p.stderr)
    check("next_entry" not in grubenv(r), "... never armed")
    check(d and d.get("state") in ("idle", "failed") and kernels(d) == [OLD, OLD, OLD],
          "... old kernel on every boot")
    p, d = kswap(r, "--json", "rollback", "--purge")
    check(p.returncode == 0 and not os.path.exists(os.path.join(r, f"boot/vmlinuz-{NEW}")),
          "rollback --purge removes what was installed", p.stderr)
    r2 = fresh_root("btrfs")
    shutil.rmtree(r2)
    shutil.copytree(os.path.join(src, "test/roots/boot-btrfs/root"), r2, symlinks=True)
    raw = open(os.path.join(r2, "boot/grub/grubenv"), "rb").read()
    p, d = kswap(r2, "--json", "apply", "--deb", good, "--yes")
    check(p.returncode == 2 and d and d.get("result") == "refused", "/boot on btrfs: refused", p.stderr)
    check(open(os.path.join(r2, "boot/grub/grubenv"), "rb").read() == raw and
          not os.path.exists(os.path.join(r2, "etc/default/grub.d/90-kswap.cfg")),
          "... nothing changed on disk")
    # accept's checklist fails on the old kernel already: refused before the first change.
    r4 = fresh_root("check-fails")
    os.makedirs(os.path.join(r4, "etc/kswap/kswap.conf.d"), exist_ok=True)
    with open(os.path.join(r4, "etc/kswap/kswap.conf.d/50-svc.conf"), "w") as f:
        f.write("[accept]\nservices = wanted-but-dead.service\n")
    raw = open(os.path.join(r4, "boot/grub/grubenv"), "rb").read()
    p, d = kswap(r4, "--json", "apply", "--deb", good, "--yes")
    fails = [f for f in (d or {}).get("findings", []) if f["id"] == "accept.fails-now"]
    check(p.returncode == 2 and d and d.get("result") == "refused" and fails and
          "service:wanted-but-dead.service" in fails[0]["message"],
          "a checklist that fails on the old kernel: refused (exit 2), accept.fails-now names it",
          p.stdout[-2000:])
    check(open(os.path.join(r4, "boot/grub/grubenv"), "rb").read() == raw and
          not os.path.exists(os.path.join(r4, "etc/default/grub.d/90-kswap.cfg")) and
          not os.path.exists(os.path.join(r4, "var/log/fake-apt.log")) and
          not os.path.exists(os.path.join(r4, "var/lib/kswap/state.json")),
          "... before any change (GRUB, apt, the journal)")
    r3 = fresh_root("noyes")
    p = subprocess.run([exe, "--root", r3, "apply", "--deb", good], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=env())
    check(p.returncode == 2 and "--yes" in p.stderr, "without --yes and a terminal: exit 2", p.stderr)

if scenario("readback"):
    # What the trial boot loads is read back after the last update-grub, before next_entry:
    # the fake update-grub's post hook damages one file at that point (only then does the
    # trial's /etc/grub.d script exist), as another program or a disk losing writes would.
    trial = '[ -e "$KSWAP_ROOT/etc/grub.d/01_kswap_trial" ] || exit 0; '
    for name, hook, fid, what in [
            ("truncated-kernel", f'truncate -s 3000 "$KSWAP_ROOT/boot/vmlinuz-{NEW}"',
             "boot.kernel-damaged", f"'/boot/vmlinuz-{NEW}' is damaged: it is truncated: 3000 bytes"),
            ("empty-initrd", f': > "$KSWAP_ROOT/boot/initrd.img-{NEW}"',
             "boot.initrd-damaged", f"'/boot/initrd.img-{NEW}' is damaged: it is empty"),
            ("zeroed-initrd", f'head -c 4096 /dev/zero > "$KSWAP_ROOT/boot/initrd.img-{NEW}"',
             "boot.initrd-damaged", "zeros"),
            ("missing-kernel", f'rm "$KSWAP_ROOT/boot/vmlinuz-{NEW}"',
             "boot.file-unreadable", f"cannot open '/boot/vmlinuz-{NEW}': it does not exist"),
            ("no-trial-entry", "sed -i \"/^menuentry 'kswap trial/,/^}/d\" \"$KSWAP_ROOT/boot/grub/grub.cfg\"",
             "boot.trial-entry-missing", "no top-level entry 'kswap-trial'")]:
        r = fresh_root("readback-" + name)
        p, d = kswap(r, "--json", "apply", "--deb", good, "--yes",
                     KSWAP_FAKE_UPDATE_GRUB_POST_HOOK=trial + hook)
        f = {x["id"]: x for x in (d or {}).get("findings", [])}
        # arm began (the kernel is installed): a step blocked by a finding, not a refusal
        check(p.returncode == 2 and d and d.get("result") == "blocked" and fid in f and
              f[fid]["severity"] == "block" and what in f[fid]["message"],
              f"{name}: apply is blocked with {fid} naming the file", p.stderr[-1500:] + p.stdout[-1500:])
        check(d and "nothing is armed" in (d.get("error") or ""), f"{name}: ... the error says nothing is armed",
              (d or {}).get("error"))
        check("next_entry" not in grubenv(r) and d and d.get("state") == "failed" and
              kernels(d) == [OLD] * 3, f"{name}: ... never armed, the old kernel on every boot",
              (grubenv(r), (d or {}).get("state")))
        check(not os.path.exists(os.path.join(r, "var/lib/kswap/trial")),
              f"{name}: ... no trial flag for kswap-accept.service")
    p, d = kswap(r, "--json", "rollback", "--purge")
    check(p.returncode == 0 and d and kernels(d) == [OLD] * 3 and
          not os.path.exists(os.path.join(r, f"boot/vmlinuz-{NEW}")),
          "after a refused arming, rollback --purge cleans up", p.stderr)
    r = fresh_root("readback-good")
    p, d = kswap(r, "apply", "--deb", good, "--yes")
    check(p.returncode == 0 and f"kernel, initrd, module indexes and grub.cfg of {NEW} on disk and read back"
          in p.stderr, "good files: apply says it synced and read them back, and arms", p.stderr)

def journal(root):
    return json.load(open(os.path.join(root, "var/lib/kswap/state.json")))


def step(root, name):
    return next((x for x in journal(root).get("steps", []) if x["name"] == name), {})


def reboots(root):
    f = os.path.join(root, "run/fake-reboot-requested")
    return open(f).read().count("\n") if os.path.exists(f) else 0


def broken_zstd(path, src):
    """src's zstd initrd with bytes in the middle of its frame inverted: the magic stays, the
    data no longer decompresses (or its checksum no longer matches)."""
    data = bytearray(open(src, "rb").read())
    for i in range(len(data) // 3, len(data) // 3 + 8):
        data[i] ^= 0xFF
    with open(path, "wb") as f:
        f.write(data)


OLD_KERNEL, OLD_INITRD = f"boot/vmlinuz-{OLD}", f"boot/initrd.img-{OLD}"

if scenario("way-back"):
    # Before anything changes: plan reads the running kernel's files (the way back), and apply
    # stops at its plan step: nothing on disk changes.
    r = fresh_root("wayback-plan")
    env0 = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
    with open(os.path.join(r, OLD_KERNEL), "r+b") as f:
        f.write(bytes(1024))
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    f = {x["id"]: x for x in (d or {}).get("findings", [])}
    check(p.returncode == 2 and d and d.get("result") == "refused" and
          f.get("boot.old-kernel-damaged", {}).get("severity") == "block" and
          f"'/{OLD_KERNEL}' of the running kernel, the way back of a trial, is damaged: its first "
          "bytes are zeros" in f["boot.old-kernel-damaged"]["message"] and
          f"apt-get install --reinstall linux-image-{OLD}" in f["boot.old-kernel-damaged"]["remedy"],
          "old vmlinuz of zeros: apply refused at its plan (exit 2), boot.old-kernel-damaged names "
          "the file and the reinstall", p.stderr[-1500:] + p.stdout[-1500:])
    check(open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == env0 and
          not os.path.exists(os.path.join(r, "etc/default/grub.d/90-kswap.cfg")) and
          not os.path.exists(os.path.join(r, "var/lib/kswap/state.json")) and
          not os.path.exists(os.path.join(r, "var/log/fake-apt.log")),
          "... before any change (GRUB, apt, the journal)")

    # At arming: damage done while apply runs (the fake update-grub's post hook once the trial's
    # script exists, as another program or a disk losing writes would): read back from the
    # disk, refused, nothing armed.
    bad_initrd = os.path.join(work, "initrd-broken")
    broken_zstd(bad_initrd, os.path.join(base_root, OLD_INITRD))
    trial = '[ -e "$KSWAP_ROOT/etc/grub.d/01_kswap_trial" ] || exit 0; '
    synth = os.path.join(fakes, "synthetic-vmlinuz.py")
    for name, hook, fid, what in [
            ("old-kernel-no-magic", f'python3 "{synth}" {OLD} "$KSWAP_ROOT/{OLD_KERNEL}" --no-magic',
             "boot.old-kernel-damaged",
             f"'/{OLD_KERNEL}', a file of the way back, is damaged: it is not a kernel image"),
            ("old-kernel-truncated", f'truncate -s 3000 "$KSWAP_ROOT/{OLD_KERNEL}"',
             "boot.old-kernel-damaged",
             f"'/{OLD_KERNEL}', a file of the way back, is damaged: it is truncated: 3000 bytes"),
            ("old-initrd-no-decompress", f'cp "{bad_initrd}" "$KSWAP_ROOT/{OLD_INITRD}"',
             "boot.old-initrd-damaged",
             f"'/{OLD_INITRD}', a file of the way back, is damaged: it does not decompress: "
             "cannot read the compressed part: cannot decompress: Zstd decompression failed"),
            ("old-initrd-missing", f'rm "$KSWAP_ROOT/{OLD_INITRD}"', "boot.old-initrd-damaged",
             f"cannot open '/{OLD_INITRD}', a file of the way back: it does not exist"),
            ("no-way-back-entry",
             "sed -i \"/^menuentry 'kswap way back/,/^}/d\" \"$KSWAP_ROOT/boot/grub/grub.cfg\"",
             "boot.way-back-entry-missing", "no top-level entry 'kswap-way-back'")]:
        r = fresh_root("wayback-" + name)
        p, d = kswap(r, "--json", "apply", "--deb", good, "--yes",
                     KSWAP_FAKE_UPDATE_GRUB_POST_HOOK=trial + hook)
        f = {x["id"]: x for x in (d or {}).get("findings", [])}
        check(p.returncode == 2 and d and d.get("result") == "blocked" and fid in f and
              f[fid]["severity"] == "block" and what in f[fid]["message"],
              f"{name}: apply is blocked with {fid} naming the file", p.stderr[-1500:] + p.stdout[-2500:])
        check(d and "nothing is armed" in (d.get("error") or "") and
              (fid == "boot.way-back-entry-missing" or f"the way back to {OLD}" in d["error"]),
              f"{name}: ... the error says the way back is damaged and nothing is armed",
              (d or {}).get("error"))
        check("next_entry" not in grubenv(r) and d and d.get("state") == "failed" and
              kernels(d) == [OLD] * 3 and not os.path.exists(os.path.join(r, "var/lib/kswap/trial")),
              f"{name}: ... never armed, the old kernel on every boot, no trial flag",
              (grubenv(r), (d or {}).get("state")))
    r = fresh_root("wayback-good")
    p, d = kswap(r, "apply", "--deb", good, "--yes")
    check(p.returncode == 0 and re.search(
        r"and the way back's kernel and initrd \(" + re.escape(OLD) + r", 2 files\) too .*; 2 "
        r"initrds decompressed\)", p.stderr),
        "intact: apply says it read back the way back's files and decompressed both initrds",
        p.stderr[-1500:])

if scenario("reboot-check"):
    # Armed without --reboot, the operator reboots later with 'kswap apply --reboot': the last
    # look first, then the reboot.
    r = fresh_root("rebootcheck-good")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    check(p.returncode == 0 and reboots(r) == 0, "apply without --reboot arms, no reboot", p.stderr)
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", "--reboot")
    # it reboots and the journal records the reboot: done (a run that changed something), armed
    check(p.returncode == 0 and d and d.get("result") == "done" and reboots(r) == 1 and
          step(r, "reboot").get("status") == "done" and d.get("state") == "armed",
          "apply --reboot again in the arming boot: looks, then reboots once (done, armed)",
          (p.returncode, (d or {}).get("result"), reboots(r), step(r, "reboot"), p.stderr[-1500:]))
    # Damaged between arming and the reboot: refused, nothing changed but the reboot step.
    for name, dmg, fid, what in [
            ("trial-kernel", lambda r: os.truncate(os.path.join(r, f"boot/vmlinuz-{NEW}"), 3000),
             "boot.kernel-damaged", f"'/boot/vmlinuz-{NEW}' of the trial kernel is damaged: it is truncated"),
            ("trial-initrd", lambda r: open(os.path.join(r, f"boot/initrd.img-{NEW}"), "wb").write(bytes(512)),
             "boot.initrd-damaged", f"'/boot/initrd.img-{NEW}' of the trial kernel is damaged: its first 512 bytes are zeros"),
            ("trial-kernel-gone", lambda r: os.unlink(os.path.join(r, f"boot/vmlinuz-{NEW}")),
             "boot.file-unreadable", f"'/boot/vmlinuz-{NEW}' of the trial kernel is unreadable: it does not exist"),
            ("old-kernel", lambda r: os.truncate(os.path.join(r, OLD_KERNEL), 2000),
             "boot.old-kernel-damaged", f"'/{OLD_KERNEL}' of the running kernel, the way back of a trial, is damaged: it is truncated"),
            ("next-entry-cleared", lambda r: subprocess.run(
                ["grub-editenv", os.path.join(r, "boot/grub/grubenv"), "unset", "next_entry"], check=True),
             "grub.next-boots-changed", f"boot 1 would start {OLD} (entry '{OLD_PATH}'), where kswap set up the one-shot trial of {NEW}"),
            ("saved-entry-changed", lambda r: subprocess.run(
                ["grub-editenv", os.path.join(r, "boot/grub/grubenv"), "set", "saved_entry=" + NEW_PATH], check=True),
             "grub.next-boots-changed", f"boot 2 would start {NEW} (entry '{NEW_PATH}'), where kswap set up {OLD}")]:
        r = fresh_root("rebootcheck-" + name)
        p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
        dmg(r)
        env1 = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
        state1 = open(os.path.join(r, "var/lib/kswap/state.json"), "rb").read()
        p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", "--reboot")
        f = {x["id"]: x for x in (d or {}).get("findings", [])}
        check(p.returncode == 2 and d and d.get("result") == "refused" and fid in f and
              f[fid]["severity"] == "block" and what in f[fid]["message"] and reboots(r) == 0,
              f"{name}: apply --reboot refuses the reboot (exit 2) with {fid} naming it",
              p.stderr[-1500:] + json.dumps(f)[:2500])
        check(journal(r).get("state") == "armed" and
              open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == env1 and
              os.path.exists(os.path.join(r, "var/lib/kswap/trial")),
              f"{name}: ... the trial stays armed, grubenv untouched", journal(r).get("state"))
        # a refusal changes nothing (issue 31): the journal stays byte for byte, the error says why
        check(open(os.path.join(r, "var/lib/kswap/state.json"), "rb").read() == state1 and
              "reboot" not in [x["name"] for x in journal(r).get("steps", [])] and
              d and (d.get("error") or ""),
              f"{name}: ... the journal unchanged byte for byte, the error says why",
              (step(r, "reboot"), (d or {}).get("error")))

    # apply --reboot in one run with a trial damaged by its arming update-grub is refused at
    # the read-back; a systemctl reboot that fails leaves the trial armed (exit 1).
    r = fresh_root("rebootcheck-systemctl-fails")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", "--reboot",
                 KSWAP_FAKE_SYSTEMCTL_FAIL="reboot")
    check(p.returncode == 1 and d and d.get("state") == "armed" and journal(r).get("state") == "armed"
          and step(r, "reboot").get("status") == "failed" and kernels(d) == [NEW, OLD, OLD],
          "systemctl reboot failing: exit 1, the journal still says armed (it is), step reboot failed",
          (p.returncode, (d or {}).get("state"), step(r, "reboot")))

HOLDER = r"""
import ctypes, fcntl, os, sys, time
root, hold, trigger = sys.argv[1], float(sys.argv[2]), sys.argv[3]
if trigger != "-":  # lock only when the fake apt-get's pre hook asks for it
    while not os.path.exists(trigger):
        time.sleep(0.02)
ctypes.CDLL(None).prctl(15, b"unattended-upgr", 0, 0, 0)  # PR_SET_NAME, as its comm is
fd = os.open(os.path.join(root, "var/lib/dpkg/lock-frontend"), os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)  # F_SETLKW over the whole file, as apt's F_SETLK
print("locked", flush=True)
if trigger != "-":
    open(trigger + ".taken", "w").close()
time.sleep(hold)
# what the waiting kswap left on disk while it waited
changed = [p for p in ("etc/default/grub.d/90-kswap.cfg", "var/lib/kswap/state.json",
                       "var/log/fake-apt.log") if os.path.exists(os.path.join(root, p))]
with open(os.path.join(root, "run/holder-saw"), "w") as f:
    f.write(" ".join(changed))
"""


def hold_lock(root, seconds, trigger="-"):
    """A process named unattended-upgr holding the dpkg frontend lock of root for seconds."""
    os.makedirs(os.path.join(root, "run"), exist_ok=True)
    h = subprocess.Popen([sys.executable, "-c", HOLDER, root, str(seconds), trigger],
                         stdout=subprocess.PIPE, text=True)
    if trigger == "-":
        assert h.stdout.readline().strip() == "locked"
    return h


def short_timeout(root, seconds):
    d = os.path.join(root, "etc/kswap/kswap.conf.d")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "50-test.conf"), "w") as f:
        f.write(f"[apply]\napt_timeout = {seconds}\n")


if scenario("dpkglock"):
    # unattended-upgrades holds the lock for a while: apply waits, says for whom, and goes on
    # when it lets go; nothing changed on disk while it waited.
    r = fresh_root("dpkg-released")
    short_timeout(r, 60)
    env0 = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
    h = hold_lock(r, 3)
    t0 = time.monotonic()
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    took = time.monotonic() - t0
    h.wait()
    saw = open(os.path.join(r, "run/holder-saw")).read()
    check(p.returncode == 0 and d and d.get("state") == "armed", "lock released: apply waits, then arms",
          p.stderr[-2000:])
    check(re.search(r"waiting for '/var/lib/dpkg/lock-frontend': held by unattended-upgr \(pid %d: .*python" % h.pid,
                    p.stderr) and "the dpkg lock is free after" in p.stderr,
          "... its progress names the holder (name, pid, command line) and the end of the wait", p.stderr[-2000:])
    check(saw == "", f"... nothing changed on disk while it waited ({saw!r})")
    print(f"     (measured: apply took {took:.1f} s with the lock held 3 s)")
    # It does not let go: apply refuses after [apply] apt_timeout, naming it and what to do.
    r = fresh_root("dpkg-held")
    short_timeout(r, 2)
    h = hold_lock(r, 30)
    t0 = time.monotonic()
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    took = time.monotonic() - t0
    h.kill()
    h.wait()
    err = (d or {}).get("error") or ""
    check(p.returncode == 1 and d and d.get("result") == "failed" and
          f"'/var/lib/dpkg/lock-frontend' is still held by unattended-upgr (pid {h.pid}" in err and
          "after 2 s ([apply] apt_timeout)" in err and
          "wait for unattended-upgrades to finish, or stop it: systemctl stop unattended-upgrades" in err,
          "lock kept: apply exits 1 naming the holder, its pid and what to do", p.stderr[-2000:])
    check(open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == env0 and
          not os.path.exists(os.path.join(r, "etc/default/grub.d/90-kswap.cfg")) and
          not os.path.exists(os.path.join(r, "var/lib/kswap/state.json")) and
          not os.path.exists(os.path.join(r, "var/log/fake-apt.log")),
          "... nothing changed on disk, apt never ran")
    print(f"     (measured: the refusal came after {took:.1f} s with apt_timeout = 2)")
    # The race after kswap's check: the lock is taken the instant apt-get starts. apt's own
    # words, with the holder, end up in the error.
    r = fresh_root("dpkg-race")
    trig = os.path.join(r, "run/take-lock")
    h = hold_lock(r, 30, trig)
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes",
                 KSWAP_FAKE_APT_PRE_HOOK=f'touch "{trig}"; while [ ! -e "{trig}.taken" ]; do sleep 0.05; done')
    h.kill()
    h.wait()
    err = (d or {}).get("error") or ""
    check(p.returncode == 1 and d and d.get("state") == "failed" and
          f"Could not get lock /var/lib/dpkg/lock-frontend. It is held by process {h.pid} (unattended-upgr)" in err,
          "lock taken after the check: apt-get's 'Could not get lock ... held by process N (NAME)' is the error",
          err or p.stderr[-2000:])
    check("next_entry" not in grubenv(r) and kernels(d) == [OLD] * 3, "... never armed, old kernel")
    # rollback --purge waits for the lock too, and changes nothing when it stays held
    r = fresh_root("dpkg-purge")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes")
    short_timeout(r, 1)
    env1 = open(os.path.join(r, "boot/grub/grubenv"), "rb").read()
    h = hold_lock(r, 30)
    p, d = kswap(r, "--json", "rollback", "--purge")
    h.kill()
    h.wait()
    check(p.returncode == 1 and "unattended-upgr (pid %d" % h.pid in ((d or {}).get("error") or "") and
          os.path.exists(os.path.join(r, f"boot/vmlinuz-{NEW}")) and
          open(os.path.join(r, "boot/grub/grubenv"), "rb").read() == env1,
          "rollback --purge with the lock held: exit 1 naming the holder, nothing changed", p.stderr[-2000:])

if scenario("halfinstalled"):
    # apt-get install fails half-way because /boot is full: apply reports it with apt's and
    # dpkg's words, says nothing is armed, and names what cleans up from dpkg's status.
    img = f"linux-image-{NEW}"
    for mode, state, todo in [("postinst", "half-configured", "'dpkg --configure -a' finishes it"),
                              ("unpack", "half-installed, reinstreq", "'apt-get install --reinstall' of it")]:
        r = fresh_root("boot-full-" + mode)
        p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", KSWAP_FAKE_APT_BOOT_FULL=mode)
        err = (d or {}).get("error") or ""
        check(p.returncode == 1 and d and d.get("result") == "failed" and d.get("state") == "failed",
              f"/boot full ({mode}): apply fails, exit 1", p.stderr[-2000:])
        check("E: Sub-process /usr/bin/dpkg returned an error code (1)" in err and
              "dpkg: error processing " in err and "nothing is armed, every boot starts the old kernel" in err,
              f"... the error has apt's last line, dpkg's reason and says nothing is armed", err)
        check(f"; nothing is armed, every boot starts the old kernel; dpkg left {img} ({state}"
              in err and todo in err and "kswap rollback --purge" in err and "; )" not in err,
              f"... it names what dpkg left ({state}) and the command that cleans up", err)
        check("No space left on device" in ((d or {}).get("output") or ""), "... apt's output is in the JSON")
        j = json.load(open(os.path.join(r, "var/lib/kswap/state.json")))
        check(j.get("reason") == err, "... the state journal's reason is the same words", j.get("reason"))
        check("next_entry" not in grubenv(r) and kernels(d) == [OLD] * 3, "... never armed, the old kernel")
    # the half-configured one: rollback --purge removes it
    r = fresh_root("boot-full-purge")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", KSWAP_FAKE_APT_BOOT_FULL="postinst")
    p, d = kswap(r, "--json", "rollback", "--purge")
    status = open(os.path.join(r, "var/lib/dpkg/status")).read()
    check(p.returncode == 0 and f"Package: {img}" not in status and
          not os.path.exists(os.path.join(r, f"boot/vmlinuz-{NEW}")) and kernels(d) == [OLD] * 3,
          "rollback --purge cleans up the half-configured kernel", p.stderr[-1500:])

if scenario("repository"):
    r = fresh_root("repo")
    debs = os.path.join(work, "debs")
    os.makedirs(debs, exist_ok=True)
    subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW,
                    os.path.join(debs, "linux-xanmod-lts-x64v3.deb"), "--package",
                    "linux-xanmod-lts-x64v3", "--bbr", "builtin"], check=True, capture_output=True)
    with open(os.path.join(r, "etc/apt/sources.list.d/xanmod-release.list"), "w") as f:
        f.write("deb [signed-by=/usr/share/keyrings/xanmod-archive-keyring.gpg] http://deb.xanmod.org releases main\n")
    # An operator's German locale: apt must still speak English to kswap (its phases and the
    # repository check are read by their words).
    p, d = kswap(r, "--json", "apply", "--key", key, "--yes", KSWAP_FAKE_DEBS=debs,
                 LC_ALL="de_DE.UTF-8", LANG="de_DE.UTF-8", LANGUAGE="de")
    check(p.returncode == 0 and d and d.get("state") == "armed", "apply from the repository arms", p.stderr)
    apt_env = open(os.path.join(r, "var/log/fake-apt-env.log")).read().strip()
    check(apt_env == "LC_ALL=C.UTF-8 LANGUAGE=", "apt ran under LC_ALL=C.UTF-8 and no LANGUAGE "
          "whatever the operator's locale", apt_env)
    src_file = os.path.join(r, "etc/apt/sources.list.d/xanmod.sources")
    text = open(src_file).read() if os.path.exists(src_file) else ""
    check("Suites: noble" in text and "Signed-By: /etc/apt/keyrings/xanmod-archive-keyring.gpg" in text,
          "deb822 source for noble with Signed-By", text)
    check(not os.path.exists(os.path.join(r, "etc/apt/sources.list.d/xanmod-release.list")),
          "XanMod's own list was taken over, not duplicated")
    log = open(os.path.join(r, "var/log/fake-apt.log")).read()
    check("update" in log and "install" in log and "--no-install-recommends" in log,
          "apt-get update and install ran without questions", log)
    # [repository] uri/suite/components: a mirror (an apt cache) in front of XanMod's archive.
    rm = fresh_root("repo-mirror")
    os.makedirs(os.path.join(rm, "etc/kswap/kswap.conf.d"), exist_ok=True)
    with open(os.path.join(rm, "etc/kswap/kswap.conf.d/50-mirror.conf"), "w") as f:
        f.write("[repository]\nuri = http://apt-cache.example:3142/xanmod\nsuite = releases\n"
                "components = main extra\n")
    with open(os.path.join(rm, "etc/apt/sources.list.d/our-mirror.list"), "w") as f:
        f.write("deb http://apt-cache.example:3142/xanmod/ releases main\n")
    p, d = kswap(rm, "--json", "plan")
    repo = ((d or {}).get("target") or {}).get("repository") or {}
    check(repo == {"uri": "http://apt-cache.example:3142/xanmod", "suite": "releases",
                   "components": ["main", "extra"], "configured": True},
          "plan --json shows the configured repository", json.dumps(repo))
    p = subprocess.run([exe, "--root", rm, "plan"], capture_output=True, text=True, env=env())
    check("repo    http://apt-cache.example:3142/xanmod releases main extra" in p.stdout,
          "plan's repo line names the mirror", p.stdout)
    p, d = kswap(rm, "--json", "apply", "--key", key, "--yes", KSWAP_FAKE_DEBS=debs)
    check(p.returncode == 0 and d and d.get("state") == "armed", "apply from the mirror arms", p.stderr)
    text = open(os.path.join(rm, "etc/apt/sources.list.d/xanmod.sources")).read()
    check("URIs: http://apt-cache.example:3142/xanmod\n" in text and "Suites: releases\n" in text
          and "Components: main extra\n" in text, "the source names the mirror", text)
    check(not os.path.exists(os.path.join(rm, "etc/apt/sources.list.d/our-mirror.list")),
          "the admin's own entry of the mirror was taken over, not duplicated")
    log = open(os.path.join(rm, "var/log/fake-apt.log")).read()
    check("Dir::Etc::sourcelist=sources.list.d/xanmod.sources" in log, "update limited to it", log)
    p, d = kswap(rm, "--json", "rollback", "--purge")
    check(p.returncode == 0 and os.path.exists(os.path.join(rm, "etc/apt/sources.list.d/our-mirror.list")),
          "rollback --purge gives the admin's entry back", p.stderr)
    rf = fresh_root("repo-flat")
    os.makedirs(os.path.join(rf, "etc/kswap/kswap.conf.d"), exist_ok=True)
    with open(os.path.join(rf, "etc/kswap/kswap.conf.d/50-flat.conf"), "w") as f:
        f.write("[repository]\nuri = file:/srv/repo\nsuite = ./\ncomponents = main\n")
    p, d = kswap(rf, "--json", "plan")
    ids = [f["id"] for f in (d or {}).get("findings", []) if f["severity"] == "block"]
    check(p.returncode == 2 and "config.invalid" in ids, "a flat suite with components blocks",
          p.stdout)
    # A repository kernel that lacks sch_cake: installed, then verify stops before arming.
    bad = os.path.join(work, "debs-bad")
    os.makedirs(bad, exist_ok=True)
    subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW,
                    os.path.join(bad, "linux-xanmod-lts-x64v3.deb"), "--package",
                    "linux-xanmod-lts-x64v3", "--bbr", "builtin", "--without", "sch_cake"],
                   check=True, capture_output=True)
    r3 = fresh_root("repo-nocake")
    p, d = kswap(r3, "--json", "apply", "--key", key, "--yes", KSWAP_FAKE_DEBS=bad)
    ids = [f["id"] for f in (d or {}).get("findings", []) if f["severity"] == "block"]
    check(p.returncode == 2 and "modules.missing" in ids and d.get("state") == "failed",
          "installed kernel without sch_cake: exit 2 at verify, state failed", p.stderr)
    check("next_entry" not in grubenv(r3) and kernels(d) == [OLD] * 3, "... never armed, old kernel")
    p, d = kswap(r3, "--json", "rollback", "--purge")
    check(p.returncode == 0 and not os.path.exists(os.path.join(r3, f"boot/vmlinuz-{NEW}")) and
          not os.path.exists(os.path.join(r3, "etc/apt/sources.list.d/xanmod.sources")),
          "rollback --purge removes the package, the source and the key", p.stderr)
    r2 = fresh_root("badkey")
    p, d = kswap(r2, "--json", "apply", "--key", os.path.join(src, "README.md"), "--yes", KSWAP_FAKE_DEBS=debs)
    check(p.returncode == 1 and d and "next_entry" not in grubenv(r2) and kernels(d) == [OLD] * 3,
          "a file that is no key: failed, old kernel default, not armed", p.stderr)

if scenario("faults"):
    for name, kw in [("apt-fail", {"KSWAP_FAKE_APT_FAIL": "install"}),
                     ("apt-garbage", {"KSWAP_FAKE_APT_GARBAGE": "1", "KSWAP_FAKE_APT_FAIL": "install"}),
                     ("apt-hang", {"KSWAP_FAKE_APT_HANG": "install"}),
                     ("grub-fail", {"KSWAP_FAKE_UPDATE_GRUB_FAIL": "1"}),
                     ("grub-garbage", {"KSWAP_FAKE_UPDATE_GRUB_GARBAGE": "1"})]:
        r = fresh_root(name)
        cfg = os.path.join(work, "short.conf")
        with open(cfg, "w") as f:
            f.write("[apply]\napt_timeout = 3\nupdate_grub_timeout = 3\n")
        p, d = kswap(r, "--json", "--config", cfg, "apply", "--deb", good, "--yes", **kw)
        e = grubenv(r)
        ok = p.returncode == 1 and "next_entry" not in e and d and d.get("state") == "failed"
        fc = kernels(d) if d and d.get("grub") else None
        check(ok and fc in (None, [OLD] * 3), f"{name}: exit 1, not armed, old kernel ({fc})",
              p.stderr[-800:])
    # --reboot: systemctl reboot is requested once; when it fails, the trial stays armed and
    # the error says so (the old kernel is still the default)
    r = fresh_root("reboot")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", "--reboot")
    reboots = open(os.path.join(r, "run/fake-reboot-requested")).read().count("\n") \
        if os.path.exists(os.path.join(r, "run/fake-reboot-requested")) else 0
    check(p.returncode == 0 and reboots == 1, f"--reboot asks systemctl once ({reboots})", p.stderr)
    r = fresh_root("reboot-fail")
    p, d = kswap(r, "--json", "apply", "--deb", good, "--yes", "--reboot",
                 KSWAP_FAKE_SYSTEMCTL_FAIL="reboot")
    check(p.returncode == 1 and "systemctl" in p.stderr and kernels(d) == [NEW, OLD, OLD],
          "systemctl reboot failing: exit 1, the one-shot stays armed", p.stderr)
    # a grubenv replaced under us: garbage is refused without a write; a valid block written
    # by someone else keeps its variables
    r = fresh_root("replaced")
    p, d = kswap(r, "apply", "--deb", good, "--yes")
    envp = os.path.join(r, "boot/grub/grubenv")
    with open(envp, "wb") as f:
        f.write(b"saved_entry=0\n")
    p, d = kswap(r, "--json", "rollback")
    check(p.returncode == 1 and "grubenv" in p.stderr and open(envp, "rb").read() == b"saved_entry=0\n",
          "a grubenv that is no environment block: refused, not rewritten", p.stderr)
    os.unlink(envp)
    subprocess.run(["grub-editenv", envp, "create"], check=True)
    subprocess.run(["grub-editenv", envp, "set", "next_entry=" + NEW_PATH, "operator_note=keep me"], check=True)
    p, d = kswap(r, "--json", "rollback")
    e = grubenv(r)
    check(p.returncode == 0 and e.get("operator_note") == "keep me" and "next_entry" not in e and
          e.get("saved_entry") == OLD_PATH, "a valid block from someone else: rollback keeps its variables", e)
    # a second kswap while the lock is held
    r = fresh_root("busy")
    os.makedirs(os.path.join(r, "var/lib/kswap"), exist_ok=True)
    with open(os.path.join(r, "var/lib/kswap/lock"), "w") as lf:
        fcntl.flock(lf, fcntl.LOCK_EX)
        lf.write(str(os.getpid()))
        lf.flush()
        cfg = os.path.join(work, "lock.conf")
        with open(cfg, "w") as f:
            f.write("[apply]\nlock_timeout = 1\n")
        p, d = kswap(r, "--json", "--config", cfg, "apply", "--deb", good, "--yes")
    check(p.returncode == 1 and str(os.getpid()) in p.stderr and d and d.get("result") == "busy",
          "a second kswap: exit 1 naming the holder's pid", p.stderr)

shutil.rmtree(work, ignore_errors=True)
print("apply:", "ok" if not kstest.failed else f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
