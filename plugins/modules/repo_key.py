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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.gpufleet.stack.plugins.module_utils._openpgp import KeyError_, normalize, primary_fingerprints


def fetch(module):
    if module.params["content"] is not None:
        return module.params["content"].encode(), "content"
    url = module.params["url"]
    response, info = fetch_url(module, url, timeout=module.params["timeout"])
    if info["status"] != 200:
        module.fail_json(msg=f"repo_key: could not download url {url}: {info.get('msg')} (HTTP {info['status']})")
    return response.read(), url


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
    want, dest = normalize(module.params["fingerprint"]), module.params["dest"]
    if len(want) not in (40, 64) or any(c not in "0123456789ABCDEF" for c in want):
        module.fail_json(
            msg=f"repo_key: fingerprint {module.params['fingerprint']!r} is not a full key fingerprint; "
            "give all 40 hex digits (gpg --show-keys --with-fingerprint KEYFILE), not a short key id"
        )
    data, source = fetch(module)
    try:
        raw, found = primary_fingerprints(data)
    except KeyError_ as exc:
        module.fail_json(msg=f"repo_key: {source} is not an OpenPGP public key: {exc}")
    if found != [want]:
        module.fail_json(
            msg=f"repo_key: {source} holds key(s) {', '.join(found)}, not the pinned fingerprint {want}; "
            f"{dest} was left unchanged. If the repository really rotated its key, check the new fingerprint "
            "with its publisher and update the pin.",
            found=found,
        )
    current = None
    if os.path.exists(dest):
        with open(dest, "rb") as f:
            current = f.read()
    result = {"changed": current != raw, "fingerprint": want, "dest": dest}
    if result["changed"] and not module.check_mode:
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        tmp = f"{dest}.gpufleet-tmp"
        with open(tmp, "wb") as f:
            f.write(raw)
        module.atomic_move(tmp, dest)
    mode = int(module.params["mode"], 8)
    if os.path.exists(dest) and os.stat(dest).st_mode & 0o7777 != mode:
        result["changed"] = True
        if not module.check_mode:
            os.chmod(dest, mode)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
