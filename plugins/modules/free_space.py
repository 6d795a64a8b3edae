#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: free_space
short_description: Refuse an install that the host's filesystems have no room for, with the figures
version_added: "0.1.0"
description:
  - Groups the directories an install writes by the filesystem they are on, sums what each filesystem must hold, and
    fails when one has less free space (for root) than that, naming the filesystem's directories and both figures.
    A directory that does not exist yet is counted on the filesystem of its nearest existing parent.
  - Read-only. C(playbooks/upgrade.yml) runs it on every host before the first batch, so a full C(/boot) or C(/var)
    stops the rollout before any node is drained.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  needs:
    description:
      - Directory to MiB it needs free. Default what an NVIDIA driver, CUDA and DKMS upgrade writes
        (C(/var/cache/apt/archives) 1024, C(/usr) 4096, C(/var/lib/dkms) 512, C(/boot) 200).
    type: dict
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.read_only
attributes:
  platform:
    platforms: posix
    details: Linux hosts.
"""

EXAMPLES = r"""
- name: Check the host has room for the upgrade
  gpufleet.stack.free_space:
    needs: {/boot: 300, /usr: 4096}
"""

RETURN = r"""
filesystems:
  description: One line per filesystem, its free space, its directories with what each needs, and the sum.
  returned: always
  type: list
  elements: str
  sample: ["180 MiB free for /boot (the initramfs of each kernel, 200 MiB): 200 MiB needed"]
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node import disk


def statvfs(path):
    st = os.statvfs(path)
    return {"device": os.stat(path).st_dev, "free": st.f_bavail * st.f_frsize}


def main():
    module = AnsibleModule(argument_spec={"needs": {"type": "dict"}}, supports_check_mode=True)
    given = module.params["needs"]
    needs = dict(disk.DEFAULT_NEEDS) if given is None else {}
    for directory, mib in (given or {}).items():
        # ASCII digits only, as the inventory schema reads numbers (str.isdigit also takes "١٢٠").
        if not str(directory).startswith("/") or not re.fullmatch(r"[0-9]+", str(mib)):
            module.fail_json(msg=f"needs: {directory}: {mib} is not an absolute directory and a whole number of MiB")
        needs[directory] = (int(mib), disk.DEFAULT_NEEDS.get(directory, (0, "the install"))[1])
    problems, figures = disk.shortfalls(needs, statvfs, os.path.isdir)
    if problems:
        module.fail_json(
            msg="not enough free space for the install, nothing was changed: "
            + "; ".join(problems)
            + ". Free space there (apt-get clean, old kernels: apt autoremove --purge) or lower the needs "
            "(gpufleet_upgrade_free_mib)",
            filesystems=figures,
        )
    module.exit_json(changed=False, filesystems=figures)


if __name__ == "__main__":
    main()
