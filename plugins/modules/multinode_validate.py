#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: multinode_validate
short_description: A job across nodes through Slurm, a torch.distributed all-reduce and an RDMA bandwidth test
version_added: "0.3.0"
description:
  - >-
    Run on a host that can submit Slurm jobs (any node of the cluster). C(allreduce) starts one rank on each of
    O(nodes) with C(srun) and runs O(script) in O(python), the training environment (torch): a torch.distributed
    all-reduce over NCCL where CUDA is available, else Gloo. It passes when every rank reports from its own node with
    the right sum; the result carries each rank's bus bandwidth.
  - >-
    C(rdma_bw) lists each node's RDMA devices (C(/sys/class/infiniband)) through Slurm and, where the first two
    nodes have one, runs perftest's C(ib_write_bw) between them; it is refused, with the reason, where one has none.
  - The module does not fail on a failed check; the outcome is returned as C(gpufleet_multinode) for the caller.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  nodes:
    description: Slurm node names, two or more; one rank runs on each.
    type: list
    elements: str
    required: true
  checks:
    description: The checks to run.
    type: list
    elements: str
    choices: [allreduce, rdma_bw]
    default: [allreduce, rdma_bw]
  python:
    description: The training environment's Python on every node (with torch), e.g. C(/opt/train/bin/python).
    type: path
    required: true
  script:
    description: The all-reduce script on every node (role gpu_validation installs it).
    type: path
    default: /usr/local/lib/gpufleet/validation/gpufleet-torch-allreduce.py
  master_addr:
    description: Where rank 0 listens for the rendezvous; empty takes the first node's name.
    type: str
    default: ""
  master_port:
    description: The rendezvous port.
    type: int
    default: 29500
  backend:
    description: The torch.distributed backend; C(auto) takes NCCL where CUDA is available, else Gloo.
    type: str
    choices: [auto, nccl, gloo]
    default: auto
  bytes:
    description: The all-reduce's message size.
    type: int
    default: 16777216
  iterations:
    description: Timed all-reduces after the checked one.
    type: int
    default: 5
  environment:
    description: Variables for every rank (C(NCCL_SOCKET_IFNAME), C(GLOO_SOCKET_IFNAME), C(NCCL_IB_HCA)...).
    type: dict
    default: {}
  partition:
    description: The Slurm partition; empty takes the cluster's default.
    type: str
    default: ""
  reservation:
    description: The Slurm reservation the nodes are held in for the check (M(gpufleet.stack.slurm_reservation));
      empty runs outside any.
    type: str
    default: ""
  timeout:
    description: Seconds each job may take, waiting for its nodes included.
    type: int
    default: 600
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: torch.distributed
    description: init_process_group, all_reduce, the Gloo and NCCL backends.
    link: https://pytorch.org/docs/stable/distributed.html
  - name: perftest
    description: ib_write_bw and the other RDMA bandwidth tests.
    link: https://github.com/linux-rdma/perftest
"""

EXAMPLES = r"""
- name: An all-reduce across two nodes
  gpufleet.stack.multinode_validate:
    nodes: [gpu-1, gpu-2]
    python: /opt/train/bin/python
  run_once: true
  register: multinode
"""

RETURN = r"""
gpufleet_multinode:
  description: The outcome, C(status) (passed, failed, refused), C(nodes), C(checks) (each check's status, reason
    and data) and C(reservation) (the hold it ran in, empty when none).
  returned: always
  type: dict
"""

import shlex

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import multinode as mn
from ansible_collections.gpufleet.stack.plugins.module_utils._node.validate import overall

CHECKS = ["allreduce", "rdma_bw"]
# Each node's RDMA devices, less an NVLink 5 baseboard's NVSwitch bridge (its VPD says SW_MNG, as NVIDIA's driver
# container finds it): its ports lead to the NVSwitches, never to the other node.
_LIST_RDMA = (
    'echo "$SLURMD_NODENAME" $(for d in /sys/class/infiniband/*; do [ -e "$d" ] || continue; '
    'grep -qs SW_MNG "$d/device/vpd" || echo "${d##*/}"; done)'
)


def bounded(module, argv):
    limit = module.get_bin_path("timeout")
    prefix = [limit, "--kill-after=10", str(module.params["timeout"])] if limit else []
    return prefix + argv


def placement(p):
    """Where Slurm puts every job: the partition, and the reservation holding the nodes."""
    return {"partition": p["partition"], "reservation": p["reservation"]}


def allreduce(module, srun, nodes):
    p = module.params
    env = {str(k): str(v) for k, v in p["environment"].items()}
    env.update(
        MASTER_ADDR=p["master_addr"] or nodes[0],
        MASTER_PORT=str(p["master_port"]),
        GPUFLEET_BACKEND=p["backend"],
        GPUFLEET_BYTES=str(p["bytes"]),
        GPUFLEET_ITERS=str(p["iterations"]),
        GPUFLEET_TIMEOUT=str(max(30, p["timeout"] // 2)),
    )
    argv = mn.srun_argv(srun, nodes, [p["python"], p["script"]], **placement(p))
    rc, out, err = module.run_command(bounded(module, argv), environ_update=env)
    return mn.allreduce_check(mn.parse_ranks(out), nodes, rc, err)


def rdma_bw(module, srun, nodes):
    p = module.params
    argv = mn.srun_argv(srun, nodes, ["sh", "-c", _LIST_RDMA], job_name="gpufleet-rdma-list", **placement(p))
    rc, out, err = module.run_command(bounded(module, argv))
    if rc != 0:
        return mn.result("rdma_bw", "failed", f"listing the nodes' RDMA devices failed ({rc}): {err.strip()[-300:]}")
    devices = mn.parse_rdma_devices(out)
    if mn.rdma_refusal(devices, nodes):
        return mn.rdma_check(devices, nodes)
    server, client = nodes[0], nodes[1]
    test = ["ib_write_bw", "--report_gbits", "-F"]

    def one(node, extra):
        command = [*test, "-d", devices[node][0], *extra]
        return shlex.join(bounded(module, mn.srun_argv(srun, [node], command, **placement(p))))

    # The server listens first (in the background of one shell); the client connects to it by the node's name.
    both = f"{one(server, [])} & listener=$!; sleep 3; {one(client, [server])}; rc=$?; wait $listener; exit $rc"
    rc, out, err = module.run_command(["sh", "-c", both])
    return mn.rdma_check(devices, nodes, out + err, rc)


def main():
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "str", "required": True},
            "checks": {
                "type": "list",
                "elements": "str",
                "choices": ["allreduce", "rdma_bw"],
                "default": ["allreduce", "rdma_bw"],
            },
            "python": {"type": "path", "required": True},
            "script": {"type": "path", "default": "/usr/local/lib/gpufleet/validation/gpufleet-torch-allreduce.py"},
            "master_addr": {"type": "str", "default": ""},
            "master_port": {"type": "int", "default": 29500},
            "backend": {"type": "str", "choices": ["auto", "nccl", "gloo"], "default": "auto"},
            "bytes": {"type": "int", "default": 16777216},
            "iterations": {"type": "int", "default": 5},
            "environment": {"type": "dict", "default": {}},
            "partition": {"type": "str", "default": ""},
            "reservation": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 600},
        },
        supports_check_mode=False,
    )
    nodes = module.params["nodes"]
    srun = module.get_bin_path("srun")
    if not srun:
        module.fail_json(msg="multinode_validate: srun is not installed on this host: run it on a node of the cluster")
    checks = {"allreduce": allreduce, "rdma_bw": rdma_bw}
    results = [checks[name](module, srun, nodes) for name in module.params["checks"]]
    outcome = {
        "status": overall(results),
        "nodes": nodes,
        "checks": results,
        "reservation": module.params["reservation"],
    }
    module.exit_json(changed=False, gpufleet_multinode=outcome)


if __name__ == "__main__":
    main()
