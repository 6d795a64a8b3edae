# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_toolkit role's decisions (module_utils/_controller/cuda_set.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: cuda_set
short_description: The CUDA toolkits to install, their package sets, links, and the toolkits no longer listed
version_added: "0.1.0"
description:
  - From the toolkit versions (C(["12.8", "12.4.1"])), returns what the cuda_toolkit role needs for
    M(gpufleet.stack.nvidia_packages) and M(gpufleet.stack.alternatives_manual).
options:
  _input:
    description: Toolkit versions, X.Y or X.Y.Z (one string or a list).
    type: raw
    required: true
  default:
    description: The toolkit /usr/local/cuda points at; empty means the first listed.
    type: str
    default: ""
  stems:
    description: Package stems each toolkit installs, suffixed with -X-Y.
    type: list
    elements: str
    default: [cuda-toolkit]
  home:
    description: The link path prefix.
    type: str
    default: /usr/local/cuda
  dpkg_lines:
    description: C(dpkg-query -W -f '${Package}|${Version}|${Status}\n') lines, to find the toolkits no longer listed.
    type: list
    elements: str
"""

EXAMPLES = r"""
cuda: "{{ ['12.8', '12.4'] | gpufleet.stack.cuda_set(default='12.8') }}"
"""

RETURN = r"""
_value:
  description:
    - C(toolkits) (each C(spec), C(xy), C(dash), C(major)), C(dashes), C(default_xy), C(installs) (the engine's
      arguments per toolkit), C(links) (link to path), C(unlisted) (X-Y of installed toolkits not listed),
      C(unlisted_parts) and C(unlisted_held).
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.cuda_set import cuda_set


class FilterModule:
    def filters(self):
        return {"cuda_set": cuda_set}
