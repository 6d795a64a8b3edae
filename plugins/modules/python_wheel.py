#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the work is done by the action plugin of the same name (plugins/action/python_wheel.py),
# which fetches and checks the wheel on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: python_wheel
short_description: Put a pinned pure-Python wheel's modules on a host, fetched and checked on the controller
version_added: "0.1.0"
description:
  - Gets the wheel O(name)==O(version) on the controller (O(wheel), a file already there; else the controller's
    cache; else C(pip download --no-deps --only-binary=:all:) from O(index_url) or pip's own configuration), checks its
    SHA-256 against O(sha256) or the collection's recorded digest (O(known_sha256)), and checks each file taken from it
    against the wheel's RECORD.
  - The host receives the top-level O(modules) and the wheel's METADATA (as C(<name>.dist-info), so
    C(importlib.metadata) reports the version) under O(dest), in one M(gpufleet.stack.config_files) run. It needs
    no pip, no package index and no distribution package.
  - For the modules' own host-side needs, such as C(pynvml) (PyPI C(nvidia-ml-py)) for M(gpufleet.stack.gpu_facts).
    Debian's C(python3-pynvml) would pull the distribution's C(libnvidia-ml1), which conflicts with the NVIDIA
    driver's NVML.
  - The controller keeps the wheel in O(cache); forks for many hosts download it once (a lock in the cache).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  name:
    description: Distribution name on the package index.
    type: str
    required: true
  version:
    description: Exact release.
    type: str
    required: true
  sha256:
    description: SHA-256 of the wheel file; empty means O(known_sha256)'s entry for O(version).
    type: str
    default: ""
  known_sha256:
    description: "Digests the collection recorded from the package index: C(version: sha256)."
    type: dict
    default: {}
  modules:
    description: Top-level modules (C(pynvml) for C(pynvml.py)) the host gets from the wheel.
    type: list
    elements: str
    required: true
  dest:
    description: Directory on the host; the code that imports the modules puts it on C(sys.path).
    type: path
    required: true
  wheel:
    description: Path on the controller of the wheel file, for controllers that reach no package index.
    type: str
    default: ""
  index_url:
    description: Package index (a mirror's C(/simple) URL); empty leaves it to the controller's pip configuration.
    type: str
    default: ""
  cache:
    description: Directory on the controller that keeps downloaded wheels.
    type: str
    default: ~/.cache/gpufleet/wheels
  var_prefix:
    description: Prefix of the calling role's variables (C(pynvml_)), so errors name what the user sets.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: The wheel is still fetched into the controller's cache; the host is only compared.
  diff_mode:
    support: full
    details: Files over 8192 characters appear as their size.
  platform:
    platforms: posix
seealso:
  - module: gpufleet.stack.config_files
  - module: gpufleet.stack.gpu_facts
"""

EXAMPLES = r"""
- name: NVML's Python bindings for gpu_facts
  gpufleet.stack.python_wheel:
    name: nvidia-ml-py
    version: "13.615.71"
    known_sha256: {"13.615.71": "959bf4adf6fe1308e4bd739e722236b0d1ec8392e2cefad33ff70c311380b9b6"}
    modules: [pynvml]
    dest: /usr/local/lib/gpufleet/python
"""

RETURN = r"""
files:
  description: Each file written on the host, with whether it changed (config_files' list).
  returned: success
  type: list
  elements: dict
wheel:
  description: The wheel's path on the controller.
  returned: success
  type: str
wheel_origin:
  description: C(given), C(cache) or C(downloaded).
  returned: success
  type: str
sha256:
  description: The digest the wheel was checked against.
  returned: success
  type: str
"""
