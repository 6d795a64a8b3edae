# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts of one multi-node NVLink domain, IMEX's nodes (module_utils/_controller/imex_nodes.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: imex_nodes
short_description: The addresses of the hosts in this host's multi-node NVLink domain, for IMEX's nodes file
version_added: "0.3.0"
description:
  - Every host among O(hosts) whose GPU facts (this run's or the fact cache's) report the same C(nvlink_domain) as
    O(me), by C(gpufleet_imex_address), else C(ansible_host), else its name; sorted, since the file must be the same
    on every node of the domain. Hosts whose facts are not known are not counted; gather them, or set the list.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts to look among (C(groups['all'])).
    type: list
    elements: str
    required: true
  me:
    description: This host (C(inventory_hostname)).
    type: str
    required: true
"""

EXAMPLES = r"""
imex: "{{ hostvars | gpufleet.stack.imex_nodes(groups['all'], inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: C(domain) (null when this host reports none), C(nodes) (addresses) and C(why).
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.imex_nodes import domain_nodes


class FilterModule:
    def filters(self):
        return {"imex_nodes": domain_nodes}
