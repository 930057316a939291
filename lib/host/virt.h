/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "lib/basic/root.h"

/*
 * Virtualization the way systemd-detect-virt decides it (src/basic/virt.c): containers first,
 * then VMs. Returns the systemd-detect-virt word in *ret_word ("kvm", "amazon", "qemu",
 * "vmware", "microsoft", "xen", "oracle", "none", "openvz", "lxc", "lxc-libvirt", "docker",
 * "podman", "systemd-nspawn", "wsl", ...). With a root that is not the host, only files count;
 * KVM is then recognised from DMI prefixes (KVM, OpenStack, KubeVirt) or, for another DMI
 * vendor (QEMU, a hoster's name), from the cpuinfo "hypervisor" flag together with kvm-clock
 * in the available clocksources. *ret_evidence says what decided it, for people.
 */
int ks_virt_detect(const ks_root *root, char **ret_word, char **ret_evidence);
bool ks_virt_is_container(const char *word);
bool ks_virt_is_kvm(const char *word); /* kvm, or amazon (Nitro is KVM-based) */
