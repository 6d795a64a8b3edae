#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stack_facts
short_description: Report the installed NVIDIA driver, CUDA, cuDNN, NCCL and framework versions
version_added: "0.1.0"
description:
  - Detects on the host, read-only, which parts of the GPU software stack are installed, each finding with its source.
  - "Driver: the loaded kernel module (C(/proc/driver/nvidia/version), C(/sys/module/nvidia/version)), the installed
    package and C(libcuda.so.*); a difference is flagged as O(ignore:mismatch) (the classic driver/library version
    mismatch after an upgrade without a reboot)."
  - "CUDA toolkits under C(/usr/local/cuda-*) (C(version.json), else C(version.txt), else C(nvcc --version)),
    Debian's C(/usr/lib/nvidia-cuda-toolkit), and which one C(/usr/local/cuda) points to."
  - cuDNN and NCCL from headers, library file names, packages and NVIDIA's PyPI wheels in O(python_envs).
  - Fabric Manager and the NVIDIA Container Toolkit from their packages and C(--version).
  - Frameworks (torch, tensorflow, jax, horovod) from C(*.dist-info/METADATA) and version files, never by importing
    them, with the CUDA they were built for and the cuDNN/NCCL wheels they pin.
  - A component that is absent is reported with C(present=false), never as a failure.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  python_envs:
    description:
      - Python interpreters (C(/opt/venv/bin/python)), virtual environments (C(/opt/venv)) or site-packages
        directories whose installed frameworks and NVIDIA wheels to report.
    type: list
    elements: path
    default: []
  root:
    description:
      - Directory that stands for C(/) when looking for files; for tests and for inspecting a mounted image.
      - libcuda is only loaded (for O(ignore:driver.max_cuda)) when this is C(/).
    type: path
    default: /
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.read_only
  - gpufleet.stack.attributes.facts
attributes:
  platform:
    platforms: posix
    details: Linux hosts with dpkg or rpm.
notes:
  - "Runs in well under a second: it reads small files and runs at most C(dpkg-query) and a few C(--version) commands."
seealso:
  - module: gpufleet.stack.stack_assert
    description: Checks these findings against the compatibility matrix.
  - name: CUDA Toolkit release notes (driver requirements)
    description: Table 3, the minimum driver for each toolkit.
    link: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
"""

EXAMPLES = r"""
- name: Record what is installed, including the training venv
  gpufleet.stack.stack_facts:
    python_envs:
      - /opt/train/venv

- name: Show the loaded driver
  ansible.builtin.debug:
    msg: "{{ ansible_facts['gpufleet_installed']['driver']['loaded_version'] | default('none') }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under one key owned by the collection.
  returned: always
  type: complex
  contains:
    gpufleet_installed:
      description:
        - What is installed. Components C(driver), C(cuda), C(cudnn), C(nccl), C(fabricmanager),
          C(container_toolkit), C(dcgm) and C(frameworks).
        - C(stack) is the same, shaped like the inventory's C(gpufleet_stack) with exact versions (C(driver),
          C(driver_flavor), C(cuda) as C(X.Y) or a list with C(/usr/local/cuda)'s first, C(cudnn), C(nccl),
          C(fabricmanager), C(container_toolkit), C(dcgm)), which C(playbooks/upgrade.yml) records as a rollback target.
        - C(cudnn), C(nccl), C(fabricmanager), C(container_toolkit), C(dcgm) have C(present), C(version), C(source),
          C(consistent) (all findings agree) and C(findings) (each C(version), C(source)).
        - C(kernels) is C(running), C(next_boot) (the image C(/vmlinuz) points to, else the newest in C(/boot)),
          C(next_boot_source) and C(kernels), one per image in C(/boot) with C(release), C(running), C(next_boot),
          C(present) (an nvidia module in C(/lib/modules/<release>)), C(versions) (from DKMS' tree, else
          C(modinfo)), C(matches) (a module for the installed driver) and C(detail).
      type: dict
      returned: always
      sample:
        driver: {present: true, loaded_version: "570.133.20", loaded_source: /proc/driver/nvidia/version,
                 flavor: open, package_version: "570.133.20", package_name: nvidia-open, library_version: "570.133.20",
                 mismatch: false, max_cuda: "12.8", max_cuda_source: libcuda cuDriverGetVersion}
        cuda: {present: true, default: /usr/local/cuda-12.8,
               toolkits: [{path: /usr/local/cuda-12.8, version: "12.8.1", source: /usr/local/cuda-12.8 version.json}]}
        cudnn: {present: true, version: "9.8.0", source: header /usr/include/cudnn_version.h, consistent: true,
                findings: [{version: "9.8.0", source: header /usr/include/cudnn_version.h}]}
        nccl: {present: false, version: null, source: null, consistent: true, findings: []}
        stack: {driver: "570.133.20", driver_flavor: open, cuda: "12.8", cudnn: "9.8.0"}
        frameworks:
          torch: [{version: "2.7.1+cu128", env: /opt/venv, cuda: "12.8", cuda_source: torch/version.py,
                   bundles: {cudnn: "9.7.1.26", nccl: "2.26.2"},
                   source: /opt/venv/lib/python3.11/site-packages/torch-2.7.1+cu128.dist-info/METADATA}]
          # patched/patch/gpu_operations come from the marker the gpufleet.stack.horovod role writes beside its build.
          horovod: [{version: "0.28.1", env: /opt/venv, patched: true, patch: horovod-0.28.1-cxx17.patch,
                     gpu_operations: gloo, cuda: null, cuda_source: null, bundles: {},
                     source: /opt/venv/lib/python3.11/site-packages/horovod-0.28.1.dist-info/METADATA}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.contain import contained
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.gather import gather, scanner_for


def main():
    module = AnsibleModule(
        argument_spec={
            "python_envs": {"type": "list", "elements": "path", "default": []},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    installed = gather(scanner_for(module, module.params["root"]), module.params["python_envs"])
    # Package and wheel metadata is the node's to write: decoded, cleaned and bounded as gpu_facts' facts are.
    module.exit_json(changed=False, ansible_facts=contained({"gpufleet_installed": installed}))


if __name__ == "__main__":
    main()
