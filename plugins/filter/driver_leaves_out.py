# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvidia_driver role leaves out on a host, and its initramfs rebuild (_controller/driver_host.py), as a
filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: driver_leaves_out
short_description: What the nvidia_driver role leaves out on a host, and why, and whether it rebuilds the initramfs
version_added: "0.9.0"
description:
  - From M(gpufleet.stack.driver_state)'s reading of the host and the configure stage's result, one reason per part
    the role leaves out (DKMS and headers, the initramfs rebuild, the reboot check in a container, IMEX's nodes file),
    and whether the host's initramfs is rebuilt (the nouveau blacklist changed on a host that owns its kernels and
    has the initramfs tool).
options:
  _input:
    description: The result of M(gpufleet.stack.driver_state) (C(owns_kernels), C(initramfs_tool), C(kernel_targets)).
    type: dict
    required: true
  in_container:
    description: Whether the host is a container (its running kernel is not its own).
    type: bool
    required: true
  virtualization:
    description: The container's kind, as Ansible's C(virtualization_type) says it.
    type: str
    default: ""
  blacklist_nouveau:
    description: Whether the role blacklists nouveau.
    type: bool
    default: false
  dkms:
    description: Whether the role installs DKMS and headers.
    type: bool
    default: true
  initramfs_tool:
    description: The initramfs tool's path, for the message.
    type: str
    default: update-initramfs
  changed_files:
    description: The files M(gpufleet.stack.config_files) changed.
    type: list
    elements: str
    default: []
  nouveau_file:
    description: The nouveau blacklist's path.
    type: str
    default: ""
  imex:
    description: Whether the host gets IMEX.
    type: bool
    default: false
  imex_nodes:
    description: The IMEX nodes the inventory gives (C(nvidia_driver_imex_nodes)).
    type: list
    elements: str
    default: []
  imex_domain:
    description: The C(gpufleet.stack.imex_nodes) filter's answer for the host.
    type: dict
"""

EXAMPLES = r"""
leaves: "{{ __state | gpufleet.stack.driver_leaves_out(in_container=false, blacklist_nouveau=true) }}"
"""

RETURN = r"""
_value:
  description: C(skipped), the reasons (a list of strings), and C(initramfs_rebuild), a bool.
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_host import leaves_out


class FilterModule:
    def filters(self):
        return {"driver_leaves_out": leaves_out}
