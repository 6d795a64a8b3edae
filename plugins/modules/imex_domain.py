#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: imex_domain
short_description: IMEX's nodes file and its default channel on a node of a multi-node NVLink domain
version_added: "0.3.0"
description:
  - >-
    On GB200/GB300 NVL trays CUDA shares GPU memory across the nodes of an NVLink domain through the IMEX service
    (package C(nvidia-imex)). It needs the domain's nodes in O(nodes_file), the same file on every node (a node
    whose map differs shows C(!M!) to its peers), and a channel device: without
    C(/dev/nvidia-caps-imex-channels/channel0) CUDA's fabric-memory calls fail with an insufficient-permission error
    (NVIDIA's IMEX guide, "IMEX Channels").
  - >-
    Writes O(nodes_file) (the O(nodes), sorted, one per line) and O(modprobe_file)
    (C(options nvidia NVreg_CreateImexChannel0=1): the driver makes channel0 at every load, from driver 555). Where
    the driver is loaded and has registered C(nvidia-caps-imex-channels) in C(/proc/devices) but channel0 is
    missing, it is made now with that major (C(mknod), as the guide does by hand); otherwise it comes with the
    driver's next load. Refuses an empty list or a node that is not an address or host name, before writing.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  nodes:
    description: The domain's nodes, IP addresses or host names (DNS names from driver 570.158.01).
    type: list
    elements: str
    required: true
  nodes_file:
    description: IMEX's node list (C(IMEX_NODE_CONFIG_FILE) in C(/etc/nvidia-imex/config.cfg)).
    type: path
    default: /etc/nvidia-imex/nodes_config.cfg
  modprobe_file:
    description: The modprobe.d file the module owns.
    type: path
    default: /etc/modprobe.d/gpufleet-imex.conf
  channel:
    description: The default channel's device node.
    type: path
    default: /dev/nvidia-caps-imex-channels/channel0
  procfs_root:
    description: Root under which C(/proc/devices) is read (tests).
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
  - name: NVIDIA IMEX Service for NVLink Networks
    description: The service, its nodes file and its channels.
    link: https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/
"""

EXAMPLES = r"""
- name: IMEX for this tray's NVLink domain
  gpufleet.stack.imex_domain:
    nodes: [10.0.0.11, 10.0.0.12]
"""

RETURN = r"""
changed_files:
  description: The files written.
  returned: always
  type: list
  elements: str
nodes:
  description: The nodes file's lines.
  returned: always
  type: list
  elements: str
channel0:
  description: C(present), C(created) (made now) or C(next_load) (the driver makes it when it loads next).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write
from ansible_collections.gpufleet.stack.plugins.module_utils._node.dev_char import make_node
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import imex


def main():
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "str", "required": True},
            "nodes_file": {"type": "path", "default": imex.NODES_FILE},
            "modprobe_file": {"type": "path", "default": imex.MODPROBE_FILE},
            "channel": {"type": "path", "default": imex.CHANNEL0},
            "procfs_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    p = module.params
    problems = imex.check_nodes(p["nodes"])
    if problems:
        module.fail_json(msg="imex_domain: " + "; ".join(problems) + " (nvidia_driver_imex_nodes)")
    wanted = {p["nodes_file"]: imex.nodes_text(p["nodes"]), p["modprobe_file"]: imex.MODPROBE_TEXT}
    changed_files = [path for path, text in wanted.items() if read(path)[0] != text.encode()]
    if not module.check_mode:
        for path in changed_files:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            write(module, path, wanted[path], 0o644)
    channel = "present"
    if not os.path.exists(p["channel"]):
        major = imex.channel_major((read(os.path.join(p["procfs_root"], "proc", "devices"))[0] or b"").decode())
        channel = "next_load" if major is None else "created"
        if major is not None and not module.check_mode:
            make_node(p["channel"], major)
    module.exit_json(
        changed=bool(changed_files) or channel == "created",
        changed_files=changed_files,
        nodes=sorted(set(p["nodes"])),
        channel0=channel,
    )


if __name__ == "__main__":
    main()
