#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_processes
short_description: The compute processes on a host's GPUs, and which of them no scheduler job owns
version_added: "0.2.0"
description:
  - Lists every compute process NVML reports on every GPU (pid, name, memory), as M(gpufleet.stack.gpu_facts) reads
    them (the collection's nvidia-ml-py first), and, with O(scheduler=slurm), which Slurm job owns each one
    (C(scontrol listpids) on the node, the processes slurmd tracks for its jobs' steps).
  - RV(strays) are the processes no job owns, such as an ssh session's training run, a container started by hand, a
    daemonised child that outlived its job. Draining waits for scheduler jobs only; unloading the driver under a
    stray kills its work. After a drain whose jobs ended, every process left is a stray.
  - A host without a loaded driver has no GPU processes to list. Read-only.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  scheduler:
    description: Whose jobs own processes. C(none) makes every GPU process a stray.
    type: str
    choices: [none, slurm]
    default: none
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.READ_ONLY
attributes:
  platform:
    platforms: posix
requirements:
  - pynvml (PyPI C(nvidia-ml-py)) on the managed host; the M(gpufleet.stack.pynvml) role installs it.
seealso:
  - module: gpufleet.stack.slurm_node
    description: Drains the node and waits for its jobs first.
"""

EXAMPLES = r"""
- name: Processes on the GPUs that no Slurm job owns
  gpufleet.stack.gpu_processes:
    scheduler: slurm
  register: gpu_procs

- name: Refuse to change the driver under them
  ansible.builtin.assert:
    that: gpu_procs.strays | length == 0
    fail_msg: "{{ gpu_procs.message }}"
"""

RETURN = r"""
processes:
  description:
    - Every compute process, C(gpu) (NVML index), C(pid), C(name), C(used_memory_mib), C(job) (owning job id or null).
  returned: always
  type: list
  elements: dict
strays:
  description: The processes no scheduler job owns.
  returned: always
  type: list
  elements: dict
message:
  description: The strays named in one sentence (empty when there are none).
  returned: always
  type: str
driver_state:
  description: As gpu_facts reports it; processes are listed only when C(loaded).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.gather import gather
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import scontrol as sl


def main():
    module = AnsibleModule(
        argument_spec={"scheduler": {"type": "str", "choices": ["none", "slurm"], "default": "none"}},
        supports_check_mode=True,
    )
    facts = gather({"gather_topology": False, "kernel_log": False, "kernels": False}, lambda: (None, None, None))
    processes = [dict(proc, gpu=gpu["index"]) for gpu in facts["gpus"] for proc in (gpu.get("processes") or [])]
    owned = {}
    if module.params["scheduler"] == "slurm" and processes:
        scontrol = module.get_bin_path("scontrol", required=True)
        rc, out, err = module.run_command([scontrol, "listpids"])
        # No job step on the node: scontrol prints the header, "No job steps exist on this node." and exits 1.
        if rc != 0 and "No job steps exist" not in err + out:
            module.fail_json(
                msg=f"gpu_processes: scontrol listpids failed (rc {rc}): {(err or out).strip()}; without it no process "
                "can be told from a stray. Run it where slurmd runs (the GPU node)."
            )
        owned = sl.parse_listpids(out)
    for proc in processes:
        proc["job"] = owned.get(proc["pid"])
    strays = sl.stray_processes(processes, owned)
    whose = "Slurm" if module.params["scheduler"] == "slurm" else "scheduler"
    message = f"GPU processes that no {whose} job owns: {sl.describe_processes(strays)}" if strays else ""
    module.exit_json(
        changed=False, processes=processes, strays=strays, message=message, driver_state=facts["driver_state"]
    )


if __name__ == "__main__":
    main()
