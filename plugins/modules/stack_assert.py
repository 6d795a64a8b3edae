#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the work is done by the action plugin of the same name (plugins/action/stack_assert.py),
# which reads the compatibility matrix on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stack_assert
short_description: Check a GPU software stack against the driver/CUDA/cuDNN/NCCL/framework compatibility matrix
version_added: "0.1.0"
description:
  - Evaluates every compatibility rule for a stack and fails with one message listing all violations, each naming the
    components, their versions and the fix.
  - With O(versions), checks the versions as given on the controller, without contacting any host; this is how
    C(playbooks/site.yml) validates the desired stack (C(gpufleet_stack)) before touching hosts.
  - Without O(versions), runs M(gpufleet.stack.stack_facts) on the host and checks what is installed, optionally
    against the desired pins in O(expect).
  - "Rules: driver vs CUDA toolkit (full support, minor-version compatibility, unsupported); driver branch and the
    highest CUDA it reports; cuDNN build vs CUDA major and its driver floor; NCCL build vs CUDA; a framework wheel's
    CUDA variant vs the driver; bundled vs system cuDNN/NCCL; TensorFlow's tested cuDNN/CUDA; Horovod vs framework;
    Fabric Manager equal to the driver; a loaded driver that differs from the installed one; and for the GPUs
    (O(gpus), or C(gpu) in O(versions)): the driver branch drives their architecture, every CUDA toolkit and
    framework build compiles for it, the kernel-module flavour drives it."
  - The matrix is C(data/compat_matrix.yml) in the collection; each row cites its source and the date it was read.
  - Warnings (a stack that runs with limits, a driver branch past its end of life, an installed Container Toolkit
    with a published CVE) are also returned as Ansible warnings, shown without C(-v) once per distinct text.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  versions:
    description:
      - The stack to check, shaped like C(gpufleet_stack). Keys C(driver), C(cuda) (one or a list), C(cudnn),
        C(nccl) (may carry a C(+cudaX.Y) build), C(fabricmanager), C(container_toolkit), C(dcgm), C(horovod) and
        C(framework) (C({name, version, cuda}) or the shorthand C(torch==2.7.1+cu128) or C(jax[cuda13]==0.12.0)),
        C(driver_flavor) (V(open) or V(proprietary)) and C(gpu) (a product name such as V(NVIDIA H100 80GB HBM3) or
        V(A100), a compute capability such as V(9.0), or an C(sm_XY) target; one or a list). Other keys are ignored.
      - When a framework's CUDA variant is not given, the variant a plain C(pip install name==version) gets from PyPI
        is assumed (from the matrix); jax has none (its plain wheel has no CUDA), so give its extra or C(cuda).
      - Omit to detect the stack on the host.
    type: dict
  installed:
    description:
      - What a host has, as C(ansible_facts['gpufleet_installed']) from M(gpufleet.stack.stack_facts) or
        M(gpufleet.stack.gpu_facts) with C(stack=true) earlier in the play; judged on the controller, no module run.
      - Mutually exclusive with O(versions).
    type: dict
  gpus:
    description:
      - The GPUs to check the stack against, as C(ansible_facts['gpufleet_gpu']['gpus']) from
        M(gpufleet.stack.gpu_facts) (each with C(name) and C(compute_capability)), or names and compute
        capabilities as in C(versions.gpu). Replaces C(versions.gpu) when both are given.
    type: list
    elements: raw
  expect:
    description:
      - Desired pins the host's findings must match, same keys as O(versions). A pin is exact (V(570.133.20)),
        a branch or prefix (V(570), V(12.8)) or a range (V(>=12.4,<13)).
    type: dict
  strict:
    description:
      - Also fail when a rule is C(unknown) (a version the matrix does not know).
    type: bool
    default: false
  matrix_extra:
    description:
      - Matrix rows to add, or to replace by C(id), without editing the collection. Each row needs C(id), C(kind),
        the fields of its kind (see the header of C(data/compat_matrix.yml)), C(source) and C(read).
      - Defaults to the inventory variable C(gpufleet_compat_matrix_extra).
    type: list
    elements: dict
  matrix_max_age:
    description:
      - Days after the matrix's C(as_of) date before every verdict carries a C(matrix_age) warning (what NVIDIA and
        the frameworks published since is unknown to it), 1 to 3650.
      - Defaults to the inventory variable C(gpufleet_compat_matrix_max_age), else 180.
    type: raw
  python_envs:
    description:
      - Passed to M(gpufleet.stack.stack_facts) when detecting on the host.
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.read_only
attributes:
  action:
    support: full
    description: Reads the matrix on the controller; runs M(gpufleet.stack.stack_facts) on the host to detect.
  platform:
    platforms: posix
    details: Checks given versions on the controller; detection needs a Linux host.
seealso:
  - module: gpufleet.stack.stack_facts
  - name: CUDA Toolkit release notes (Tables 2 and 3)
    description: Minimum drivers for full support and for minor-version compatibility.
    link: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
  - name: cuDNN support matrix
    description: cuDNN builds per CUDA major and their driver floors.
    link: https://docs.nvidia.com/deeplearning/cudnn/latest/reference/support-matrix.html
  - name: PyTorch release compatibility matrix
    description: CUDA variants of each PyTorch release.
    link: https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix
"""

EXAMPLES = r"""
- name: Check the desired stack on the controller before touching any host
  gpufleet.stack.stack_assert:
    versions: "{{ gpufleet_stack }}"
  delegate_to: localhost
  run_once: true

- name: Check what a host really has, against the desired pins
  gpufleet.stack.stack_assert:
    expect:
      driver: "{{ gpufleet_stack.driver }}"
      cudnn: "9"
    python_envs: [/opt/train/venv]

- name: Accept a newer driver branch the shipped matrix does not know yet
  gpufleet.stack.stack_assert:
    versions: {driver: "600.10.01", cuda: "13.2"}
    matrix_extra:
      - {id: cuda-13.2, kind: cuda_driver, cuda: "13.2", min_driver: "600.10.01",
         source: "CUDA 13.2 release notes, Table 3", read: "2027-03-01"}
"""

RETURN = r"""
matrix_as_of:
  description: The date the shipped matrix was last brought up to date (its C(as_of)).
  returned: always
  type: str
compatible:
  description: False when any check is a violation (or, with O(strict), unknown).
  returned: always
  type: bool
checks:
  description: Every rule evaluated.
  returned: always
  type: list
  elements: dict
  contains:
    rule:
      description: >-
        Rule name, e.g. C(driver_cuda), C(cudnn_cuda), C(framework_driver), C(fabricmanager_driver), C(gpu_driver),
        C(gpu_cuda), C(gpu_wheel), C(gpu_flavor), C(driver_lifecycle), C(driver_flavor), C(driver_security),
        C(container_toolkit_cve), C(matrix_age), C(gpu_release), C(gpu_cudnn), C(gpu_nccl).
      type: str
    status:
      description: C(ok), C(warning) (runs with limits, e.g. minor-version compatibility), C(violation), C(unknown).
      type: str
    message:
      description: What was compared, the verdict and, for a violation, the fix.
      type: str
    source:
      description: The matrix row id, its source and the date it was read.
      type: str
  sample:
    - rule: driver_cuda
      status: ok
      message: CUDA toolkit 12.8 is fully supported by driver 570.133.20 (needs >= 570.26)
      source: "cuda-12.8: CUDA Toolkit Release Notes, Table 3 ..., https://docs.nvidia.com/cuda/... (read 2026-12-01)"
evaluated:
  description: The stack as evaluated (given or detected), normalised.
  returned: always
  type: dict
ansible_facts:
  description: When detecting on the host, the C(gpufleet_installed) facts of M(gpufleet.stack.stack_facts).
  returned: when O(versions) is omitted
  type: dict
"""
