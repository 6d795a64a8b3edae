#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: repo_key
short_description: Install a package repository signing key only when it has the pinned fingerprint
version_added: "0.1.0"
description:
  - Downloads an OpenPGP public key (armored or binary), computes the fingerprint of its primary key without
    C(gpg) on the host, and writes it (binary, as C(signed-by=) and C(rpm --import) read it) to O(dest) only
    when it is exactly the key pinned by O(fingerprint).
  - A key block holding any other primary key is refused, so a tampered or swapped key file can never add trust.
  - Replaces C(apt_key), C(trusted=yes) and C(curl | gpg --dearmor) recipes.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  url:
    description: Where to download the key (C(https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub)).
    type: str
  content:
    description: The key itself, armored, instead of O(url).
    type: str
  fingerprint:
    description:
      - The full fingerprint of the one primary key the file must hold (40 hex digits for v4 keys; spaces allowed).
    type: str
    required: true
  dest:
    description: Where to write the binary key, e.g. C(/usr/share/keyrings/nvidia-cuda.gpg).
    type: path
    required: true
  mode:
    description: File mode of O(dest).
    type: str
    default: "0644"
  validate_certs:
    description: Verify the TLS certificate of O(url).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for O(url).
    type: int
    default: 30
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Downloads and checks the key, reports whether O(dest) would change, writes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: NVIDIA CUDA repository keys
    description: The key of each distribution's CUDA repository (C(3bf863cc) for Debian 12, C(8793F200) for Debian 13).
    link: https://github.com/NVIDIA/cuda-repo-management
"""

EXAMPLES = r"""
- name: Trust NVIDIA's Debian 12 CUDA repository key, and only that key
  gpufleet.stack.repo_key:
    url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    dest: /usr/share/keyrings/gpufleet-nvidia-cuda.gpg
"""

RETURN = r"""
fingerprint:
  description: The fingerprint of the key written (or that would be written).
  returned: success
  type: str
  sample: EB693B3035CD5710E231E123A4B469963BF863CC
dest:
  description: The key file.
  returned: success
  type: str
  sample: /usr/share/keyrings/gpufleet-nvidia-cuda.gpg
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._common.schema import secrets
from ansible_collections.gpufleet.stack.plugins.module_utils._node.apt.repo import (
    RepoError,
    check_url,
    ensure_key,
    fetch_key,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import TargetError, check_dest, parse_mode


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str"},
            "content": {"type": "str"},
            "fingerprint": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "mode": {"type": "str", "default": "0644"},
            "validate_certs": {"type": "bool", "default": True},
            "timeout": {"type": "int", "default": 30},
        },
        required_one_of=[("url", "content")],
        mutually_exclusive=[("url", "content")],
        supports_check_mode=True,
    )
    p = module.params
    module.no_log_values.update(secrets(p["url"]))
    # Every argument before the download, and the download before the write: a refusal leaves dest as it was.
    try:
        mode = parse_mode("mode", p["mode"])
        check_dest("dest", p["dest"])
        if p["url"] is not None:
            check_url("url", p["url"])
        data, source = fetch_key(module, p["url"], p["content"], p["timeout"])
        module.exit_json(**ensure_key(module, data, source, p["fingerprint"], p["dest"], mode=mode))
    except (TargetError, RepoError) as err:
        module.fail_json(msg=f"repo_key: {err}", **getattr(err, "extra", {}))


if __name__ == "__main__":
    main()
