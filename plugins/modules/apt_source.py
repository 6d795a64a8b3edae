#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_source
short_description: Exactly one apt source definition of a repository, adopting or replacing one made another way
version_added: "0.1.0"
description:
  - Finds every enabled definition of O(uri) in C(/etc/apt/sources.list) and C(/etc/apt/sources.list.d/) (one-line
    C(.list) entries and deb822 C(.sources) stanzas), then leaves exactly one.
  - A definition made another way (NVIDIA's C(cuda-keyring) package, the Container Toolkit's install guide) whose
    C(signed-by) keyring holds exactly the pinned O(fingerprint) is adopted - O(dest) is not written, or removed - so
    a later upgrade of C(cuda-keyring) cannot bring back a second definition.
  - Otherwise (another key, no C(signed-by), or O(adopt=false)) those definitions are disabled with a comment saying
    why, and O(dest) is written with O(content).
  - Two definitions of one URI with different C(Signed-By) make every apt command fail with "Conflicting values set
    for option Signed-By".
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  uri:
    description: The repository URI, as in a C(deb) line (a trailing slash does not matter).
    type: str
    required: true
  dest:
    description: This collection's source file for it, e.g. C(/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources).
    type: path
    required: true
  content:
    description: The text of O(dest).
    type: str
    required: true
  fingerprint:
    description: The pinned fingerprint a definition's keyring must hold, alone, to be adopted.
    type: str
    required: true
  adopt:
    description: Adopt a matching definition made another way (V(true)), or always disable it and write O(dest).
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: debian
seealso:
  - module: gpufleet.stack.repo_key
  - module: ansible.builtin.deb822_repository
"""

EXAMPLES = r"""
- name: NVIDIA's CUDA repository, once
  gpufleet.stack.apt_source:
    uri: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
    dest: /etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources
    content: "{{ lookup('ansible.builtin.template', 'repo.sources.j2') }}"
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
"""

RETURN = r"""
adopted:
  description: The files whose definition was adopted (O(dest) not used).
  returned: always
  type: list
  elements: str
  sample: [/etc/apt/sources.list.d/cuda-debian12-x86_64.list]
disabled:
  description: The files in which a definition was disabled.
  returned: always
  type: list
  elements: str
source:
  description: The file that defines the repository now.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt.repo import ensure_source


def main():
    module = AnsibleModule(
        argument_spec={
            "uri": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "content": {"type": "str", "required": True},
            "fingerprint": {"type": "str", "required": True},
            "adopt": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    result, diffs = ensure_source(module, p["uri"], p["dest"], p["content"], p["fingerprint"], adopt=p["adopt"])
    module.exit_json(diff=diffs, **result)


if __name__ == "__main__":
    main()
