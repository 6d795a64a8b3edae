#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather NVIDIA GPU, driver and health facts through NVML
version_added: "0.1.0"
description:
  - Reports, under C(ansible_facts['gpufleet_gpu']), the driver state (not installed, installed but not
    loaded, library/kernel module mismatch, loaded), driver, CUDA driver and NVML versions, the kernel module
    flavor, whether nouveau is loaded, the NVIDIA PCI functions seen in sysfs even with no driver, whether
    NVSwitch chips are present (and so Fabric Manager is required), per-GPU facts, GPU topology,
    GPU Feature Discovery style labels and a list of health findings.
  - Queries NVML through the C(pynvml) module (PyPI C(nvidia-ml-py)) on the managed host.
  - Never calls C(nvmlInit) when the nvidia kernel module is not loaded (neither C(/sys/module/nvidia) nor
    C(/proc/driver/nvidia/version) exists), because the real library, run as root, would create
    C(/dev/nvidiactl). The library is only C(dlopen)ed to learn whether it exists; the gpufleet NVML simulator
    (C(sandbox/nvml-sim)) is recognised by its exported marker symbol and always initialised.
  - Under the simulator, the host facts (kernel module, nouveau, PCI functions, Xid lines) come from the
    profile's C(host) object, and C(simulated) is true.
  - A missing C(pynvml), a missing library, a driver that is not loaded or a query a card does not support
    give facts (with C(null) for unsupported fields), never a failure.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  temperature_threshold:
    description:
      - GPU temperature in degrees Celsius at or over which a C(warning) finding is reported.
      - A temperature at or over the card's own slowdown threshold is always C(critical).
    type: int
    default: 85
  gather_topology:
    description:
      - Query the NVML common ancestor of every GPU pair (n*(n-1)/2 calls).
    type: bool
    default: true
  gather_processes:
    description:
      - Count the compute processes running on each GPU.
    type: bool
    default: true
  kernel_log:
    description:
      - Read the kernel log (C(dmesg), else C(journalctl -k -b)) for NVRM Xid lines and report them as findings.
      - Read-only. When neither is readable this is said in C(kernel_log.note) and no finding is made.
    type: bool
    default: true
  gather_fabric:
    description:
      - Read the RDMA fabric from C(/sys/class/infiniband) (devices, ports, GIDs, interfaces, PCI place), whether
        nvidia-peermem is loaded, and each GPU's PCI distance to each RDMA device, into C(fabric).
    type: bool
    default: true
  sysfs_root:
    description:
      - Directory under which C(/sys) is read. For tests; leave the default on real hosts.
    type: path
    default: /
  procfs_root:
    description:
      - Directory under which C(/proc/driver/nvidia) is read. For tests; leave the default on real hosts.
    type: path
    default: /
  stack:
    description:
      - Also report what is installed, as M(gpufleet.stack.stack_facts) does (C(gpufleet_installed)), in the same module
        run, so a host's facts cost one round trip (verification and C(playbooks/facts.yml) use it).
    type: bool
    default: false
  python_envs:
    description: With O(stack), the Python environments whose frameworks and NVIDIA wheels to report.
    type: list
    elements: path
    default: []
  boot_root:
    description:
      - Directory under which C(/boot), C(/vmlinuz), C(/lib/modules) and C(/var/lib/dkms) are read to tell whether
        the kernel that boots next has an nvidia module for the installed driver (a critical finding when not).
        For tests; leave the default on real hosts.
    type: path
    default: /
requirements:
  - pynvml (PyPI C(nvidia-ml-py)) on the managed host, to report GPUs; without it only host facts are reported.
notes:
  - A PCIe link below its maximum is only reported for a busy GPU; an idle GPU lowers its link speed to save
    power, so a low link on an idle card is normal.
  - Persistence mode off is an C(info) finding; C(info) findings do not change C(health_status).
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.read_only
  - gpufleet.stack.attributes.facts
attributes:
  platform:
    platforms: posix
seealso:
  - name: NVML API reference
    description: The library the facts come from.
    link: https://docs.nvidia.com/deploy/nvml-api/index.html
  - name: Xid errors
    description: Meaning of the Xid codes reported from the kernel log.
    link: https://docs.nvidia.com/deploy/xid-errors/index.html
  - name: GPU Feature Discovery
    description: The node labels C(labels) imitates.
    link: https://github.com/NVIDIA/k8s-device-plugin/blob/main/docs/gpu-feature-discovery/README.md
  - module: ansible.builtin.setup
"""

EXAMPLES = r"""
- name: Gather GPU facts
  gpufleet.stack.gpu_facts:

- name: Stop when a GPU is unhealthy
  ansible.builtin.assert:
    that: ansible_facts['gpufleet_gpu']['health_status'] != 'critical'
    fail_msg: "{{ ansible_facts['gpufleet_gpu']['health'] | selectattr('severity', '==', 'critical') | list }}"

- name: Warn from 80 degrees, skip topology on a large node
  gpufleet.stack.gpu_facts:
    temperature_threshold: 80
    gather_topology: false
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    gpufleet_gather_failed:
      description:
        - Always null here. C(playbooks/facts.yml) records C({at, reason}) under this name for a host whose facts could
          not be gathered, so that the report shows that host failed instead of healthy from its cached facts; a
          successful gathering clears it.
      returned: always
      type: raw
    gpufleet_gpu:
      description:
        - GPU facts of the host. Keys below; per-GPU dicts hold C(index), C(name), C(uuid), C(serial),
          C(pci_bus_id), C(minor_number), C(architecture), C(compute_capability), C(memory_total_mib),
          C(persistence_mode), C(compute_mode), C(utilization_gpu_pct), C(ecc), C(retired_pages), C(remapped_rows),
          C(temperature), C(power), C(clocks), C(clocks_max), C(throttle_reasons), C(pcie), C(nvlink), C(mig),
          C(compute_processes), C(processes) (C(pid), C(used_memory_mib), C(name) of each compute process) and
          C(fabric) (C(state) not_started, in_progress or completed, C(status), the NVML return code of the
          probe, C(clique_id) and C(cluster_uuid), on Hopper and newer behind NVLink switches; null where the GPU
          has no fabric probe); an unsupported field is C(null).
        - Other keys are C(driver_state_reason), C(library_version), C(kernel_module_version), C(nvml_version),
          C(kernel_module_flavor) (open, proprietary or null), C(nouveau_loaded), C(pci_devices),
          C(nvswitch_present) (NVSwitches on PCI, up to NVLink 4), C(nvlink5_switch) (an NVLink 5 baseboard's
          NVSwitch management bridge among the RDMA devices, its VPD saying SW_MNG), C(fabricmanager_required)
          (either), C(nvlsm_required) (NVLink 5, NVLSM beside Fabric Manager), C(imex_required) (GPUs on NVLink
          switches outside the node, GB200 NVL), C(nvlink_domain) (C(<cluster uuid>.<clique id>) once every GPU's
          fabric probe completed with success and a non-zero cluster UUID, else null), C(gpu_count),
          C(pci_gpu_count) (NVIDIA GPUs on the PCI bus; more than C(gpu_count) is a critical finding), C(topology)
          (C("0-1") to an NVML
          topology level name), C(labels), C(kernel_log), C(source) (nvml, nvml-simulator or sysfs),
          C(simulated), C(fabric) (C(summary) ib, roce, down or none; C(devices) with their ports, GIDs, interfaces
          and PCI place, C(nvswitch_mgmt) for the NVSwitch bridge's; C(nvswitch_bridge), that bridge's PCI functions;
          C(peermem); C(gpu_nic), each GPU's PCI
          distance to each RDMA device, PIX to SYS),
          C(nvml_bindings) (C(path) and C(version) of the pynvml imported, null when NVML was not
          called; the collection's copy in C(/usr/local/lib/gpufleet/python), put there by the
          C(gpufleet.stack.pynvml) role, comes first) and C(gathered_at) (UTC, C(2026-12-06T04:00:00Z)).
        - Every string is decoded (bytes that are not UTF-8 replaced), control characters other than tab and newline
          replaced, and cut at 4096 characters.
      returned: always
      type: dict
      contains:
        driver_state:
          description: not_installed, not_loaded, mismatch, loaded or error.
          type: str
          sample: loaded
        driver_version:
          description: Driver version NVML reports; null unless loaded.
          type: str
          sample: "570.133.20"
        cuda_driver_version:
          description: Highest CUDA version the driver supports, major.minor.
          type: str
          sample: "12.8"
        gpus:
          description: One dict per GPU.
          type: list
          elements: dict
        health:
          description:
            - Findings, each with severity (critical, warning, info), gpu (index or null), what, value, threshold.
          type: list
          elements: dict
          sample: [{severity: critical, gpu: 3, what: uncorrectable ECC errors since boot, value: 2, threshold: 0}]
        health_status:
          description: ok, warning or critical (the worst finding; info findings do not count).
          type: str
          sample: ok
        labels:
          description: GPU Feature Discovery style labels, all values strings.
          type: dict
          sample: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB, nvidia.com/gpu.count: "8"}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.contain import contained
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.gather import gather
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.readers import kernel_log_reader, modinfo_reader
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.gather import gather as gather_installed
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.gather import scanner_for


def main():
    module = AnsibleModule(
        argument_spec={
            "temperature_threshold": {"type": "int", "default": 85},
            "gather_topology": {"type": "bool", "default": True},
            "gather_processes": {"type": "bool", "default": True},
            "kernel_log": {"type": "bool", "default": True},
            "gather_fabric": {"type": "bool", "default": True},
            "sysfs_root": {"type": "path", "default": "/"},
            "procfs_root": {"type": "path", "default": "/"},
            "boot_root": {"type": "path", "default": "/"},
            "stack": {"type": "bool", "default": False},
            "python_envs": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    if not 0 < module.params["temperature_threshold"] < 200:
        module.fail_json(
            msg=f"temperature_threshold {module.params['temperature_threshold']} is not a GPU temperature in "
            "degrees Celsius; use a value between 1 and 199, e.g. 85"
        )
    facts = gather(dict(module.params, modinfo=modinfo_reader(module)), kernel_log_reader(module))
    facts["gathered_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    # A failure playbooks/facts.yml recorded for this host is over: the report reads these facts again.
    found = {"gpufleet_gpu": facts, "gpufleet_gather_failed": None}
    if module.params["stack"]:
        found["gpufleet_installed"] = gather_installed(scanner_for(module), module.params["python_envs"])
    module.exit_json(changed=False, ansible_facts=contained(found))


if __name__ == "__main__":
    main()
