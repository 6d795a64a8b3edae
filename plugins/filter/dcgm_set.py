# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM's package set for the nvidia_packages engine (module_utils/_controller/dcgm_set.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: dcgm_set
short_description: NVIDIA DCGM's package set for a version, driver and GPUs
version_added: "0.1.0"
description:
  - Returns the packages to install (C(datacenter-gpu-manager-4-core) and the build for the driver's CUDA major),
    the pin selectors and what to remove, for M(gpufleet.stack.nvidia_packages).
  - GPUs before Turing on a 580 driver take the cuda12 build, as NVIDIA advises.
options:
  _input:
    description: The DCGM version (C(4.4.1)).
    type: str
    required: true
  driver:
    description: The driver version or branch (C(580.95.05), C(570)); its CUDA major picks the build.
    type: str
    default: ""
  cuda:
    description: The CUDA major of the build, overriding the driver's (C(12), C(13)).
    type: str
    default: ""
  gpus:
    description: The node's GPUs (C(gpufleet_stack.gpu)); compute capabilities (C(7.0)) and C(sm_70) count.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
dcgm: "{{ '4.4.1' | gpufleet.stack.dcgm_set(driver='580.95.05') }}"
"""

RETURN = r"""
_value:
  description: C(packages), C(reference), C(pin), C(remove), C(cuda), C(reason).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.dcgm_set import DcgmSetError, dcgm_set


def dcgm_set_filter(version, driver="", cuda="", gpus=()):
    listed = [gpus] if isinstance(gpus, (str, float, int)) else gpus or ()
    try:
        return dcgm_set(str(version), str(driver or ""), str(cuda or ""), [str(g) for g in listed])
    except DcgmSetError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    def filters(self):
        return {"dcgm_set": dcgm_set_filter}
