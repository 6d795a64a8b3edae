#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: driver_state
short_description: What the NVIDIA driver's host runs now, read in one module run
version_added: "0.1.0"
description:
  - Reads the Secure Boot state (C(mokutil --sb-state) when installed, else the C(SecureBoot) EFI variable, whose
    fifth byte is 1 when it is on), the loaded nvidia kernel module's version (as M(gpufleet.stack.gpu_facts) reads
    it, C(/proc/driver/nvidia/version) else C(/sys/module/nvidia/version)), whether the driver's control device
    exists, and whether the initramfs tool is installed.
  - With O(driver_version), also which kernel boots next and whether it has an nvidia module for that driver
    (RV(next_boot_problem)); the role refuses a reboot that would come up without one.
  - In a container the loaded module is the host kernel's and not reported, except where the NVML library is the
    gpufleet sandbox's simulator, which stands in for the kernel module too, and its profile's
    C(host.kernel_module_version) is the loaded version (as M(gpufleet.stack.gpu_facts) reports it).
  - Read-only. The nvidia_driver role reads these once, in preflight, where it used four module runs.
  - DKMS builds unsigned modules unless a Machine Owner Key signs them; with Secure Boot on, the kernel refuses to
    load them (U(https://wiki.debian.org/SecureBoot#DKMS_and_secure_boot)).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  in_container:
    description: The kernel is not the host's own (a container); then the loaded module is the host's, not ours.
    type: bool
    default: false
  sysfs_root:
    description: Root under which C(/sys) is read (tests point it at a fixture tree).
    type: path
    default: /
  procfs_root:
    description: Root under which C(/proc) is read.
    type: path
    default: /
  device:
    description: The driver's control device.
    type: path
    default: /dev/nvidiactl
  initramfs_tool:
    description: The initramfs tool whose presence is reported (C(update-initramfs), C(dracut)).
    type: path
    default: /usr/sbin/update-initramfs
  secure_boot_var:
    description: The EFI variable C(SecureBoot-<EFI global variable GUID>).
    type: path
    default: /sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
  driver_version:
    description: The installed driver; when set, the kernels and the next boot's module are read for it.
    type: str
    default: ""
  boot_root:
    description: Root under which C(/boot), C(/vmlinuz), C(/lib/modules) and C(/var/lib/dkms) are read.
    type: path
    default: /
  dkms:
    description:
      - Whether the driver's module is built with DKMS here; then RV(kernel_packages) names what the build needs.
    type: bool
    default: false
  headers_format:
    description: The headers package of one kernel release, C({}) standing for the release.
    type: str
    default: linux-headers-{}
  headers_package:
    description: The headers metapackage that follows new kernels; empty takes Debian's for the next kernel's flavour.
    type: str
    default: ""
  package_query:
    description:
      - A command that exits 0 when the package named after it can be installed (C(apt-cache show
        --no-all-versions), C(dnf -q list)); each target kernel's headers package is asked for only when it can
        (RV(headers_unavailable)). Empty asks for every one.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.READ_ONLY
attributes:
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Read what the driver's host runs now
  gpufleet.stack.driver_state:
  register: state
"""

RETURN = r"""
running_version:
  description: The loaded nvidia module's version; empty when none is loaded, or in a container.
  returned: always
  type: str
device:
  description: Whether the control device exists (the GPU units can start).
  returned: always
  type: bool
initramfs_tool:
  description: Whether the initramfs tool is installed.
  returned: always
  type: bool
secure_boot:
  description: "C(enabled) (bool), C(source) (mokutil, efivar or none) and C(detail) (what was read)."
  returned: always
  type: dict
kernels:
  description: As in M(gpufleet.stack.stack_facts)' C(kernels) (running, next_boot, each kernel's nvidia module).
  returned: when O(driver_version) is set
  type: dict
owns_kernels:
  description:
    - Whether the host's kernels are its own to build for (not a container, or a container holding kernels in
      C(/boot), such as the sandbox's debian12-kernel nodes, whose next boot they are).
  returned: always
  type: bool
kernel_targets:
  description: The kernels whose headers DKMS needs (the running one when it is the host's own, and the next boot's).
  returned: always
  type: list
  elements: str
kernel_packages:
  description: DKMS, the headers of RV(kernel_targets) and the headers metapackage; empty without O(dkms).
  returned: always
  type: list
  elements: str
headers_unavailable:
  description:
    - The kernels of RV(kernel_targets) whose headers package O(package_query) found nowhere; DKMS cannot build for
      them, and a reboot into one is refused.
  returned: always
  type: list
  elements: str
next_boot_problem:
  description: Why rebooting now would come up without the driver (the next kernel has no module for it); empty if none.
  returned: always
  type: str
"""

import os
import platform

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import source
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.readers import modinfo_reader
from ansible_collections.gpufleet.stack.plugins.module_utils._node.kernels import (
    installed_kernels,
    kernel_packages,
    kernel_report,
    kernel_targets,
    next_boot_problem,
    unavailable_headers,
)


def running_version(lib, sysfs_root, procfs_root, in_container):
    """The loaded module's version; '' when none is loaded, or the kernel is not ours (a container's, unless the
    library stands in for the module: source.host_view). lib: source.library()'s answer."""
    view = source.host_view(lib, sysfs_root, procfs_root)
    if in_container and not view["simulated"]:
        return ""
    return view["kernel_module"]["version"] or ""


def secure_boot(mokutil_answer, efivar_bytes):
    """{enabled, source, detail} from mokutil's output (None when mokutil is absent) or the EFI variable's bytes."""
    if mokutil_answer is not None:
        # "SecureBoot enabled", "SecureBoot disabled", or "EFI variables are not supported on this system" (a
        # non-zero exit that means no Secure Boot, not a failure).
        return {"enabled": "SecureBoot enabled" in mokutil_answer, "source": "mokutil", "detail": mokutil_answer}
    if efivar_bytes is not None and len(efivar_bytes) >= 5:
        return {"enabled": efivar_bytes[4] == 1, "source": "efivar", "detail": f"SecureBoot byte {efivar_bytes[4]}"}
    return {"enabled": False, "source": "none", "detail": "no mokutil and no EFI Secure Boot variable"}


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            "in_container": {"type": "bool", "default": False},
            "sysfs_root": {"type": "path", "default": "/"},
            "procfs_root": {"type": "path", "default": "/"},
            "device": {"type": "path", "default": "/dev/nvidiactl"},
            "initramfs_tool": {"type": "path", "default": "/usr/sbin/update-initramfs"},
            "secure_boot_var": {
                "type": "path",
                "default": "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
            },
            "driver_version": {"type": "str", "default": ""},
            "boot_root": {"type": "path", "default": "/"},
            "dkms": {"type": "bool", "default": False},
            "headers_format": {"type": "str", "default": "linux-headers-{}"},
            "headers_package": {"type": "str", "default": ""},
            "package_query": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    p = module.params
    mokutil = module.get_bin_path("mokutil")
    answer = None
    if mokutil:
        _rc, out, err = module.run_command([mokutil, "--sb-state"])
        answer = (out + err).strip()
    # In a container the running kernel is the container host's: only kernels in its /boot are its own.
    running = None if p["in_container"] else platform.release()
    targets = kernel_targets(p["boot_root"], running)
    query = p["package_query"] if p["dkms"] else []
    missing = (
        unavailable_headers(targets, p["headers_format"], lambda name: module.run_command([*query, name])[0] == 0)
        if query
        else []
    )
    packages = kernel_packages(targets, p["headers_format"], p["headers_package"], unavailable=missing)
    extra = {
        "owns_kernels": not p["in_container"] or bool(installed_kernels(p["boot_root"])),
        "kernel_targets": targets,
        "kernel_packages": packages if p["dkms"] else [],
        "headers_unavailable": missing,
        "next_boot_problem": "",
    }
    if p["driver_version"]:
        report = kernel_report(p["boot_root"], platform.release(), p["driver_version"], modinfo_reader(module))
        extra.update(kernels=report, next_boot_problem=next_boot_problem(report, p["driver_version"]) or "")
    module.exit_json(
        changed=False,
        running_version=running_version(source.library(), p["sysfs_root"], p["procfs_root"], p["in_container"]),
        device=os.path.exists(p["device"]),
        initramfs_tool=os.path.exists(p["initramfs_tool"]),
        secure_boot=secure_boot(answer, None if mokutil else read_bytes(p["secure_boot_var"])),
        **extra,
    )


if __name__ == "__main__":
    main()
