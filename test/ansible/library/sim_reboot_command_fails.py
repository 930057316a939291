#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Test module (test/test-ansible.py, ANSIBLE_LIBRARY): fails as ansible.builtin.reboot does
# when the reboot command itself fails on the node (seen on a Debian 12 VM without D-Bus:
# `shutdown -r 0` -> "Failed to connect to bus"): rebooted false, the node never went down.
from ansible.module_utils.basic import AnsibleModule


def main():
    m = AnsibleModule(argument_spec={"error": {"type": "str", "required": True}})
    m.fail_json(msg="Reboot command failed. Error was: '" + m.params["error"] + ", '",
                rebooted=False, changed=False, elapsed=0)


if __name__ == "__main__":
    main()
