#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: upgrade_gate
short_description: Whether an upgraded GPU node is ready to run jobs again, gate by gate
version_added: "0.2.0"
description:
  - Reads the node as M(gpufleet.stack.gpu_facts) does (NVML, the PCI bus, the kernel log, the next kernel), Fabric
    Manager's unit and journal, and the CDI spec, and checks, in order, C(module) (the loaded driver is
    O(driver_version)), C(gpus) (NVML's GPU count equals the PCI bus' and O(expected_gpus)), C(fabric) (on NVSwitch
    systems Fabric Manager is active and the fabric trained, by NVML's fabric state on Hopper and newer and by
    Fabric Manager's "configured" line on A100; on GB200-class trays the GPUs registered with the rack's fabric),
    C(nvlsm) (on NVLink 5 systems an C(nvlsm) process runs), C(imex) (on multi-node NVLink nodes O(imex_unit) active and
    O(imex_channel) present), C(peermem) (where O(peermem_load_file) exists and the
    driver is loaded, C(nvidia-peermem) is loaded), C(gdrdrv) (where GDRCopy is installed and the driver is loaded,
    C(gdrdrv) is loaded and C(/dev/gdrdrv) exists), C(persistence), C(health) (no critical finding), C(xid) (no Xid
    line that was not in O(xid_baseline)) and C(cdi) (the spec names the loaded driver).
  - Looks again every O(poll_interval) seconds for up to O(timeout) seconds, since Fabric Manager trains the fabric and
    the daemons start for a while after a driver change or a reboot. Fails with C(failed/<gate>) and the reason of the
    first gate that did not pass, and the caller keeps the node drained.
  - Read-only. The scheduler's side (slurmd registered, Slurm's GPU count) is M(gpufleet.stack.slurm_node)'s, after
    the resume.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  driver_version:
    description: The driver that must be loaded; empty skips the C(module) gate.
    type: str
    default: ""
  expected_gpus:
    description: GPUs the node must have (C(gpufleet_expected_gpus)); C(0) checks only against the PCI bus.
    type: int
    default: 0
  fabricmanager_unit:
    description: Fabric Manager's unit.
    type: str
    default: nvidia-fabricmanager.service
  fabricmanager_log:
    description: Fabric Manager's log file, read when the journal has nothing of the unit.
    type: path
    default: /var/log/fabricmanager.log
  imex_unit:
    description: The IMEX service's unit, asked where gpu_facts says C(imex_required).
    type: str
    default: nvidia-imex.service
  imex_channel:
    description: >-
      The default IMEX channel's device node; CUDA's fabric-memory calls need it (NVIDIA's IMEX guide, "IMEX
      Channels").
    type: path
    default: /dev/nvidia-caps-imex-channels/channel0
  peermem_load_file:
    description: >-
      The modules-load.d file through which the node loads C(nvidia-peermem) at boot (M(gpufleet.stack.gpudirect_rdma));
      where it exists, the C(peermem) gate requires the module loaded.
    type: path
    default: /etc/modules-load.d/gpufleet-nvidia-peermem.conf
  gdrdrv_src_root:
    description: >-
      Where DKMS sources are; a C(gdrdrv-<version>) there (package C(gdrdrv-dkms)) makes the C(gdrdrv) gate require
      the module loaded and C(/dev/gdrdrv) once the driver is.
    type: path
    default: /usr/src
  kernel_root:
    description: >-
      Root under which C(/sys/module), C(/proc/driver/nvidia) and C(/dev/gdrdrv) are read: the kernel's own account
      of its modules, which the C(peermem) and C(gdrdrv) gates follow (tests).
    type: path
    default: /
  xid_baseline:
    description: The kernel log's Xid lines when the upgrade began; only lines not among them fail the C(xid) gate.
    type: list
    elements: str
    default: []
  persistence:
    description: Require persistence mode on every GPU (false where nvidia-persistenced is not managed).
    type: bool
    default: true
  cdi_spec:
    description: The CDI spec that must name the loaded driver; empty skips the C(cdi) gate.
    type: path
    default: ""
  timeout:
    description: Seconds to keep looking while a gate fails.
    type: int
    default: 120
  poll_interval:
    description: Seconds between two looks.
    type: int
    default: 5
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.READ_ONLY
  - gpufleet.stack.attributes.facts
attributes:
  platform:
    platforms: posix
requirements:
  - pynvml (PyPI C(nvidia-ml-py)) on the managed host; the M(gpufleet.stack.pynvml) role installs it.
seealso:
  - module: gpufleet.stack.gpu_facts
  - module: gpufleet.stack.slurm_node
  - name: Fabric Manager user guide
    description: Fabric Manager's role on NVSwitch systems and CUDA's error 802 before it has initialised them.
    link: https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html
"""

EXAMPLES = r"""
- name: Check the node is ready before giving it back
  gpufleet.stack.upgrade_gate:
    driver_version: "570.172.08"
    expected_gpus: 8
    cdi_spec: /etc/cdi/nvidia.yaml
    xid_baseline: "{{ xid_before }}"
"""

RETURN = r"""
gates:
  description: Each gate, in order, with C(gate), C(ok) and C(detail).
  returned: always
  type: list
  elements: dict
failed_gate:
  description: The first gate that did not pass; empty when all passed.
  returned: always
  type: str
waited:
  description: Seconds spent looking again.
  returned: always
  type: int
ansible_facts:
  description: C(gpufleet_gpu), as M(gpufleet.stack.gpu_facts) returns it, from the last look.
  returned: always
  type: dict
"""

import glob
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node import gate as gate_rules
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.gather import gather
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.host import read_kernel_module, read_text
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.readers import kernel_log_reader, modinfo_reader


def fabricmanager(module, unit, log_path):
    """(active, lines since the journal's or the log's start): Fabric Manager's own account."""
    if not module.get_bin_path("systemctl"):
        return False, []
    active, journalctl = unit_active(module, unit), module.get_bin_path("journalctl")
    lines = []
    if journalctl:
        rc, out, _err = module.run_command([journalctl, "-u", unit, "-o", "cat", "--no-pager", "-n", "500"])
        lines = out.splitlines() if rc == 0 else []
    if not gate_rules.fm_configured(lines):
        lines = (read_text(log_path) or "").splitlines()[-500:]
    return active, lines


def unit_active(module, unit):
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return False
    rc, out, _err = module.run_command([systemctl, "is-active", unit])
    return rc == 0 and out.strip() == "active"


def processes(procfs="/proc"):
    """The names (comm) of the processes running, as ps shows them."""
    names = set()
    for pid in os.listdir(procfs) if os.path.isdir(procfs) else []:
        if pid.isdigit():
            names.add((read_text(os.path.join(procfs, pid, "comm")) or "").strip())
    return names


def look(module, p):
    facts = gather(dict(modinfo=modinfo_reader(module), gather_topology=False), kernel_log_reader(module))
    fm_active, fm_lines = (False, [])
    if facts.get("fabricmanager_required"):
        fm_active, fm_lines = fabricmanager(module, p["fabricmanager_unit"], p["fabricmanager_log"])
    imex = facts.get("imex_required")
    gates = gate_rules.evaluate(
        facts,
        target=p["driver_version"],
        expected_gpus=p["expected_gpus"] or None,
        fm_active=fm_active,
        fm_lines=fm_lines,
        xid_baseline=p["xid_baseline"],
        cdi_path=p["cdi_spec"],
        cdi_text=read_text(p["cdi_spec"]) if p["cdi_spec"] else None,
        persistence=p["persistence"],
        processes=processes() if facts.get("nvlsm_required") else (),
        imex_active=imex and unit_active(module, p["imex_unit"]),
        imex_channel0=imex and os.path.exists(p["imex_channel"]),
        peermem_wanted=os.path.exists(p["peermem_load_file"]),
        gdrdrv_installed=bool(glob.glob(os.path.join(p["gdrdrv_src_root"], "gdrdrv-*"))),
        gdrdrv_loaded=os.path.isdir(os.path.join(p["kernel_root"], "sys", "module", "gdrdrv")),
        gdrdrv_device=os.path.exists(os.path.join(p["kernel_root"], "dev", "gdrdrv")),
        kernel_driver=read_kernel_module(p["kernel_root"], p["kernel_root"])["loaded"],
    )
    return facts, gates


def main():
    module = AnsibleModule(
        argument_spec={
            "driver_version": {"type": "str", "default": ""},
            "expected_gpus": {"type": "int", "default": 0},
            "fabricmanager_unit": {"type": "str", "default": "nvidia-fabricmanager.service"},
            "fabricmanager_log": {"type": "path", "default": "/var/log/fabricmanager.log"},
            "imex_unit": {"type": "str", "default": "nvidia-imex.service"},
            "imex_channel": {"type": "path", "default": "/dev/nvidia-caps-imex-channels/channel0"},
            "peermem_load_file": {"type": "path", "default": "/etc/modules-load.d/gpufleet-nvidia-peermem.conf"},
            "gdrdrv_src_root": {"type": "path", "default": "/usr/src"},
            "kernel_root": {"type": "path", "default": "/"},
            "xid_baseline": {"type": "list", "elements": "str", "default": []},
            "cdi_spec": {"type": "path", "default": ""},
            "persistence": {"type": "bool", "default": True},
            "timeout": {"type": "int", "default": 120},
            "poll_interval": {"type": "int", "default": 5},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 0 or p["poll_interval"] < 1 or p["expected_gpus"] < 0:
        module.fail_json(
            msg=f"upgrade_gate: timeout {p['timeout']} and expected_gpus {p['expected_gpus']} must be >= 0 and "
            f"poll_interval {p['poll_interval']} >= 1"
        )
    started = time.monotonic()
    facts, gates = look(module, p)
    while gate_rules.first_failure(gates) and time.monotonic() - started < p["timeout"]:
        time.sleep(p["poll_interval"])
        facts, gates = look(module, p)
    failure = gate_rules.first_failure(gates)
    result = {
        "changed": False,
        "gates": gates,
        "failed_gate": failure["gate"] if failure else "",
        "waited": int(time.monotonic() - started),
        "ansible_facts": {"gpufleet_gpu": facts},
    }
    if failure:
        module.fail_json(msg=f"failed/{failure['gate']}: {failure['detail']}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
