# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver's package set for the nvidia_packages engine (module_utils/_controller/driver_set.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: driver_set
short_description: The NVIDIA driver's package set for a version, flavour and scope
version_added: "0.1.0"
description:
  - Returns the packages to install, the pin selectors, the set's members and what to remove, for
    M(gpufleet.stack.nvidia_packages). Fabric Manager and companions follow the branch's naming
    (C(nvidia-fabricmanager-570) below 580, C(nvidia-fabricmanager) from 580).
options:
  channel:
    description: C(network) (NVIDIA's repository) or C(distro) (Debian's non-free packages).
    type: str
    default: network
  packages:
    description: With C(distro), the packages to install (nvidia-smi, libnvidia-ml1, libcuda1).
    type: list
    elements: str
  kernel:
    description: With C(distro), also the kernel module package.
    type: bool
    default: false
  _input:
    description: The driver version or branch (C(570.133.20), C(580)).
    type: str
    required: true
  flavor:
    description: C(open) or C(proprietary) kernel modules.
    type: str
    default: open
  scope:
    description: C(compute) (headless, no X or GL) or C(full).
    type: str
    default: compute
  fabricmanager:
    description: Install Fabric Manager and its companions.
    type: bool
    default: false
  imex:
    description: Also install nvidia-imex (multi-node NVLink).
    type: bool
    default: false
"""

EXAMPLES = r"""
driver: "{{ '570.133.20' | gpufleet.stack.driver_set(flavor='open', fabricmanager=true) }}"
"""

RETURN = r"""
_value:
  description: C(branch), C(packages), C(reference), C(pin), C(members), C(remove), C(fabric).
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_set import driver_set


class FilterModule:
    def filters(self):
        return {"driver_set": driver_set}
