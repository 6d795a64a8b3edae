# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts' Slurm node names (module_utils/_controller/rollout.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_names
short_description: The Slurm NodeName of each host
version_added: "0.9.0"
description:
  - Each host's C(node_drain_slurm_node_name) where the inventory sets it, else its short host name.
options:
  _input:
    description: Inventory host names.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: raw
    required: true
"""

EXAMPLES = r"""
nodes: "{{ ansible_play_hosts | gpufleet.stack.slurm_names(hostvars) }}"
"""

RETURN = r"""
_value:
  description: The names, in the order of the hosts.
  type: list
  elements: str
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.rollout import slurm_names


class FilterModule:
    def filters(self):
        return {"slurm_names": slurm_names}
