#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpudirect_rdma
short_description: nvidia-peermem loaded at every boot, and now, where the node has an RDMA device
version_added: "0.3.0"
description:
  - >-
    GPUDirect RDMA lets the NIC read and write GPU memory; without the C(nvidia-peermem) kernel module NCCL silently
    stages every transfer through host memory (NVIDIA/nccl#1537, NVIDIA/deepops#1300). NVIDIA's driver packages and
    Debian's C(nvidia-kernel-dkms) both build it; Debian's C(nvidia-kernel-support) maps C(modprobe nvidia-peermem) to
    its renamed C(nvidia-current-peermem), so one name serves both.
  - >-
    nvidia-peermem registers with the IB core's peer-memory API, which only MLNX_OFED's (DOCA-OFED's) ib_core exports:
    built against an inbox ib_core (Debian's kernels) its init returns EINVAL (NVIDIA's nvidia-peermem.c). There,
    GPUDirect RDMA goes through DMA-BUF (C(ib_umem_dmabuf_get), kernels from 5.12, the open kernel modules), which
    needs no module. The module reads which of the two the kernel offers from depmod's C(modules.symbols).
  - >-
    With O(state=auto) it is wanted where C(/sys/class/infiniband) lists a device to other nodes and the kernel's
    IB core has the peer-memory API (or its symbols cannot be read: a container's kernel is the host's). Wanted, the
    module writes
    O(modules_load_file) (systemd-modules-load loads it at every boot; modprobe brings in its dependencies, the
    driver and the IB core), and loads it now with C(modprobe) when the driver is loaded; a module that will not load
    fails with modprobe's message (a driver built without the IB core, a kernel without it). Not wanted, our file is
    removed.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  state:
    description: C(auto) (where an RDMA device exists), C(present) or C(absent).
    type: str
    choices: [auto, present, absent]
    default: auto
  modules_load_file:
    description: The modules-load.d file the module owns.
    type: path
    default: /etc/modules-load.d/gpufleet-nvidia-peermem.conf
  kernel:
    description: The kernel whose modules are read; empty is the running one.
    type: str
    default: ""
  modules_root:
    description: Where the kernels' modules are (C(<modules_root>/<kernel>/modules.symbols)).
    type: path
    default: /lib/modules
  header:
    description: A comment put first in the file.
    type: str
    default: ""
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
    support: none
  platform:
    platforms: posix
seealso:
  - name: GPUDirect RDMA
    description: NVIDIA's guide; nvidia-peermem must be loaded for GPUDirect RDMA.
    link: https://docs.nvidia.com/cuda/gpudirect-rdma/
"""

EXAMPLES = r"""
- name: nvidia-peermem where the node has RDMA devices
  gpufleet.stack.gpudirect_rdma:
"""

RETURN = r"""
wanted:
  description: Whether nvidia-peermem is wanted on this node.
  returned: always
  type: bool
loaded:
  description: Whether it is loaded now (C(/sys/module/nvidia_peermem)).
  returned: always
  type: bool
peer_memory_api:
  description: The kernel's IB core exports the peer-memory API nvidia-peermem needs; null when unknown.
  returned: always
  type: bool
dmabuf:
  description: >-
    The kernel can register DMA-BUF memory for RDMA (GPUDirect RDMA without nvidia-peermem); null when unknown.
  returned: always
  type: bool
reason:
  description: Why it is wanted or not, and whether it was loaded now or waits for the driver.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric.devices import (
    PEER_MEMORY_SYMBOL,
    kernel_rdma_api,
    network_devices,
    peermem_loaded,
    read_rdma,
)

MODULE = "nvidia-peermem"


def explain(devices, kernel, api):
    """Why nvidia-peermem is wanted on auto, or not."""
    if not devices:
        return "no RDMA device to other nodes in /sys/class/infiniband"
    reason = f"RDMA devices {', '.join(devices)}"
    if api["peer_memory"] is False:
        reason += (
            f"; but kernel {kernel}'s IB core has no peer-memory API ({PEER_MEMORY_SYMBOL}: an inbox RDMA stack, "
            "not MLNX_OFED or DOCA-OFED), so nvidia-peermem cannot load (its init returns EINVAL); GPUDirect RDMA "
            + ("goes through DMA-BUF (open kernel modules)" if api["dmabuf"] else "is not available (no DMA-BUF)")
        )
    return reason


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["auto", "present", "absent"], "default": "auto"},
            "modules_load_file": {"type": "path", "default": "/etc/modules-load.d/gpufleet-nvidia-peermem.conf"},
            "header": {"type": "str", "default": ""},
            "kernel": {"type": "str", "default": ""},
            "modules_root": {"type": "path", "default": "/lib/modules"},
            "sysfs_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    p = module.params
    # The NVSwitch management bridge of an NVLink 5 baseboard is an RDMA device too, but no path to another node.
    devices = [d["name"] for d in network_devices(read_rdma(p["sysfs_root"]))]
    kernel = p["kernel"] or os.uname().release
    api = kernel_rdma_api(p["modules_root"], kernel)
    wanted = p["state"] == "present" or (p["state"] == "auto" and bool(devices) and api["peer_memory"] is not False)
    reason = explain(devices, kernel, api)
    path = p["modules_load_file"]
    current = read(path)[0]
    text = ((p["header"].rstrip("\n") + "\n") if p["header"] else "") + MODULE + "\n"
    changed = (current != text.encode()) if wanted else current is not None
    if changed and not module.check_mode:
        if wanted:
            write(module, path, text, 0o644)
        else:
            os.remove(path)
    loaded = peermem_loaded(p["sysfs_root"])
    driver = os.path.isdir(os.path.join(p["sysfs_root"], "sys", "module", "nvidia"))
    if wanted and not loaded and driver and not module.check_mode:
        rc, out, err = module.run_command([module.get_bin_path("modprobe", required=True), MODULE])
        if rc != 0:
            module.fail_json(
                msg=f"gpudirect_rdma: modprobe {MODULE} failed ({rc}): {(err or out).strip()[:500]}. The driver's "
                "DKMS build makes nvidia-peermem only where the kernel has the IB core (ib_core): check "
                "`modinfo nvidia-peermem` and the DKMS build log",
                wanted=wanted,
            )
        loaded, changed = True, True
        reason += f"; {MODULE} loaded now"
    elif wanted and not loaded:
        reason += f"; the driver is not loaded: {MODULE} loads with it at the next boot"
    module.exit_json(
        changed=changed,
        wanted=wanted,
        loaded=loaded,
        reason=reason,
        peer_memory_api=api["peer_memory"],
        dmabuf=api["dmabuf"],
    )


if __name__ == "__main__":
    main()
