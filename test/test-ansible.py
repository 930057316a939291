#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ansible/rollout.yml with Debian's ansible-playbook against copies of a fixture root: three
hosts with a local connection, --root per host (kswap_root), the fakes of test/fakes first on
PATH, apply from the "repository" (fake apt-get with KSWAP_FAKE_DEBS, the shipped key) and the
reboot step replaced by test/ansible/simulate-reboot.yml. Exit 77 without ansible-playbook.
Usage: test-ansible.py KSWAP [SCENARIO...]"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import kstest
from kstest import NEW, NEW_PATH, OLD, OLD_PATH, check

exe = os.path.abspath(sys.argv[1])
only = sys.argv[2:]
src = kstest.SRC
playbook = shutil.which("ansible-playbook")
if not playbook:
    print("ansible-playbook not found (apt-get install ansible-core): skipped")
    sys.exit(77)
for tool in ("grub-editenv", "depmod", "dpkg-deb"):
    if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
        print(f"{tool} not found: skipped")
        sys.exit(77)

fakes = kstest.FAKES
roots = kstest.ROOTS
key = kstest.XANMOD_KEY
work = tempfile.mkdtemp(prefix="kswap-ansible.")

CONF = f"""[repository]
key = {key}
[accept]
timeout = 3
interval = 1
"""
UNHEALTHY = CONF + "services = xray.service\n"


def grubenv(root):
    p = subprocess.run(["grub-editenv", os.path.join(root, "boot/grub/grubenv"), "list"],
                       capture_output=True, text=True)
    return dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)


def journal(root):
    f = os.path.join(root, "var/lib/kswap/state.json")
    return json.load(open(f)) if os.path.exists(f) else {}


debs = os.path.join(work, "debs")
os.makedirs(debs)
subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW,
                os.path.join(debs, "linux-xanmod-lts-x64v3.deb"), "--package",
                "linux-xanmod-lts-x64v3", "--bbr", "builtin"], check=True, capture_output=True)
path = fakes + ":" + os.environ["PATH"]


def run(name, hosts, extra=(), again=False):
    """hosts: [(name, fixture, config, hostvars)]. Returns (process, summary, {host: root}).
    again: run once more over the roots of the run called name."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=again)
    if again:
        os.remove(os.path.join(d, "summary.json"))
    inv = {"kswap": {"hosts": {}, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "kswap_install": "none", "kswap_command": exe,
        "kswap_environment": {"PATH": path, "KSWAP_FAKE_DEBS": debs, "NO_COLOR": "1"},
        "kswap_reboot_tasks": os.path.join(src, "test", "ansible", "simulate-reboot.yml"),
        "kswap_status_timeout": 60, "kswap_reboot_post_delay": 0}}}
    rootmap = {}
    for h, fixture, conf, hv in hosts:
        r = os.path.join(d, h)
        if not again:
            shutil.copytree(os.path.join(roots, fixture, "root"), r, symlinks=True)
            if hv.get("sim_break_unit"):
                # runs on the old kernel (apply's checklist passes there), fails on the trial
                os.makedirs(os.path.join(r, "run/fake-units"), exist_ok=True)
                with open(os.path.join(r, "run/fake-units", hv["sim_break_unit"]), "w") as f:
                    f.write("active\n")
        rootmap[h] = r
        inv["kswap"]["hosts"][h] = dict(kswap_root=r, kswap_config=conf, **hv)
    with open(os.path.join(d, "inventory.json"), "w") as f:
        json.dump(inv, f)
    summary = os.path.join(d, "summary.json")
    tmp = os.path.join(d, "ansible-tmp")
    cfg = os.path.join(d, "ansible.cfg")
    with open(cfg, "w") as f:
        f.write("[defaults]\nstdout_callback = default\n")
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_LOCAL_TEMP=tmp, ANSIBLE_REMOTE_TEMP=tmp, ANSIBLE_HOME=tmp,
               ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_CONFIG=cfg,
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_LIBRARY=os.path.join(src, "test", "ansible", "library"))
    t0 = time.time()
    p = subprocess.run([playbook, "-i", os.path.join(d, "inventory.json"),
                        os.path.join(src, "ansible", "rollout.yml"),
                        "-e", "kswap_summary_file=" + summary, *extra],
                       capture_output=True, text=True, env=env, timeout=900)
    print(f"---- {name}: ansible-playbook exit {p.returncode} in {time.time() - t0:.1f} s")
    if os.environ.get("KS_ANSIBLE_SHOW"):
        print(p.stdout + p.stderr)
    doc = json.load(open(summary)) if os.path.exists(summary) else None
    return p, doc, rootmap


def out(p):
    return p.stdout[-6000:] + p.stderr[-2000:]


def untouched(root):
    return journal(root).get("state") in (None, "idle") and "next_entry" not in grubenv(root)


def scenario(name):
    return not only or name in only


if scenario("all-pass"):
    p, s, r = run("all-pass", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                               ("node2", "ubuntu-24.04-kvm", CONF, {}),
                               ("node3", "ubuntu-24.04-kvm", CONF, {})],
                  ["-e", "kswap_canary=node2", "-e", "kswap_serial=2"])
    check(p.returncode == 0, "three healthy nodes: ansible-playbook exit 0", out(p))
    nodes = (s or {}).get("nodes", {})
    check(s and not s["stopped"] and all(nodes.get(h, {}).get("outcome") == "trial-ok" for h in r),
          "summary: every node trial-ok", s)
    check(all(nodes.get(h, {}).get("old") == OLD and nodes.get(h, {}).get("new") == NEW for h in r),
          "summary names the old and new kernels", s)
    for h, root in r.items():
        e, j = grubenv(root), journal(root)
        check(e.get("saved_entry") == NEW_PATH and "next_entry" not in e and j.get("state") == "pinned",
              f"{h}: pinned, saved_entry = new kernel", (e, j.get("state")))
    f = os.path.join(r["node1"], "var/log/fake-apt.log")
    log = open(f).read() if os.path.exists(f) else ""
    check("install" in log and "linux-xanmod-lts-x64v3" in log, "apply installed the repository package", log)
    check(os.path.exists(os.path.join(r["node1"], "etc/kswap/kswap.conf.d/50-ansible.conf")),
          "the role wrote the kswap.conf drop-in")
    order = [l.split()[1] for l in p.stdout.splitlines() if l.startswith("PLAY [")]
    check("canary" in p.stdout and p.stdout.index("PLAY [kswap canary]") < p.stdout.index("PLAY [kswap batches]"),
          "canary play before the batches", order)
    canary = p.stdout.split("PLAY [kswap canary]")[1].split("PLAY [")[0]
    check("node2" in canary and "node1" not in canary and "node3" not in canary,
          "kswap_canary=node2 runs alone in the canary play", canary[-2000:])
    check("trial-ok" in p.stdout and "rollout complete" in p.stdout, "summary table printed", p.stdout[-3000:])
    before = log
    p, s, r = run("all-pass", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                               ("node2", "ubuntu-24.04-kvm", CONF, {}),
                               ("node3", "ubuntu-24.04-kvm", CONF, {})],
                  ["-e", "kswap_canary=node2", "-e", "kswap_serial=2"], again=True)
    nodes = (s or {}).get("nodes", {})
    check(p.returncode == 0 and all(nodes.get(h, {}).get("done") for h in r),
          "the same rollout again: every node is done already, exit 0", out(p))
    check(open(f).read() == before and all(journal(root).get("state") == "pinned" for root in r.values()),
          "... nothing applied a second time", open(f).read())

if scenario("second-release"):
    # Day two: after a first rollout (all on NEW), apt's lists of node1 and node2 have the
    # metapackage that brings NEW2; node3's lists still end at NEW. The same playbook moves
    # node1 (the canary: the first node with work) and node2 from NEW to NEW2 through the
    # trial path; node3 is unchanged and not rebooted. The summary says from, to, outcome.
    NEW2 = NEW.replace("6.18.45", "6.18.50")
    hosts = [("node1", "ubuntu-24.04-kvm", CONF, {}), ("node2", "ubuntu-24.04-kvm", CONF, {}),
             ("node3", "ubuntu-24.04-kvm", CONF, {})]
    p, s, r = run("second-release", hosts)
    check(p.returncode == 0 and all(journal(root).get("new_kernel") == NEW for root in r.values()),
          "first rollout: every node on NEW", out(p))
    debs2 = os.path.join(work, "debs2")
    os.makedirs(debs2)
    subprocess.run(["bash", os.path.join(fakes, "make-kernel-deb.sh"), NEW2,
                    os.path.join(debs2, "linux-xanmod-lts-x64v3.deb"), "--package",
                    "linux-xanmod-lts-x64v3", "--version", "2", "--bbr", "builtin"],
                   check=True, capture_output=True)  # version 2 as the lists say: apt (and the
    # fake) does not reinstall the installed 1.0
    index = "var/lib/apt/lists/deb.xanmod.org_dists_noble_main_binary-amd64_Packages"
    for h, newest, version in (("node1", NEW2, "2"), ("node2", NEW2, "2"), ("node3", NEW, "1")):
        os.makedirs(os.path.dirname(os.path.join(r[h], index)), exist_ok=True)
        with open(os.path.join(r[h], index), "w") as f:
            f.write(f"Package: linux-xanmod-lts-x64v3\nVersion: {version}\nDepends: linux-image-{newest}\n\n")
    boot3 = open(os.path.join(r["node3"], "proc/sys/kernel/random/boot_id")).read()
    j3 = journal(r["node3"])
    env2 = {"PATH": path, "KSWAP_FAKE_DEBS": debs2, "NO_COLOR": "1"}
    p, s, r = run("second-release", [(h, f, c, {"kswap_environment": env2}) for h, f, c, _ in hosts],
                  again=True)
    nodes = (s or {}).get("nodes", {})
    check(p.returncode == 0 and s and not s["stopped"], "second rollout: exit 0", out(p))
    for h in ("node1", "node2"):
        n, j, e = nodes.get(h, {}), journal(r[h]), grubenv(r[h])
        check(n.get("from") == NEW and n.get("to") == NEW2 and n.get("outcome") == "trial-ok",
              f"{h}: summary from NEW to NEW2, trial-ok", n)
        check(j.get("state") == "pinned" and j.get("old_kernel") == NEW and j.get("new_kernel") == NEW2
              and e.get("saved_entry") == NEW_PATH.replace(NEW, NEW2) and "next_entry" not in e,
              f"{h}: pinned NEW2 after its trial, NEW the way back", (j.get("state"), e))
    n3 = nodes.get("node3", {})
    check(n3.get("outcome") == "unchanged" and n3.get("from") == NEW and n3.get("to") == NEW,
          "node3: unchanged, from NEW to NEW", n3)
    check(open(os.path.join(r["node3"], "proc/sys/kernel/random/boot_id")).read() == boot3
          and journal(r["node3"]) == j3, "node3: not rebooted, journal untouched")
    canary = p.stdout.split("PLAY [kswap canary]")[1].split("PLAY [")[0]
    check("node1" in canary and "node3" not in canary, "the canary is the first node with work",
          canary[-1500:])
    check(any(l.split()[:5] == ["node1", "warn", NEW, NEW2, "trial-ok"] for l in p.stdout.replace('"', " ").splitlines()
              if l.strip().startswith("node1")), "the table: node, plan, from, to, outcome", p.stdout[-3000:])

if scenario("blocked"):
    p, s, r = run("blocked", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                              ("node2", "ubuntu-24.04-kvm", CONF, {}),
                              ("node3", "boot-btrfs", CONF, {})])
    check(p.returncode != 0 and "node3" in p.stdout and "grub.env-unwritable" in p.stdout,
          "one blocked node: stops at plan, names the node and the finding", out(p))
    check(all(untouched(root) for root in r.values()), "nothing applied anywhere",
          {h: journal(root).get("state") for h, root in r.items()})

if scenario("canary-fails"):
    p, s, r = run("canary-fails", [("node1", "ubuntu-24.04-kvm", UNHEALTHY,
                                    {"sim_break_unit": "xray.service"}),
                                   ("node2", "ubuntu-24.04-kvm", CONF, {}),
                                   ("node3", "ubuntu-24.04-kvm", CONF, {})])
    nodes = (s or {}).get("nodes", {})
    check(p.returncode != 0 and nodes.get("node1", {}).get("outcome") == "health-failed",
          "canary health-failed: rollout fails, summary says health-failed", out(p))
    check(s and "canary node1" in s["stopped"] and "rollout stopped" in p.stdout, "stop reason names the canary", s)
    check(untouched(r["node2"]) and untouched(r["node3"]), "node2 and node3 never applied",
          {h: journal(root).get("state") for h, root in r.items()})
    e = grubenv(r["node1"])
    check(e.get("saved_entry") == OLD_PATH and "next_entry" not in e, "canary: old kernel is the default again", e)
    check("reboot" in (open(os.path.join(r["node1"], "run/fake-reboot-requested")).read()
                       if os.path.exists(os.path.join(r["node1"], "run/fake-reboot-requested")) else ""),
          "accept asked for the one reboot back to the old kernel")

if scenario("batch-fell-back"):
    p, s, r = run("batch-fell-back", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                                      ("node2", "ubuntu-24.04-kvm", CONF, {"sim_trial_dies": True}),
                                      ("node3", "ubuntu-24.04-kvm", CONF, {}),
                                      ("node4", "ubuntu-24.04-kvm", CONF, {})],
                  ["-e", "kswap_serial=1", "-e", "kswap_max_fail_percentage=50"])
    nodes = (s or {}).get("nodes", {})
    check(p.returncode != 0 and nodes.get("node1", {}).get("outcome") == "trial-ok"
          and nodes.get("node2", {}).get("outcome") == "fell-back",
          "node2 fell back: canary node1 trial-ok, node2 fell-back, exit non-zero", out(p))
    check(untouched(r["node3"]) and untouched(r["node4"]) and not nodes.get("node3", {}).get("outcome"),
          "the batches after the fall-back never started", {h: journal(root).get("state") for h, root in r.items()})
    check(s and "node2: fell-back" in s["stopped"], "stop reason names node2", s)

if scenario("batch-error"):
    bad_env = {"PATH": path, "KSWAP_FAKE_DEBS": debs, "NO_COLOR": "1", "KSWAP_FAKE_APT_FAIL": "install"}
    p, s, r = run("batch-error", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                                  ("node2", "ubuntu-24.04-kvm", CONF, {"kswap_environment": bad_env}),
                                  ("node3", "ubuntu-24.04-kvm", CONF, {}),
                                  ("node4", "ubuntu-24.04-kvm", CONF, {})],
                  ["-e", "kswap_serial=2", "-e", "kswap_max_fail_percentage=50"])
    nodes = (s or {}).get("nodes", {})
    check(nodes.get("node2", {}).get("error") and not nodes.get("node2", {}).get("outcome"),
          "apply error on node2 is recorded in the summary", s)
    check(s and not s["stopped"] and all(nodes.get(h, {}).get("outcome") == "trial-ok" for h in ("node1", "node3", "node4")),
          "1 error in a batch of 2 with max_fail_percentage=50: the rollout goes on", s)
    check(p.returncode != 0 and "with errors" in p.stdout, "... but the playbook fails at the end, naming the errors",
          out(p))
    p, s, r = run("batch-error-0", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                                    ("node2", "ubuntu-24.04-kvm", CONF, {"kswap_environment": bad_env}),
                                    ("node3", "ubuntu-24.04-kvm", CONF, {}),
                                    ("node4", "ubuntu-24.04-kvm", CONF, {})],
                  ["-e", "kswap_serial=2"])
    check(s and "errors on node2" in s["stopped"] and untouched(r["node4"]),
          "max_fail_percentage 0 (default): the batch with the error stops the rollout", s)


def power_cycle_argv(root):
    """kswap_power_cycle_command for a fixture root, with the host name left for Ansible."""
    return ["env", "PATH=" + path, "bash", os.path.join(src, "test", "ansible", "power-cycle.sh"),
            "{{ inventory_hostname }}", root, exe]


def resets(root):
    f = os.path.join(root, "var/log/sim-power-cycle.log")
    return open(f).read().split() if os.path.exists(f) else []


if scenario("canary-hangs"):
    d = os.path.join(work, "canary-hangs")
    cmd = power_cycle_argv(os.path.join(d, "node1"))
    p, s, r = run("canary-hangs", [("node1", "ubuntu-24.04-kvm", CONF,
                                    {"sim_trial_hangs": True, "kswap_power_cycle_command": cmd}),
                                   ("node2", "ubuntu-24.04-kvm", CONF, {}),
                                   ("node3", "ubuntu-24.04-kvm", CONF, {})])
    nodes = (s or {}).get("nodes", {})
    n1 = nodes.get("node1", {})
    check(resets(r["node1"]) == ["node1"], "the hung canary was power-cycled exactly once, its name templated",
          resets(r["node1"]))
    check(n1.get("power_cycled") and n1.get("outcome") == "fell-back" and n1.get("running") == OLD,
          "after the reset: verdict read on the old kernel (fell-back), power_cycled in the report", n1)
    check(p.returncode != 0 and s and s["stopped"] == "canary node1: fell-back (power-cycled: no answer after the trial reboot)",
          "the rollout stops naming the canary and the power-cycle", s)
    check("power-cycled;" in p.stdout, "the summary table's detail says power-cycled", p.stdout[-3000:])
    check(untouched(r["node2"]) and untouched(r["node3"]), "node2 and node3 never applied",
          {h: journal(root).get("state") for h, root in r.items()})
    e = grubenv(r["node1"])
    check(e.get("saved_entry") == OLD_PATH and "next_entry" not in e, "node1: GRUB's default is the old kernel", e)

if scenario("hangs-no-command"):
    p, s, r = run("hangs-no-command", [("node1", "ubuntu-24.04-kvm", CONF, {"sim_trial_hangs": True}),
                                       ("node2", "ubuntu-24.04-kvm", CONF, {})])
    n1 = (s or {}).get("nodes", {}).get("node1", {})
    check(p.returncode != 0 and "did not come back" in n1.get("error", "")
          and "kswap_power_cycle_command" in n1.get("error", "") and not n1.get("power_cycled"),
          "no power-cycle command: the error says the node is down and what to set", n1)
    check(s and "canary node1" in s["stopped"] and untouched(r["node2"]), "the rollout stops at the canary", s)
    check(resets(r["node1"]) == [], "nothing reset the node")

if scenario("reboot-command-fails"):
    # The reboot command failed (no D-Bus for `shutdown -r 0`): the node never went down; it is
    # not hung, so no power-cycle even with a command set, and the trial stays armed.
    d = os.path.join(work, "reboot-command-fails")
    p, s, r = run("reboot-command-fails", [("node1", "ubuntu-24.04-kvm", CONF,
                                            {"sim_reboot_command_fails": True,
                                             "kswap_power_cycle_command": power_cycle_argv(os.path.join(d, "node1"))}),
                                           ("node2", "ubuntu-24.04-kvm", CONF, {})])
    n1 = (s or {}).get("nodes", {}).get("node1", {})
    check(resets(r["node1"]) == [], "a failed reboot command is not a hang: nothing reset the node",
          resets(r["node1"]))
    check(p.returncode != 0 and "did not reboot" in n1.get("error", "") and "Failed to connect to bus" in n1.get("error", "")
          and not n1.get("power_cycled"), "the error says the node did not reboot and why", n1)
    check(s and "canary node1" in s["stopped"] and untouched(r["node2"]), "the rollout stops at the canary", s)
    check(journal(r["node1"]).get("state") == "armed", "node1's trial stays armed", journal(r["node1"]))

if scenario("batch-hangs"):
    d = os.path.join(work, "batch-hangs")
    line = " ".join(power_cycle_argv(os.path.join(d, "node2")))
    p, s, r = run("batch-hangs", [("node1", "ubuntu-24.04-kvm", CONF, {}),
                                  ("node2", "ubuntu-24.04-kvm", CONF,
                                   {"sim_trial_hangs": True, "kswap_power_cycle_command": line}),
                                  ("node3", "ubuntu-24.04-kvm", CONF, {})],
                  ["-e", "kswap_serial=1", "-e", "kswap_max_fail_percentage=50"])
    nodes = (s or {}).get("nodes", {})
    check(resets(r["node2"]) == ["node2"], "a command line as kswap_power_cycle_command: run once", resets(r["node2"]))
    check(nodes.get("node2", {}).get("power_cycled") and nodes.get("node2", {}).get("outcome") == "fell-back",
          "node2 came back on the old kernel", nodes.get("node2"))
    check(s and "node2: fell-back (power-cycled)" in s["stopped"] and untouched(r["node3"]),
          "the batch with the power-cycled node stops the rollout", s)

shutil.rmtree(work, ignore_errors=True) if not kstest.failed else print("work dir kept: " + work)
print(f"{kstest.failed} failed")
sys.exit(1 if kstest.failed else 0)
