#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The fleet for real (issue 17, suite vm-extra): Debian 12 VMs under qemu (TCG) with sshd,
reached by Ansible over real SSH, and a node that bootstraps itself with cloud-init.

usage: fleet.py run SCENARIO...   fleet-rollout fleet-power-cycle fleet-power-cycle-none
                                  fleet-cloud-init
       fleet.py qmp-reset SOCKET  qemu's system_reset through a QMP socket (the power-cycle
                                  command the scenarios give the role; logs to power-cycle.log
                                  beside SOCKET)
Environment as test/vm/kswap-vm.py (KSWAP_VM=1, KS_BUILD_ROOT, KS_CACHE, KS_VM_WORK to keep
the serial logs, KS_VM_BOOT_TIMEOUT). Two-node scenarios run two VMs at once: on 2 cores, run nothing else beside them.

The disk is kswap-vm.py's layout fleet (vmfleet.py: the shared bookworm tree plus
openssh-server, python3 and cloud-init, cached and keyed by its inputs; the kswap of the build
installed as in every scenario). Each node boots a qcow2 overlay of it with kswap-vm.py's
boot_sequence (each guest reboot a cold restart of qemu, with the same options) and:
  -nic user,restrict=on,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:PORT-:22   (SSH nodes only:
      restrict=on keeps the guest off every network; 127.0.0.1 is the only address reached)
  -qmp unix:NODE/qmp.sock,server=on,wait=off   (the node's "provider API": system_reset)
Its plan disk carries GUEST (below), run in each boot's late phase: on boot 1 it installs the
run's throwaway SSH key (ssh-keygen per run) for root, makes node_exporter's textfile directory
and, for a node told to hang, a trial-only unit that hangs the boot; then it says the node is
ready (SSH nodes) or waits for the bootstrap's end and reports it (cloud-init node).

Scenarios:
  fleet-rollout   two nodes (node1 the canary, node2): `ansible-playbook ansible/rollout.yml` as
      an operator runs it (plan on both, the canary's apply, the real ansible.builtin.reboot over
      SSH, kswap status --wait --json, then node2 the same, the summary): both pinned on NEW,
      node2's trial only after node1's verdict; kswap.prom on each node passes promtool; a
      second run changes nothing (changed=0 on both, no reboot).
  fleet-power-cycle   one node whose trial hangs before sysinit.target (no SSH, no verdict, the
      deadline set to 7200 s through the role's kswap_config so it cannot end the hang first;
      PID 1 runs and pings the softdog the trial armed, so no watchdog ends it either): the
      reboot step times out, the role runs kswap_power_cycle_command once (qmp-reset of that
      node's socket, run on the controller), GRUB boots OLD, accept records fell-back, and the
      rollout stops with the node named as power-cycled.
  fleet-power-cycle-none   the same without a command: the rollout stops with the node down
      ("did not come back ... set kswap_power_cycle_command"), the node still hung, no reset.
  fleet-cloud-init   one node without a NIC and a NoCloud seed (an ISO labelled cidata, made
      with cloud-localds or genisoimage) with docs/cloud-init-user-data.yaml, its apt keys
      dropped (no network; kswap is in the image): runcmd's kswap apply --yes --reboot on the
      first boot, kswap-bootstrap.service after kswap-accept.service on the trial boot, the rest
      of the bootstrap only after the verdict (pinned), runcmd never again.
"""
import calendar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from vmtest import boot, common, disk, platforms  # noqa: E402

PLAYBOOK = os.path.join(SRC, "ansible", "rollout.yml")
USER_DATA = os.path.join(SRC, "docs", "cloud-init-user-data.yaml")
OLD, NEW = platforms.OLD, platforms.NEW
# Bounds for hangs, not measures (TCG on 2 shared cores: a boot 1 to 4 minutes, an apply with
# its update-grub runs 3 to 10).
BOOT_TIMEOUT = common.BOOT_TIMEOUT
PLAYBOOK_TIMEOUT = int(os.environ.get("KS_FLEET_PLAYBOOK_TIMEOUT", "5400"))
# The role's kswap_reboot_timeout: how long a node may take to answer SSH again after a reboot
# (a trial boot under TCG with the other VM busy: 2 to 5 minutes), and in the power-cycle
# scenarios how long Ansible waits for the hung node before the reset.
REBOOT_TIMEOUT = int(os.environ.get("KS_FLEET_REBOOT_TIMEOUT", "900"))
HANG_REBOOT_TIMEOUT = int(os.environ.get("KS_FLEET_HANG_TIMEOUT", "420"))
HANG_DEADLINE = 7200
READY = r"KSWAP-VM FLEET (\d+) ready"
HANG = "KSWAP-VM FLEETHANG at uptime"

# The nodes' side: the guest driver (vmtest/driver.sh) runs it with the boot number after
# "script:" on the plan disk (late in each boot: after kswap-accept.service and
# multi-user.target).
GUEST = r"""#!/bin/sh
n=$1
say() { echo "KSWAP-VM $*" > /dev/ttyS0; }
val() { head -c 65536 /dev/vdb | tr -d '\000' | sed -n "s/^$1=//p" | head -n 1; }
if [ "$n" = 1 ]; then
  if [ -n "$(val pubkey)" ]; then
    install -d -m 700 /root/.ssh
    val pubkey > /root/.ssh/authorized_keys
    chmod 600 /root/.ssh/authorized_keys
  fi
  # node_exporter's textfile directory: kswap writes kswap.prom there (kswap(8), METRICS)
  mkdir -p /var/lib/prometheus/node-exporter
  if [ "$(val hang)" = 1 ]; then
    # The trial boot (kswap.trial= on its command line) hangs before sysinit.target: no sshd,
    # no accept; PID 1 keeps running (and pinging the watchdog the trial armed).
    cat > /etc/systemd/system/kswap-vm-fleet-hang.service <<'UNIT'
[Unit]
Description=kswap fleet test: the trial boot hangs before sysinit.target
DefaultDependencies=no
ConditionKernelCommandLine=kswap.trial
Before=sysinit.target
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "KSWAP-VM FLEETHANG at uptime $(cut -d. -f1 /proc/uptime)" > /dev/ttyS0; exec sleep infinity'
TimeoutStartSec=infinity
[Install]
WantedBy=sysinit.target
UNIT
    systemctl enable kswap-vm-fleet-hang.service 2> /dev/ttyS0
  fi
  sync
fi
case $(val role) in
ssh)
  say "FLEET $n ready $(uname -r) ssh=$(systemctl is-active ssh.service) networkd=$(systemctl is-active systemd-networkd.service)" ;;
cloud)
  i=0
  while [ ! -e /var/lib/kswap-bootstrap/done ] && [ $i -lt 900 ]; do sleep 2; i=$((i + 1)); done
  say "BOOTSTRAP $n done=$(test -e /var/lib/kswap-bootstrap/done && echo yes || echo no) kernel=$(uname -r)"
  say "BOOTSTRAPLOG $n $(tr '\n' '|' < /var/log/kswap-bootstrap.log 2>/dev/null)"
  say "BOOTSTRAPUNIT $n $(systemctl show -p ActiveState -p Result -p ExecMainStatus kswap-bootstrap.service | tr '\n' ' ')"
  say "CLOUDINIT $n $(cloud-init status --long 2>&1 | tr '\n' '|')"
  say "SEM $n $(ls /var/lib/cloud/instance/sem 2>/dev/null | tr '\n' ' ')"
  say "APPLYLOG $n $(tr -d '\n' < /var/log/kswap-apply.json 2>/dev/null | head -c 3000)"
  # runcmd's apply wrote its log on boot 1 only: its time against this boot's start
  say "APPLYTIME $n $(stat -c %Y /var/log/kswap-apply.json 2>/dev/null) $(( $(date +%s) - $(cut -d. -f1 /proc/uptime) ))"
  say "DONE $n"; sync; systemctl poweroff ;;
esac
"""


class Failed(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Failed(msg)


def log(msg):
    print(f"fleet: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One VM: its own directory (serial log, overlay, plan disk, QMP socket), a boot_sequence
    in a thread, a hostfwd port on 127.0.0.1 when it has a NIC."""

    def __init__(self, work, name, img, values, nic=True, extra=(), total=7200):
        self.name, self.img, self.extra, self.total = name, img, list(extra), total
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "serial.log")
        self.qmp = os.path.join(self.dir, "qmp.sock")
        self.port = free_port() if nic else None
        self.values = values
        self.stop = threading.Event()
        self.seen = {}
        self.result = None
        self.thread = None

    def qemu_extra(self):
        x = ["-qmp", f"unix:{self.qmp},server=on,wait=off"]
        if self.port:
            x += ["-nic", "user,restrict=on,model=virtio-net-pci,"
                  f"hostfwd=tcp:127.0.0.1:{self.port}-:22"]
        return x

    def start(self, pf):
        plan = "".join(f"{k}={v}\n" for k, v in self.values.items()) + "script:\n" + GUEST

        def body():
            # boot_timeout = the whole bound: a node waits in one boot while the other's trial runs
            self.result = boot.boot_sequence(pf, self.img, plan, self.log,
                                             total_timeout=self.total, extra=self.extra,
                                             boot_timeout=self.total,
                                             watch=("KSWAP-VM STATUS 2 ",), seen=self.seen,
                                             qemu_extra=self.qemu_extra(), stop=self.stop)
        self.thread = threading.Thread(target=body, name=self.name, daemon=True)
        self.thread.start()

    def text(self):
        try:
            return open(self.log, "rb").read().decode(errors="replace")
        except OSError:
            return ""

    def loads(self):
        return re.findall(r"Loading Linux (\S+) \.\.\.", self.text())

    def wait_for(self, pattern, timeout, after=0):
        """The first match of pattern in the serial log past offset after, within timeout s."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            m = re.compile(pattern).search(self.text(), after)
            if m:
                return m
            if self.thread and not self.thread.is_alive():
                break
            time.sleep(2)
        raise Failed(f"{self.name}: no {pattern!r} on the serial line within {timeout} s "
                     f"(serial log {self.log})")

    def finish(self, timeout):
        """Wait for the VM to power off; stop it after timeout. Returns boot_sequence's why."""
        if self.thread:
            self.thread.join(timeout)
            if self.thread.is_alive():
                self.stop.set()
                self.thread.join(60)
        return self.result[1] if self.result else "no result"


def keygen(work):
    key = os.path.join(work, "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kswap-fleet-test",
                    "-f", key], check=True)
    return key, open(key + ".pub").read().strip()


SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20"]


def ssh(key, node, *cmd, timeout=120):
    return subprocess.run(["ssh", *SSH_OPTS, "-i", key, "-p", str(node.port), "root@127.0.0.1",
                           *cmd], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def inventory(work, key, nodes, hostvars=None, groupvars=None):
    """The operator's inventory: one host per node, reached at 127.0.0.1:PORT as root."""
    hosts = {n.name: dict({"ansible_port": n.port}, **((hostvars or {}).get(n.name, {})))
             for n in nodes}
    group = {
        "ansible_host": "127.0.0.1",
        "ansible_user": "root",
        "ansible_ssh_private_key_file": key,
        "ansible_ssh_common_args": " ".join(SSH_OPTS),
        "ansible_python_interpreter": "/usr/bin/python3",
        # kswap of the build is in the image, kswap-accept.service enabled there
        "kswap_install": "none",
        "kswap_plan_args": ["--kernel", NEW],
        "kswap_apply_args": ["--kernel", NEW],
        "kswap_reboot_timeout": REBOOT_TIMEOUT,
        "kswap_reboot_post_delay": 10,
        # written by the role over SSH (50-ansible.conf) on top of the image's kswap.conf
        "kswap_config": "[accept]\ntimeout = 120\n",
    }
    group.update(groupvars or {})
    path = os.path.join(work, "inventory.json")
    with open(path, "w") as f:
        json.dump({"kswap": {"hosts": hosts, "vars": group}}, f, indent=1)
    return path


def playbook(work, inv, name, extra_vars=()):
    """ansible-playbook rollout.yml as an operator runs it. (rc, output, summary, seconds)."""
    summary = os.path.join(work, f"summary-{name}.json")
    tmp = os.path.join(work, "ansible-tmp")
    os.makedirs(tmp, exist_ok=True)
    cfg = os.path.join(work, "ansible.cfg")
    with open(cfg, "w") as f:
        f.write("[defaults]\n")
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_LOCAL_TEMP=tmp, ANSIBLE_HOME=tmp, ANSIBLE_CONFIG=cfg,
               ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_LOCALHOST_WARNING="0")
    cmd = ["ansible-playbook", "-i", inv, PLAYBOOK, "-e", f"kswap_summary_file={summary}"]
    for e in extra_vars:
        cmd += ["-e", e]
    out_path = os.path.join(work, f"ansible-{name}.log")
    log(f"{name}: {' '.join(cmd)} (output {out_path})")
    t0 = time.monotonic()
    with open(out_path, "w") as out:
        try:
            p = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=work,
                               timeout=PLAYBOOK_TIMEOUT, stdin=subprocess.DEVNULL)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = None
    secs = time.monotonic() - t0
    text = open(out_path).read()
    try:
        doc = json.load(open(summary))
    except (OSError, ValueError):
        doc = None
    log(f"{name}: ansible-playbook exit {rc} in {secs:.0f} s")
    return rc, text, doc, secs


def recap(text):
    """PLAY RECAP: host -> {ok, changed, unreachable, failed, ...}."""
    out = {}
    for m in re.finditer(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", text, re.M):
        out[m.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return out


def summary_lines(text):
    """The summary task's table, as printed by the debug task."""
    m = re.search(r'TASK \[Fleet\].*?"msg": \[(.*?)\]', text, re.S)
    return [json.loads(x) for x in re.findall(r'"(?:[^"\\]|\\.)*"', m.group(1))] if m else []


def status_json(text, n=None):
    """kswap status --json the node printed at boot n (the guest driver's STATUS line; default
    the last boot that printed one)."""
    boots = boot.parse(text)[1]
    if n is None:
        n = max((k for k, b in boots.items() if b.get("status")), default=0)
    return (boots.get(n) or {}).get("status") or {}


def fleet_disk():
    pf = platforms.Platform("bookworm", "bios")
    try:
        img = disk.build_disk(pf, "fleet")
    except (subprocess.CalledProcessError, OSError) as e:
        err = getattr(e, "stderr", b"") or b""
        print(err.decode(errors="replace")[-2000:] if isinstance(err, bytes) else err)
        common.skip(f"building the fleet disk failed: {e}")
    return pf, img


def poweroff(key, nodes):
    """systemctl poweroff over SSH; a node that does not answer (hung) is stopped."""
    for n in nodes:
        if n.thread and n.thread.is_alive():
            try:
                ok = ssh(key, n, "systemctl", "poweroff", timeout=60).returncode in (0, 255)
            except subprocess.TimeoutExpired:
                ok = False
            if not ok or not n.port:
                n.stop.set()


# ---------------------------------------------------------------- scenarios
def scenario_rollout(work, pf, img, measures):
    key, pub = keygen(work)
    nodes = [Node(work, name, img, {"role": "ssh", "pubkey": pub}) for name in ("node1", "node2")]
    for n in nodes:
        n.start(pf)
    try:
        for n in nodes:
            m = n.wait_for(READY, BOOT_TIMEOUT)
            log(f"{n.name}: ready, SSH on 127.0.0.1:{n.port} ({m.group(0)})")
        inv = inventory(work, key, nodes)
        rc, text, doc, secs = playbook(work, inv, "rollout")
        measures.append(f"two-node rollout (plan on both, canary node1 then node2, each apply, "
                        f"reboot over SSH, verdict): {secs:.0f} s")
        expect(rc == 0, f"the rollout's ansible-playbook exited {rc} (log {work}/ansible-rollout.log)")
        expect(doc and doc.get("stopped") == "", f"summary: {doc}")
        lines = summary_lines(text)
        expect(lines and lines[-1] == "rollout complete", f"the summary table: {lines}")
        for n in nodes:
            r = doc["nodes"].get(n.name) or {}
            # status --wait answers once accept's pin is done (accept holds the lock from its
            # verdict through the pin): the report says pinned, and so does the node
            expect(r.get("outcome") == "trial-ok" and r.get("state") == "pinned"
                   and r.get("running") == NEW, f"{n.name}: report {r}")
            p = ssh(key, n, "kswap", "--json", "status")
            try:
                st = json.loads(p.stdout)
            except ValueError:
                st = {}
            expect(boot.journal(st) == ("pinned", "trial-ok") and st.get("running") == NEW,
                   f"{n.name}: kswap status after the rollout: {boot.journal(st)} ({p.stdout[:300]})")
            expect((r.get("old"), r.get("new")) == (OLD, NEW), f"{n.name}: old/new {r}")
            expect(not r.get("power_cycled") and not r.get("error"), f"{n.name}: report {r}")
            expect(n.loads() == [OLD, NEW], f"{n.name}: GRUB loaded {n.loads()}, expected "
                   f"[{OLD}, {NEW}]")
            # the node's own report of its trial boot (the guest driver's late phase, after accept)
            n.wait_for(r"KSWAP-VM STATUS 2 ", 600)
            st = status_json(n.text(), 2)
            expect(boot.journal(st) == ("pinned", "trial-ok"),
                   f"{n.name}: the trial boot's status {boot.journal(st)}")
        # node_exporter's textfile: kswap.prom, valid for promtool, pinned
        for n in nodes:
            p = ssh(key, n, "cat", "/var/lib/prometheus/node-exporter/kswap.prom")
            expect(p.returncode == 0 and "kswap_info{" in p.stdout,
                   f"{n.name}: no kswap.prom ({p.returncode}: {p.stderr.strip()})")
            prom = os.path.join(work, f"{n.name}.prom")
            with open(prom, "w") as f:
                f.write(p.stdout)
            if shutil.which("promtool"):
                c = subprocess.run(["promtool", "check", "metrics"], stdin=open(prom),
                                   capture_output=True, text=True)
                expect(c.returncode == 0, f"{n.name}: promtool check metrics: {c.stdout}{c.stderr}")
            expect(re.search(r'kswap_info\{[^}]*state="pinned"', p.stdout)
                   and f'running_kernel="{NEW}"' in p.stdout, f"{n.name}: kswap.prom {p.stdout}")
        # Again: nothing to do anywhere.
        rc2, text2, doc2, secs2 = playbook(work, inv, "again")
        measures.append(f"the same rollout again (both pinned, nothing to do): {secs2:.0f} s")
        expect(rc2 == 0, f"the second run exited {rc2} (log {work}/ansible-again.log)")
        rec = recap(text2)
        for n in nodes:
            expect(rec.get(n.name, {}).get("changed") == 0 and rec[n.name].get("failed") == 0,
                   f"{n.name}: the second run's recap {rec.get(n.name)}")
            r = doc2["nodes"].get(n.name) or {}
            expect(r.get("done") and r.get("reason") == "pinned before; nothing to do",
                   f"{n.name}: second report {r}")
            expect(n.loads() == [OLD, NEW], f"{n.name}: the second run rebooted: {n.loads()}")
    finally:
        poweroff(key, nodes)
        for n in nodes:
            why = n.finish(300)
            log(f"{n.name}: stopped ({why or 'powered off'}); serial log {n.log}")
    # The canary first: node2's trial kernel loaded only after node1 printed its verdict (host
    # monotonic times; boot_sequence's marks: [qemu's start, load 1, load 2, ...]).
    v1 = nodes[0].seen.get("KSWAP-VM STATUS 2 ")
    marks2 = nodes[1].seen.get("marks") or []
    expect(v1 and len(marks2) > 2 and v1[0] < marks2[2],
           f"node2's trial began before the canary's verdict ({v1}, {marks2})")
    measures.append(f"node2's trial kernel loaded {marks2[2] - v1[0]:.0f} s after the canary's "
                    "verdict")


def scenario_power_cycle(work, pf, img, measures, with_command=True):
    key, pub = keygen(work)
    node = Node(work, "node1", img, {"role": "ssh", "pubkey": pub, "hang": "1"})
    node.start(pf)
    resets = os.path.join(node.dir, "power-cycle.log")
    try:
        m = node.wait_for(READY, BOOT_TIMEOUT)
        log(f"node1: ready, SSH on 127.0.0.1:{node.port} ({m.group(0)})")
        command = ([sys.executable, os.path.abspath(__file__), "qmp-reset",
                    os.path.join(work, "{{ inventory_hostname }}", "qmp.sock")]
                   if with_command else [])
        inv = inventory(work, key, [node], groupvars={
            "kswap_reboot_timeout": HANG_REBOOT_TIMEOUT,
            "kswap_power_cycle_command": command,
            # the deadline must not end the hang before the reset (kswap.conf(5): at most 86400)
            "kswap_config": f"[accept]\ntimeout = 120\ndeadline = {HANG_DEADLINE}\n"})
        name = "power-cycle" if with_command else "no-power-cycle"
        rc, text, doc, secs = playbook(work, inv, name)
        expect(rc not in (0, None), f"ansible-playbook exited {rc}: the rollout must stop")
        expect(doc, f"no summary file (log {work}/ansible-{name}.log)")
        r = doc["nodes"].get("node1") or {}
        hang = re.search(r"KSWAP-VM FLEETHANG at uptime (\d+)", node.text())
        expect(hang, "the trial did not hang (no FLEETHANG line on the serial line)")
        at_new = node.text().find(f"Loading Linux {NEW} ")
        expect(0 <= at_new < hang.start(), "the hang was not on the trial kernel's boot")
        n_resets = len(open(resets).read().splitlines()) if os.path.exists(resets) else 0
        if not with_command:
            measures.append(f"rollout stopped with the hung node down (no power-cycle command, "
                            f"reboot timeout {HANG_REBOOT_TIMEOUT} s): {secs:.0f} s")
            expect(n_resets == 0, f"{n_resets} resets without a command")
            expect("did not come back" in r.get("error", "")
                   and "kswap_power_cycle_command" in r.get("error", ""), f"report {r}")
            expect(not r.get("power_cycled"), f"report {r}")
            expect(doc.get("stopped", "").startswith("canary node1:"), f"summary {doc}")
            # still hung: nothing loaded after the trial kernel
            expect(node.loads() == [OLD, NEW], f"GRUB loaded {node.loads()}: the node came back "
                   "by itself")
            expect("reboot: " not in node.text()[hang.end():], "the guest rebooted itself")
            return
        measures.append(f"power-cycle path (apply, reboot, {HANG_REBOOT_TIMEOUT} s without an "
                        f"answer, the reset, the old kernel's boot, the verdict): {secs:.0f} s")
        expect(n_resets == 1, f"the power-cycle command ran {n_resets} times, expected once")
        expect(node.loads() == [OLD, NEW, OLD], f"GRUB loaded {node.loads()}, expected "
               f"[{OLD}, {NEW}, {OLD}]")
        # Nobody in the guest ended the hang: no kernel "reboot:" between it and the reset.
        seg = node.text()[hang.end():node.text().find(f"Loading Linux {OLD} ", hang.end())]
        expect("reboot: " not in seg, f"the guest rebooted itself: {seg[-600:]!r}")
        expect(r.get("power_cycled") is True and r.get("outcome") == "fell-back"
               and r.get("running") == OLD, f"report {r}")
        stopped = doc.get("stopped", "")
        expect(stopped.startswith("canary node1: fell-back") and "power-cycled" in stopped,
               f"summary stop {stopped!r}")
        lines = summary_lines(text)
        expect(any(ln.startswith("node1") and "power-cycled;" in ln for ln in lines)
               and lines[-1].startswith("rollout stopped: canary node1"), f"summary {lines}")
        st = status_json(node.text())
        reason = ((st.get("journal") or {}).get("reason") or "")
        expect(boot.journal(st)[1] == "fell-back", f"journal on OLD {boot.journal(st)} {reason}")
    finally:
        if not with_command:
            node.stop.set()  # still hung: nothing answers
        poweroff(key, [node])
        why = node.finish(300)
        log(f"node1: stopped ({why or 'powered off'}); serial log {node.log}")
    if with_command:
        # qmp-reset logs CLOCK_MONOTONIC, boot_sequence's marks are the same clock
        t_reset = float(open(resets).read().split()[0])
        marks = node.seen.get("marks") or []
        if len(marks) > 3:
            measures.append(f"from the reset to GRUB loading the old kernel: "
                            f"{marks[3] - t_reset:.0f} s")


def scenario_cloud_init(work, pf, img, measures):
    import yaml
    doc = yaml.safe_load(open(USER_DATA))
    # No network in the VM and kswap of the build in the image: the example's apt part goes.
    for k in ("apt", "packages", "package_update", "package_upgrade"):
        doc.pop(k, None)
    # ... and the line that fetches the operator's kswap .deb (the image has the build's).
    doc["runcmd"] = [c for c in doc["runcmd"] if "kswap.deb" not in str(c)]
    # Nor a XanMod repository: apply names the VM's NEW, installed already (one place only).
    applies = 0
    for i, cmd in enumerate(doc["runcmd"]):
        words = cmd if isinstance(cmd, list) else [cmd]
        hit = [w for w in words if "apply --yes --reboot" in w]
        applies += len(hit)
        doc["runcmd"][i] = ([w.replace("apply --yes --reboot", f"apply --kernel {NEW} --yes --reboot")
                             for w in words] if isinstance(cmd, list) else
                            cmd.replace("apply --yes --reboot", f"apply --kernel {NEW} --yes --reboot"))
    expect(applies == 1, f"{USER_DATA}: {applies} runcmd lines with 'apply --yes --reboot'")
    seed_dir = os.path.join(work, "seed")
    os.makedirs(seed_dir, exist_ok=True)
    ud, md = os.path.join(seed_dir, "user-data"), os.path.join(seed_dir, "meta-data")
    with open(ud, "w") as f:
        f.write("#cloud-config\n" + yaml.safe_dump(doc, sort_keys=False))
    with open(md, "w") as f:
        f.write("instance-id: kswap-fleet-bootstrap-1\nlocal-hostname: node-new\n")
    seed = os.path.join(work, "seed.img")
    if shutil.which("cloud-localds"):
        subprocess.run(["cloud-localds", seed, ud, md], check=True)
    elif shutil.which("genisoimage"):
        subprocess.run(["genisoimage", "-quiet", "-output", seed, "-volid", "cidata", "-joliet",
                        "-rock", ud, md], check=True)
    else:
        common.skip("neither cloud-localds (cloud-image-utils) nor genisoimage")
    node = Node(work, "node1", img, {"role": "cloud"}, nic=False, extra=[seed], total=5400)
    t0 = time.monotonic()
    node.start(pf)
    why = node.finish(5400)
    secs = time.monotonic() - t0
    measures.append(f"cloud-init bootstrap (first boot with apply, the trial, the verdict, the "
                    f"rest of the bootstrap): {secs:.0f} s")
    text = node.text()
    expect(why is None, f"the VM did not power off: {why}")
    expect(node.loads() == [OLD, NEW], f"GRUB loaded {node.loads()}, expected [{OLD}, {NEW}]")
    grub, boots = boot.parse(text)
    last = boots.get(2) or {}
    expect(boot.journal(last.get("status")) == ("pinned", "trial-ok"),
           f"the trial boot's status {boot.journal(last.get('status'))}")
    fields = dict(re.findall(r"KSWAP-VM (BOOTSTRAP|BOOTSTRAPLOG|BOOTSTRAPUNIT|CLOUDINIT|SEM|"
                             r"APPLYTIME|APPLYLOG) 2 (.*)", text))
    expect(fields.get("BOOTSTRAP", "").startswith(f"done=yes kernel={NEW}"),
           f"the bootstrap's end: {fields.get('BOOTSTRAP')}")
    blog = fields.get("BOOTSTRAPLOG", "").split("|")
    verdict = [i for i, ln in enumerate(blog) if "pinned" in ln]
    rest = [i for i, ln in enumerate(blog) if "the rest of the bootstrap" in ln]
    expect(verdict and rest and verdict[0] < rest[0], f"bootstrap log {blog}")
    expect(NEW in blog[rest[0]], f"the rest ran on {blog[rest[0]]}")
    # runcmd ran once: its semaphore is there, and apply's log is from before this boot
    expect("config_scripts_user" in fields.get("SEM", ""), f"semaphores {fields.get('SEM')}")
    t_apply = fields.get("APPLYTIME", "").split()
    expect(len(t_apply) == 2 and int(t_apply[0]) < int(t_apply[1]),
           f"runcmd's apply log is not from boot 1: {fields.get('APPLYTIME')}")
    # apply --json --reboot prints the state journal as armed (then the node reboots)
    expect('"state":"armed"' in fields.get("APPLYLOG", "").replace(" ", ""),
           f"runcmd's apply: {fields.get('APPLYLOG', '')[:600]}")
    expect("status: done" in fields.get("CLOUDINIT", ""), f"cloud-init {fields.get('CLOUDINIT')}")
    # the rest after the verdict: its time not before accept's
    outcome_at = ((last.get("status") or {}).get("journal") or {}).get("outcome_at")
    m = re.search(r"at (\d+)", blog[rest[0]])
    if outcome_at and m:
        t_out = calendar.timegm(time.strptime(outcome_at, "%Y-%m-%dT%H:%M:%SZ"))
        expect(int(m.group(1)) >= t_out - 1, f"the rest ran at {m.group(1)}, the verdict at "
               f"{outcome_at}")
    log(f"cloud-init bootstrap: ok; serial log {node.log}")


SCENARIOS = {
    "fleet-rollout": (2, scenario_rollout),
    "fleet-power-cycle": (1, scenario_power_cycle),
    "fleet-power-cycle-none": (1, lambda w, p, i, m: scenario_power_cycle(w, p, i, m, False)),
    "fleet-cloud-init": (1, scenario_cloud_init),
}


def qmp_reset(sock):
    """system_reset through qemu's QMP socket; one line per reset in power-cycle.log beside it.
    Under the harness's -no-reboot, qemu ends on the reset and boot_sequence starts it again
    cold: the same path as every guest reboot (README: warm resets under TCG failed)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sock)
    f = s.makefile("rw")
    json.loads(f.readline())  # the greeting
    for cmd in ("qmp_capabilities", "system_reset"):
        f.write(json.dumps({"execute": cmd}) + "\n")
        f.flush()
        while True:
            msg = json.loads(f.readline())
            if "return" in msg or "error" in msg:
                break
        if "error" in msg:
            print(f"qmp {cmd}: {msg['error']}", file=sys.stderr)
            return 1
    with open(os.path.join(os.path.dirname(sock), "power-cycle.log"), "a") as out:
        out.write(f"{time.monotonic():.1f} system_reset {sock}\n")
    print(f"system_reset sent to {sock}")
    return 0


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "qmp-reset":
        return qmp_reset(args[1])
    if not args or args[0] != "run" or not all(a in SCENARIOS for a in args[1:]):
        print(__doc__)
        return 2
    common.prerequisites()
    for tool in ("ansible-playbook", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            common.skip(f"{tool} not found (apt-get install ansible-core openssh-client)")
    pf, img = fleet_disk()
    failed = []
    for name in args[1:] or list(SCENARIOS):
        work = os.path.join(os.environ.get("KS_VM_WORK") or tempfile.mkdtemp(prefix="kswap-fleet-"),
                            name)
        os.makedirs(work, exist_ok=True)
        measures = []
        t0 = time.monotonic()
        try:
            SCENARIOS[name][1](work, pf, img, measures)
            print(f"ok {name}: {time.monotonic() - t0:.0f} s; logs in {work}", flush=True)
        except Failed as e:
            failed.append(name)
            print(f"FAIL {name}: {e}\n  logs in {work}", flush=True)
        for ln in measures:
            print(f"  measured: {ln}", flush=True)
    print(f"fleet: {len(args[1:]) - len(failed)}/{len(args[1:])} passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
