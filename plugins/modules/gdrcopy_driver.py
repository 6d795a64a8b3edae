#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gdrcopy_driver
short_description: GDRCopy's gdrdrv loaded and /dev/gdrdrv present where the NVIDIA driver is loaded
version_added: "0.3.0"
description:
  - >-
    GDRCopy's kernel module C(gdrdrv) (package C(gdrdrv-dkms)) needs the NVIDIA module's P2P calls, and its device
    node C(/dev/gdrdrv) is made by the package's init script from the major in C(/proc/devices) (no udev rule makes
    it). That init script reports its failures but exits 0 (Debian's C(log_failure_msg) returns 0), so
    C(gdrdrv.service) shows active while the module is not loaded: this module checks the module and the node
    themselves.
  - >-
    Where the NVIDIA driver is loaded, it loads C(gdrdrv) with C(modprobe) (which brings the NVIDIA module it depends
    on) when it is not, and makes C(/dev/gdrdrv) (mode 0666, as the init script does) when it is missing. Where the
    driver is not loaded, it changes nothing and says that both come with the next boot. A module that will not load
    fails with modprobe's message.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  device:
    description: GDRCopy's device node.
    type: path
    default: /dev/gdrdrv
  src_root:
    description: Where DKMS sources are (C(gdrdrv-<version>) there says the package is installed).
    type: path
    default: /usr/src
  sysfs_root:
    description: Root under which C(/sys) is read (tests).
    type: path
    default: /
  procfs_root:
    description: Root under which C(/proc/devices) is read (tests).
    type: path
    default: /
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: GDRCopy
    description: NVIDIA's low-latency GPU memory copy library and its gdrdrv driver.
    link: https://github.com/NVIDIA/gdrcopy
"""

EXAMPLES = r"""
- name: gdrdrv loaded where the driver is
  gpufleet.stack.gdrcopy_driver:
"""

RETURN = r"""
loaded:
  description: C(gdrdrv) is loaded (C(/sys/module/gdrdrv)).
  returned: always
  type: bool
device:
  description: C(/dev/gdrdrv) exists.
  returned: always
  type: bool
reason:
  description: What was done, or why nothing was.
  returned: always
  type: str
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read
from ansible_collections.gpufleet.stack.plugins.module_utils._node.dev_char import char_major, make_node
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.host import read_kernel_module


def loaded(sysfs_root, name):
    return os.path.isdir(os.path.join(sysfs_root, "sys", "module", name))


def main():
    module = AnsibleModule(
        argument_spec={
            "device": {"type": "path", "default": "/dev/gdrdrv"},
            "src_root": {"type": "path", "default": "/usr/src"},
            "sysfs_root": {"type": "path", "default": "/"},
            "procfs_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not glob.glob(os.path.join(p["src_root"], "gdrdrv-*")):
        module.fail_json(msg=f"gdrcopy_driver: no gdrdrv source in {p['src_root']}: is gdrdrv-dkms installed?")
    changed, done = False, []
    # /proc/driver/nvidia/version or /sys/module/nvidia: NVIDIA's build and Debian's (nvidia-current) alike.
    if not read_kernel_module(p["sysfs_root"], p["procfs_root"])["loaded"]:
        gdrdrv = loaded(p["sysfs_root"], "gdrdrv")
        module.exit_json(
            changed=False,
            loaded=gdrdrv,
            device=os.path.exists(p["device"]),
            reason="the NVIDIA driver is not loaded: gdrdrv and /dev/gdrdrv come with it at the next boot "
            "(gdrdrv.service)",
        )
    if not loaded(p["sysfs_root"], "gdrdrv"):
        changed = True
        if not module.check_mode:
            rc, out, err = module.run_command([module.get_bin_path("modprobe", required=True), "gdrdrv"])
            if rc != 0:
                module.fail_json(
                    msg=f"gdrcopy_driver: modprobe gdrdrv failed ({rc}): {(err or out).strip()[:500]}. DKMS builds "
                    "gdrdrv against the NVIDIA driver's source (/usr/src/nvidia-*): check `dkms status -m gdrdrv`",
                    loaded=False,
                    device=os.path.exists(p["device"]),
                )
        done.append("gdrdrv loaded now")
    if not os.path.exists(p["device"]):
        proc_devices = (read(os.path.join(p["procfs_root"], "proc", "devices"))[0] or b"").decode()
        major = char_major(proc_devices, "gdrdrv")
        if major is None and not module.check_mode:
            module.fail_json(
                msg="gdrcopy_driver: gdrdrv is loaded but /proc/devices lists no gdrdrv device", loaded=True
            )
        changed = True
        if not module.check_mode:
            make_node(p["device"], major)
        done.append(f"{p['device']} made")
    module.exit_json(
        changed=changed,
        loaded=True,
        device=True,
        reason="; ".join(done) or "gdrdrv loaded and /dev/gdrdrv present",
    )


if __name__ == "__main__":
    main()
