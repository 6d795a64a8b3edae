# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NVLink fabric parts a node gets (module_utils/_controller/driver_set.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_wanted
short_description: Whether a node gets Fabric Manager, NVLSM and IMEX, from its GPU facts and the role's settings
version_added: "0.3.0"
description:
  - For each of C(fabricmanager), C(nvlsm) and C(imex), C(auto) takes gpu_facts' C(fabricmanager_required),
    C(nvlsm_required) or C(imex_required); C(true) or C(false) force it.
options:
  _input:
    description: The host's gpu_facts (C(gpufleet_gpu)).
    type: dict
    required: true
  fabricmanager:
    description: auto, true or false.
    type: raw
    default: auto
  nvlsm:
    description: auto, true or false.
    type: raw
    default: auto
  imex:
    description: auto, true or false.
    type: raw
    default: auto
"""

EXAMPLES = r"""
wanted: "{{ gpufleet_gpu | gpufleet.stack.fabric_wanted(fabricmanager='auto', nvlsm=false, imex='auto') }}"
"""

RETURN = r"""
_value:
  description: C(fabricmanager), C(nvlsm) and C(imex), each a bool.
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.driver_set import fabric_wanted


class FilterModule:
    def filters(self):
        return {"fabric_wanted": fabric_wanted}
