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

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils import _apt_sources as src
from ansible_collections.gpufleet.stack.plugins.module_utils._atomic import write
from ansible_collections.gpufleet.stack.plugins.module_utils._openpgp import KeyError_, normalize, primary_fingerprints

MAIN = "/etc/apt/sources.list"
PARTS = "/etc/apt/sources.list.d"


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def keyring_fingerprints(path):
    try:
        with open(path, "rb") as f:
            return primary_fingerprints(f.read())[1]
    except (OSError, KeyError_):
        return []


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
    paths = [MAIN, *sorted(glob.glob(f"{PARTS}/*.list") + glob.glob(f"{PARTS}/*.sources"))]
    files = {path: text for path in paths if path != p["dest"] and (text := read(path)) is not None}
    rc, arch, _err = module.run_command(["dpkg", "--print-architecture"])
    foreign = src.find(files, p["uri"], arch.strip() if rc == 0 else "amd64")
    pinned = normalize(p["fingerprint"])
    adoptable = bool(foreign) and p["adopt"] and all(keyring_fingerprints(f["signed_by"]) == [pinned] for f in foreign)
    current = read(p["dest"])
    result = {"adopted": [], "disabled": [], "source": p["dest"], "changed": False}
    diffs = []
    if adoptable:
        result["adopted"] = sorted({f["path"] for f in foreign})
        result["source"] = result["adopted"][0]
        if current is not None:
            result["changed"] = True
            diffs.append({"before_header": p["dest"], "before": current, "after": ""})
            if not module.check_mode:
                os.unlink(p["dest"])
    else:
        for path in sorted({f["path"] for f in foreign}):
            text = src.disable(files[path], [f for f in foreign if f["path"] == path])
            diffs.append({"before_header": path, "after_header": path, "before": files[path], "after": text})
            result["disabled"].append(path)
            if not module.check_mode:
                write(module, path, text)
        if current != p["content"]:
            diffs.append(
                {"before_header": p["dest"], "after_header": p["dest"], "before": current or "", "after": p["content"]}
            )
            if not module.check_mode:
                write(module, p["dest"], p["content"])
        result["changed"] = bool(result["disabled"]) or current != p["content"]
    module.exit_json(diff=diffs, **result)


if __name__ == "__main__":
    main()
