#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_gres
short_description: Slurm's gres.conf for a node's GPUs, from NVML and the CPU topology
version_added: "0.2.0"
description:
  - Writes O(path), the whole file (the node's own gres.conf), with one
    C(NodeName=<node> Name=gpu Type=<type> File=/dev/nvidia<minor> Cores=<cores>) line per GPU NVML enumerates (or
    C(AutoDetect=nvml) with O(autodetect), for a slurmd built with NVML), and returns the node's C(Gres=) for
    slurm.conf (RV(gres)), e.g. C(gpu:a100:8).
  - C(Cores=) comes from each GPU's NUMA affinity (C(/sys/bus/pci/devices/<bus>/local_cpulist)) mapped to Slurm's
    core numbering (cores in socket, core-id order; every hardware thread of a core counts as that core); left out
    when sysfs does not say.
  - The type defaults to the model's short name (C(a100), C(h100), C(t4), C(rtx_4090)), a substring of the type
    slurmd's C(AutoDetect=nvml) derives (C(nvidia_a100-sxm4-40gb)), so jobs asking C(--gres=gpu:a100:1) match
    either way.
  - Refuses a node where NVML sees no GPU, or fewer than the PCI bus has; a gres.conf of fewer GPUs would only make
    Slurm drain the node ("gres/gpu count reported lower than configured").
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  node:
    description: The node's Slurm C(NodeName).
    type: str
    required: true
  path:
    description: Where gres.conf goes.
    type: path
    default: /etc/slurm/gres.conf
  type:
    description: The GPU type; empty derives it from the model name.
    type: str
    default: ""
  autodetect:
    description:
      - Write C(AutoDetect=nvml) instead of one line per GPU (slurmd must have Slurm's NVML plugin, Debian's
        C(slurm-wlm-nvml-plugin) from contrib). Not tested here.
    type: bool
    default: false
  extra_lines:
    description:
      - Lines written after the GPUs' (C(Name=shard ...), C(Name=mps ...)). The module owns the whole file; put a
        site's other GRES here rather than in the file.
    type: list
    elements: str
    default: []
  constrain_devices:
    description:
      - >-
        Set C(ConstrainDevices=yes) in O(cgroup_conf) (other lines kept), so that a job can open only the
        C(/dev/nvidiaN) of the GPUs it was given; refused, naming the fix, when C(scontrol show config) shows a
        C(TaskPlugin) without C(task/cgroup) (the setting would confine nothing). V(false) leaves cgroup.conf alone.
    type: bool
    default: true
  cgroup_conf:
    description: Slurm's cgroup.conf on the node.
    type: path
    default: /etc/slurm/cgroup.conf
  sysfs_root:
    description: Root under which C(/sys) is read (tests).
    type: path
    default: /
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
requirements:
  - pynvml (PyPI C(nvidia-ml-py)) on the managed host; the M(gpufleet.stack.pynvml) role installs it.
seealso:
  - name: gres.conf(5)
    description: Name, Type, File, Cores and AutoDetect.
    link: https://slurm.schedmd.com/gres.conf.html
  - name: cgroup.conf(5)
    description: ConstrainDevices, and the task/cgroup plugin it needs.
    link: https://slurm.schedmd.com/cgroup.conf.html
"""

EXAMPLES = r"""
- name: gres.conf from the node's GPUs
  gpufleet.stack.slurm_gres:
    node: "{{ inventory_hostname_short }}"
  register: gres
  notify: Restart slurmd
"""

RETURN = r"""
gres:
  description: The node's C(Gres=) for its slurm.conf node line.
  returned: always
  type: str
  sample: gpu:a100:8
type:
  description: The GPU type written.
  returned: always
  type: str
gpus:
  description: GPUs written.
  returned: always
  type: int
cgroup:
  description: What was done with cgroup.conf (C(ConstrainDevices=yes), C(unchanged), C(not managed)).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._common.xid import pci_key
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.gather import gather
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.host import read_text
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import gres as sg
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm.conf import (
    device_constraint_problem,
    merge_keys,
    show_config,
)


def cpu_topology(root):
    """{cpu: (package, core id)} from /sys/devices/system/cpu/cpu*/topology."""
    base = os.path.join(root, "sys/devices/system/cpu")
    topology = {}
    for name in os.listdir(base) if os.path.isdir(base) else []:
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        package = (read_text(os.path.join(base, name, "topology/physical_package_id")) or "").strip() or None
        core = (read_text(os.path.join(base, name, "topology/core_id")) or "").strip() or None
        if package is not None and core is not None:
            topology[int(name[3:])] = (int(package), int(core))
    return topology


def cores_by_gpu(root, gpus):
    """{minor: [Slurm core indexes]} from each GPU's local_cpulist; {} when sysfs does not tell every GPU's."""
    index = sg.core_index(cpu_topology(root))
    found = {}
    for gpu in gpus:
        key = pci_key(gpu.get("pci_bus_id"))  # NVML's 8-digit domain, sysfs' 4
        bus = f"{key[0]:04x}:{key[1]:02x}:{key[2]:02x}.0" if key else ""
        cpus = sg.parse_cpulist(read_text(os.path.join(root, "sys/bus/pci/devices", bus, "local_cpulist")))
        cores = sorted({index[c] for c in cpus if c in index})
        if not cores:
            return {}
        found[gpu["minor_number"]] = cores
    return found


def check_task_cgroup(module):
    """Refuse, before any file is written, a cluster whose slurm.conf would ignore ConstrainDevices (where scontrol is
    installed: a node set up before its Slurm is not checked)."""
    config = show_config(module, "slurm_gres")
    problem = device_constraint_problem(config) if config is not None else ""
    if problem:
        module.fail_json(msg=f"slurm_gres: {problem}; or set slurm_gres_constrain_devices: false")


def device_constraint(module, path):
    """Merge ConstrainDevices=yes into cgroup.conf: (changed, before, after)."""
    data, mode = read(path)
    before = None if data is None else data.decode(errors="replace")
    after = merge_keys(before, {"ConstrainDevices": "yes"})
    if before != after and not module.check_mode:
        write(module, path, after, 0o644 if mode is None else mode)
    return before != after, before, after


def main():
    module = AnsibleModule(
        argument_spec={
            "node": {"type": "str", "required": True},
            "path": {"type": "path", "default": "/etc/slurm/gres.conf"},
            "type": {"type": "str", "default": ""},
            "autodetect": {"type": "bool", "default": False},
            "extra_lines": {"type": "list", "elements": "str", "default": []},
            "constrain_devices": {"type": "bool", "default": True},
            "cgroup_conf": {"type": "path", "default": "/etc/slurm/cgroup.conf"},
            "sysfs_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    p = module.params
    facts = gather({"gather_topology": False, "kernel_log": False, "kernels": False, "gather_processes": False},
                   lambda: (None, None, None))  # fmt: skip
    gpus = [g for g in facts["gpus"] if not g.get("error") and g.get("minor_number") is not None]
    if not gpus or len(gpus) < facts["pci_gpu_count"]:
        module.fail_json(
            msg=f"slurm_gres: NVML sees {len(gpus)} GPUs (driver {facts['driver_state']}), the PCI bus has "
            f"{facts['pci_gpu_count']}: {p['path']} is not written, since slurmd would register fewer GPUs than the "
            "node has and Slurm would drain it. Fix the driver or the GPU first (gpu_facts says what is wrong)."
        )
    if p["constrain_devices"]:
        check_task_cgroup(module)
    gtype = p["type"] or sg.gres_type(gpus[0]["name"])
    text = sg.gres_conf(
        p["node"], gpus, gtype, cores_by_gpu(p["sysfs_root"], gpus), autodetect=p["autodetect"], extra=p["extra_lines"]
    )
    data, mode = read(p["path"])
    before = None if data is None else data.decode(errors="replace")
    changed = before != text
    if changed and not module.check_mode:
        write(module, p["path"], text, 0o644 if mode is None else mode)
    diffs = []
    if changed:
        diffs.append({"before_header": p["path"], "after_header": p["path"], "before": before or "", "after": text})
    cgroup = "not managed"
    if p["constrain_devices"]:
        cgroup_changed, cg_before, cg_after = device_constraint(module, p["cgroup_conf"])
        cgroup = "ConstrainDevices=yes" if cgroup_changed else "unchanged"
        changed = changed or cgroup_changed
        if cgroup_changed:
            path = p["cgroup_conf"]
            diffs.append({"before_header": path, "after_header": path, "before": cg_before or "", "after": cg_after})
    result = {"changed": changed, "gres": sg.gres_string(gpus, gtype), "type": gtype, "gpus": len(gpus)}
    result["cgroup"] = cgroup
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
