#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_validate
short_description: Acceptance checks of a GPU node, its container runtime wiring, DCGM diagnostics and NCCL all-reduce
version_added: "0.3.0"
description:
  - >-
    C(runtime): Docker has the nvidia runtime, the CDI spec names every GPU and C(nvidia.com/gpu=all), and, with
    O(image), two containers run C(nvidia-smi -L) through the legacy path (C(--runtime=nvidia)) and through CDI
    (C(--device nvidia.com/gpu=all)) and see the GPUs NVML sees.
  - C(dcgm) runs C(dcgmi diag -r LEVEL) when DCGM is installed.
  - >-
    C(nccl) builds gpufleet-allreduce (O(source)) with the node's own nvcc against its own NCCL, runs an all-reduce
    over every GPU and compares the peak bus bandwidth with the floor for the GPU model (O(floors)); or runs
    NVIDIA's nccl-tests C(all_reduce_perf) when O(nccl_tests) names it.
  - >-
    Each check ends passed, failed, refused (it cannot run on this node, with the reason, e.g. no GPU or no
    driver) or skipped (its tool is not installed). The module reports them all in C(gpufleet_validation) and does
    not fail on a failed check, so the outcome reaches the fact cache; the caller decides (role gpu_validation fails
    the host).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  checks:
    description: The checks to run.
    type: list
    elements: str
    choices: [runtime, dcgm, nccl]
    default: [runtime, dcgm, nccl]
  gpus:
    description: The GPUs the node has (NVML's count, from gpu_facts); 0 does not compare counts.
    type: int
    default: 0
  simulated:
    description:
      - The GPUs are the NVML simulator's (gpu_facts' C(simulated)); a GPU test that cannot start is then refused, not
        a fault. On real GPUs it is a fault of the node.
    type: bool
    default: false
  gpu_processes:
    description: Processes using the GPUs now (gpu_facts); the DCGM and NCCL checks are refused while there are any.
    type: int
    default: 0
  image:
    description: A local image for the container smoke test (the runtime brings nvidia-smi); empty refuses the run.
    type: str
    default: ""
  dcgm_level:
    description: The level of C(dcgmi diag -r).
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  source:
    description: gpufleet-allreduce's source on the node.
    type: path
    default: /usr/local/lib/gpufleet/validation/gpufleet-allreduce.cu
  build_dir:
    description: Where the test is built.
    type: path
    default: /var/lib/gpufleet/validation
  nvcc:
    description: The nvcc to build with; empty takes C(/usr/local/cuda/bin/nvcc), else nvcc on PATH.
    type: path
  nccl_home:
    description: A directory with NCCL's C(include/nccl.h) and C(lib/libnccl.so.2); empty uses the system's.
    type: path
  nccl_tests:
    description: NVIDIA nccl-tests' C(all_reduce_perf) to run instead of gpufleet-allreduce.
    type: path
  min_bytes:
    description: The smallest message of the all-reduce sweep (sizes double up to O(max_bytes)).
    type: int
    default: 8388608
  max_bytes:
    description: The largest message of the all-reduce sweep.
    type: int
    default: 4294967296
  floors:
    description:
      - Bus bandwidth floors, rows of C(match) (a regex on the GPU name), C(gpus), C(busbw_gbs), C(name), C(source).
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds each command may run.
    type: int
    default: 900
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: partial
    details: The checks are what the module does; in check mode it runs none and says so.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: nccl-tests performance notes
    description: How nccl-tests computes algorithm and bus bandwidth, which gpufleet-allreduce follows.
    link: https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
"""

EXAMPLES = r"""
- name: Validate the node
  gpufleet.stack.gpu_validate:
    gpus: "{{ ansible_facts['gpufleet_gpu']['gpu_count'] }}"
    image: ubuntu:24.04
"""

RETURN = r"""
ansible_facts:
  description: C(gpufleet_validation) with C(status) (the worst of the checks) and C(checks).
  returned: always
  type: dict
  sample: {"gpufleet_validation": {"status": "refused", "checks": [{"check": "nccl", "status": "refused",
           "reason": "no CUDA driver answers on this node ..."}]}}
"""

import hashlib
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node import validate as va


def run(module, argv, env=None):
    """A command bounded by the module's timeout (coreutils timeout; a GPU test that hangs must not hang the play)."""
    limit = module.get_bin_path("timeout")
    prefix = [limit, "--kill-after=10", str(module.params["timeout"])] if limit else []
    return module.run_command([*prefix, *argv], environ_update=env or {})


def runtime(module, params):
    docker = module.get_bin_path("docker")
    if not docker:
        return va.result("runtime", "skipped", "Docker is not installed on this node")
    rc, out, err = run(module, [docker, "info", "--format", "{{json .Runtimes}}"])
    if rc != 0:
        return va.result("runtime", "failed", f"docker info failed ({rc}): {(err or out).strip()[:300]}")
    ctk = module.get_bin_path("nvidia-ctk")
    devices = va.parse_cdi_list(run(module, [ctk, "cdi", "list"])[1]) if ctk else []
    loaded = os.path.exists("/dev/nvidiactl")
    found = smoke(module, docker, params, loaded)
    return va.runtime_check(
        va.parse_docker_runtimes(out),
        devices,
        params["gpus"],
        found,
        driver_loaded=loaded,
        simulated=params["simulated"],
    )


def smoke(module, docker, params, loaded):
    image = params["image"]
    if not image:
        return "no image given (gpu_validation_image): name a local image, e.g. ubuntu:24.04"
    if not loaded:
        return "no /dev/nvidiactl: the NVIDIA driver is not loaded on this node, so no container can use a GPU"
    if run(module, [docker, "image", "inspect", image])[0] != 0:
        return f"image {image} is not on this node: pull or load it first"
    seen = {}
    for path, flags in (
        ("legacy", ["--runtime=nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all"]),
        ("cdi", ["--device", "nvidia.com/gpu=all"]),
    ):
        rc, out, err = run(module, [docker, "run", "--rm", *flags, image, "nvidia-smi", "-L"])
        seen[path] = va.count_smi_gpus(out) if rc == 0 else (err or out).strip()[:300]
    return seen


def busy(params):
    """Why a GPU workload must not start now, or "": processes on the GPUs (a job's) would share them with it."""
    if params["gpu_processes"]:
        return f"{params['gpu_processes']} processes are using the GPUs: drain the node first (role node_drain)"
    return ""


def dcgm(module, params):
    dcgmi = module.get_bin_path("dcgmi")
    if not dcgmi:
        return va.result("dcgm", "skipped", "DCGM is not installed (no dcgmi)")
    if params["busy"]:
        return va.result("dcgm", "refused", params["busy"])
    rc, out, err = run(module, [dcgmi, "diag", "-r", str(params["dcgm_level"]), "-j"])
    return va.dcgm_check(rc, out, err, params["dcgm_level"])


def find_nvcc(module, params):
    if params["nvcc"]:
        return params["nvcc"] if os.access(params["nvcc"], os.X_OK) else None
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        return "/usr/local/cuda/bin/nvcc"
    return module.get_bin_path("nvcc")


def nccl_paths(params):
    """(include dir, lib dir or None) of the NCCL to build against; (None, None) when nccl.h is nowhere."""
    if params["nccl_home"]:
        home = params["nccl_home"]
        return (
            (os.path.join(home, "include"), os.path.join(home, "lib"))
            if os.path.isfile(os.path.join(home, "include", "nccl.h"))
            else (None, None)
        )
    for include in ("/usr/include", "/usr/local/cuda/include"):
        if os.path.isfile(os.path.join(include, "nccl.h")):
            return include, None
    return None, None


def build(module, params, nvcc, include, lib):
    """Build gpufleet-allreduce when its inputs changed. -> (binary, None) or (None, failure result)."""
    os.makedirs(params["build_dir"], exist_ok=True)
    binary = os.path.join(params["build_dir"], "gpufleet-allreduce")
    with open(params["source"], "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    stamp = json.dumps(
        [digest, nvcc, os.stat(nvcc).st_mtime, include, os.stat(os.path.join(include, "nccl.h")).st_mtime]
    )
    stamp_file = binary + ".stamp"
    if os.path.exists(binary) and os.path.exists(stamp_file):
        with open(stamp_file, encoding="utf-8") as handle:
            if handle.read() == stamp:
                return binary, None
    # nvcc's own lib/ (PyPI's CUDA wheels have no lib64/, which is all nvcc.profile names), then NCCL's.
    cuda_lib = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "lib")
    argv = [nvcc, "-O2", "-o", binary, params["source"], f"-I{include}"]
    argv += [f"-L{d}" for d in (cuda_lib, lib) if d and os.path.isdir(d)]
    rc, out, err = run(module, [*argv, "-l:libnccl.so.2"])
    if rc != 0:
        return None, va.result("nccl", "failed", f"building gpufleet-allreduce failed ({rc}): {(err or out)[-800:]}")
    with open(stamp_file, "w", encoding="utf-8") as handle:
        handle.write(stamp)
    return binary, None


def nccl_tests(module, params):
    """NVIDIA's all_reduce_perf, one process over every GPU (-g)."""
    argv = [params["nccl_tests"], "-b", str(params["min_bytes"]), "-e", str(params["max_bytes"]), "-f", "2"]
    rc, out, err = run(module, [*argv, "-g", str(params["gpus"] or 1)])
    if rc != 0:
        return va.result("nccl", "failed", f"all_reduce_perf exited {rc}: {(err or out)[-800:]}")
    return va.nccl_check(va.parse_nccl_tests(out), params["floors"], params["gpus"], params["simulated"])


def nccl(module, params):
    if params["busy"]:
        return va.result("nccl", "refused", params["busy"])
    if params["nccl_tests"]:
        return nccl_tests(module, params)
    return allreduce(module, params)


def allreduce(module, params):
    """gpufleet-allreduce: built with the node's nvcc against its NCCL, then run over every GPU."""
    env = {}
    nvcc = find_nvcc(module, params)
    if not nvcc:
        return va.result("nccl", "refused", "no nvcc on this node: install a CUDA toolkit (role cuda_toolkit)")
    include, lib = nccl_paths(params)
    if not include:
        return va.result("nccl", "refused", "no nccl.h on this node: install NCCL with its headers (role nccl)")
    binary, failure = build(module, params, nvcc, include, lib)
    if failure:
        return failure
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    rc, out, err = run(module, [binary, str(params["min_bytes"]), str(params["max_bytes"])], env)
    found = va.parse_allreduce(out)
    if found is None:
        return va.result("nccl", "failed", f"gpufleet-allreduce exited {rc} without a result: {(err or out)[-800:]}")
    return va.nccl_check(found, params["floors"], params["gpus"], params["simulated"])


def main():
    module = AnsibleModule(
        argument_spec={
            "checks": {
                "type": "list",
                "elements": "str",
                "choices": ["runtime", "dcgm", "nccl"],
                "default": ["runtime", "dcgm", "nccl"],
            },
            "gpus": {"type": "int", "default": 0},
            "simulated": {"type": "bool", "default": False},
            "gpu_processes": {"type": "int", "default": 0},
            "image": {"type": "str", "default": ""},
            "dcgm_level": {"type": "int", "choices": [1, 2, 3, 4], "default": 1},
            "source": {"type": "path", "default": "/usr/local/lib/gpufleet/validation/gpufleet-allreduce.cu"},
            "build_dir": {"type": "path", "default": "/var/lib/gpufleet/validation"},
            "nvcc": {"type": "path"},
            "nccl_home": {"type": "path"},
            "nccl_tests": {"type": "path"},
            "min_bytes": {"type": "int", "default": 8388608},
            "max_bytes": {"type": "int", "default": 4294967296},
            "floors": {"type": "list", "elements": "dict", "default": []},
            "timeout": {"type": "int", "default": 900},
        },
        supports_check_mode=True,
    )
    params = module.params
    if not 8192 <= params["min_bytes"] <= params["max_bytes"]:
        module.fail_json(
            msg=f"min_bytes {params['min_bytes']} and max_bytes {params['max_bytes']}: give "
            "8192 <= min_bytes <= max_bytes, e.g. 8388608 and 4294967296"
        )
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: no validation ran")
    started = time.time()
    params["busy"] = busy(params)
    checks = {"runtime": runtime, "dcgm": dcgm, "nccl": nccl}
    results = [checks[name](module, params) for name in params["checks"]]
    facts = {
        "status": va.overall(results),
        "checks": results,
        "at": int(started),
        "duration_s": round(time.time() - started, 1),
    }
    module.exit_json(changed=False, ansible_facts={"gpufleet_validation": facts})


if __name__ == "__main__":
    main()
