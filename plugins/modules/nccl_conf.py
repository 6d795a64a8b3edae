#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_conf
short_description: /etc/nccl.conf from the user's NCCL settings and the network part derived from the node's fabric
version_added: "0.3.0"
description:
  - >-
    With O(network=auto), on a node with an active RDMA port (C(/sys/class/infiniband)): C(NCCL_IB_HCA) naming
    exactly its active HCA ports (C(=mlx5_0:1,...): NCCL's prefix match would also take mlx5_10 for mlx5_1),
    C(NCCL_SOCKET_IFNAME) (O(socket_ifname), else the interface of the default route), C(NCCL_IB_GID_INDEX) on RoCE
    where every active RoCE port has its RoCE v2 IPv4 GID at the same index, and C(NCCL_NET_GDR_LEVEL) only where
    nvidia-peermem is loaded, at the farthest of each GPU's nearest HCA (at most PHB). A node without one gets
    nothing derived.
  - O(settings) always win over what is derived, key by key.
  - >-
    Refuses, before writing, a C(NCCL_IB_HCA) or C(NCCL_SOCKET_IFNAME) in O(settings) that selects no RDMA device or
    interface of this node (exclusion lists, C(^...), are not refused).
  - The file holds sorted C(KEY=VALUE) lines after O(header); with nothing to write it is removed.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  settings:
    description: The user's C(NCCL_*) settings (role nccl's C(nccl_settings)).
    type: dict
    default: {}
  network:
    description: C(auto) derives the network part from the node's fabric; C(off) writes O(settings) alone.
    type: str
    choices: [auto, "off"]
    default: auto
  socket_ifname:
    description: The interface for NCCL's bootstrap and sockets where RDMA exists; empty takes the default route's.
    type: str
    default: ""
  path:
    description: The file.
    type: path
    default: /etc/nccl.conf
  header:
    description: Comment lines put first.
    type: str
    default: ""
  sysfs_root:
    description: Root under which C(/sys) is read (tests).
    type: path
    default: /
  procfs_root:
    description: Root under which C(/proc/net/route) is read (tests).
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
seealso:
  - name: NCCL environment variables
    description: NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_IB_GID_INDEX, NCCL_NET_GDR_LEVEL and /etc/nccl.conf.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
"""

EXAMPLES = r"""
- name: /etc/nccl.conf with the network part from the fabric
  gpufleet.stack.nccl_conf:
    settings: {NCCL_DEBUG: WARN}
"""

RETURN = r"""
settings:
  description: What the file holds, derived and user settings merged.
  returned: always
  type: dict
derived:
  description: What the fabric gave before the user's settings were merged.
  returned: always
  type: dict
notes:
  description: Why a setting was not derived (no active port, no peermem, GIDs that differ).
  returned: always
  type: list
  elements: str
fabric:
  description: C(ib), C(roce), C(down) (devices without an active port) or C(none).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import devices as fab
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import nccl as nn
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.host import read_pci_devices, read_text


def default_route_interface(procfs_root):
    """The interface of the IPv4 default route (/proc/net/route: Destination 00000000), or ""."""
    for line in (read_text(os.path.join(procfs_root, "proc/net/route")) or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) > 1 and fields[1] == "00000000":
            return fields[0]
    return ""


def main():
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "default": {}},
            "network": {"type": "str", "choices": ["auto", "off"], "default": "auto"},
            "socket_ifname": {"type": "str", "default": ""},
            "path": {"type": "path", "default": "/etc/nccl.conf"},
            "header": {"type": "str", "default": ""},
            "sysfs_root": {"type": "path", "default": "/"},
            "procfs_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    p = module.params
    user = {str(k): str(v) for k, v in p["settings"].items()}
    gpus = [dev["bus_id"] for dev in read_pci_devices(p["sysfs_root"]) if dev["is_gpu"]]
    fabric = fab.fabric_facts(p["sysfs_root"], gpus)
    devices = fabric["devices"]
    interfaces = fab.interfaces(p["sysfs_root"])
    wrong = nn.problems(user, devices, interfaces)
    if wrong:
        module.fail_json(
            msg=f"nccl_conf: nccl_settings: {'; '.join(wrong)}. Name what the node has, or use ^ to exclude"
        )
    derived, notes = {}, ["network: off"]
    if p["network"] == "auto":
        derived, notes = nn.derive(
            devices,
            peermem=fabric["peermem"],
            distances=fabric["gpu_nic"],
            socket_ifname=p["socket_ifname"] or default_route_interface(p["procfs_root"]),
        )
    merged = {**derived, **user}
    data, _mode = read(p["path"])
    before = None if data is None else data.decode(errors="replace")
    after = nn.render(merged, p["header"]) if merged else None
    changed = before != after
    if changed and not module.check_mode:
        if after is None:
            os.remove(p["path"])
        else:
            write(module, p["path"], after, 0o644)
    result = {
        "changed": changed,
        "settings": merged,
        "derived": derived,
        "notes": notes,
        "fabric": fab.summary(devices),
    }
    if changed and module._diff:
        result["diff"] = {
            "before_header": p["path"],
            "after_header": p["path"],
            "before": before or "",
            "after": after or "",
        }
    module.exit_json(**result)


if __name__ == "__main__":
    main()
