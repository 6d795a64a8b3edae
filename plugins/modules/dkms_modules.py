#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dkms_modules
short_description: Have DKMS build and install the NVIDIA driver's kernel module for every installed kernel
version_added: "0.2.0"
description:
  - The driver's DKMS package builds, in its postinst, for the running kernel and the newest one only (Debian's
    C(/usr/lib/dkms/common.postinst)); in a container, whose running kernel is the host's, only when it upgrades.
    A fallback kernel in GRUB's menu would then boot without GPUs. This module asks DKMS
    (C(dkms install -m MODULE -v VERSION -k KERNEL), which builds first when needed) for every kernel in C(/boot)
    whose headers are installed, and reports the others.
  - The DKMS module is the one registered for O(driver_version) under one of O(names) (NVIDIA's packages register
    C(nvidia), Debian's C(nvidia-current) and C(nvidia-current-open)).
  - A failed build fails with the kernel, DKMS' message and the tail of its C(make.log); the kernels built before
    keep their module, nothing is removed, and RV(kernels) says where each kernel stands.
  - Each installed module is read with C(modinfo), its version and its signer. DKMS signs with
    C(/var/lib/dkms/mok.key) when it can, the key a Secure Boot host must have enrolled.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  driver_version:
    description: The installed driver's version (the DKMS module version), e.g. C(570.133.20).
    type: str
    required: true
  names:
    description: DKMS module names to look for, first found wins.
    type: list
    elements: str
    default: [nvidia, nvidia-current, nvidia-current-open]
  build:
    description:
      - false only reports (each kernel's state, and RV(build_log) when a build of this version failed before), as
        the role does after a package install whose DKMS build failed.
    type: bool
    default: true
  boot_root:
    description: Root under which C(/boot), C(/lib/modules) and C(/var/lib/dkms) are read (tests).
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
  - module: gpufleet.stack.driver_state
"""

EXAMPLES = r"""
- name: Build the driver's module for every installed kernel
  gpufleet.stack.dkms_modules:
    driver_version: "570.133.20"
  register: dkms
"""

RETURN = r"""
module:
  description: The DKMS module, C(NAME/VERSION).
  returned: always
  type: str
  sample: nvidia/570.133.20
kernels:
  description: >-
    One per installed kernel: C(release), C(state) (C(installed), C(built now), C(no headers), C(failed),
    C(would build) in check mode, C(not built) without O(build)), C(path) and C(signer) of the installed module
    (empty when unsigned).
  returned: always
  type: list
  elements: dict
built:
  description: The kernels built in this run.
  returned: always
  type: list
  elements: str
missing_headers:
  description: Installed kernels DKMS cannot build for (no headers); the guard reports them when one boots next.
  returned: always
  type: list
  elements: str
failed_kernel:
  description: The kernel whose build failed.
  returned: on failure
  type: str
build_log:
  description: The tail of DKMS' C(make.log) of this version, when a kernel that has headers lacks the module.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.kernels import (
    dkms_plan,
    headers_present,
    installed_kernels,
    log_tail,
    nvidia_modules,
    parse_dkms_status,
)


def registered(root, names, version):
    """The first DKMS module name with version registered (dkms add made /var/lib/dkms/NAME/VERSION/source)."""
    for name in names:
        if os.path.exists(os.path.join(root, "var/lib/dkms", name, version, "source")):
            return name
    return None


def kernel_modules(root, kernel, name):
    """Paths of NAME.ko (compressed or not) under /lib/modules/<kernel>; the NVIDIA driver's through _node/kernels."""
    if name.startswith("nvidia"):
        return [p for p in nvidia_modules(root, kernel) if os.path.basename(p).split(".ko")[0] == name]
    found = []
    for dirpath, _dirs, files in os.walk(os.path.join(root, "lib/modules", kernel)):
        found += [os.path.join(dirpath, f) for f in files if f.split(".ko")[0] == name and ".ko" in f]
    return sorted(found)


def read_module(module, root, kernel, name):
    """{path, version, signer} of the module DKMS installed for kernel ({} when there is none)."""
    paths = kernel_modules(root, kernel, name)
    modinfo = module.get_bin_path("modinfo")
    if not paths or not modinfo:
        return {"path": paths[0] if paths else ""}
    fields = {}
    for field in ("version", "signer"):
        rc, out, _err = module.run_command([modinfo, "-F", field, paths[0]])
        fields[field] = out.strip() if rc == 0 else ""
    return {"path": paths[0], **fields}


def build_log(root, name, version):
    """(path, tail) of DKMS' make.log for the version; tail is "" when there is none."""
    log = os.path.join(root, "var/lib/dkms", name, version, "build", "make.log")
    try:
        with open(log, "rb") as f:
            return log, log_tail(f.read())
    except OSError:
        return log, ""


def build_failure(root, name, version, kernel, said):
    """The message for a failed build: DKMS' own words and the tail of its make.log."""
    log, tail = build_log(root, name, version)
    return (
        f"DKMS could not build {name}/{version} for kernel {kernel}: {said}\n--- tail of {log} ---\n"
        f"{tail or '(no make.log)'}\n---\n"
        f"The running kernel and the modules of the other kernels are unchanged; {kernel} has no {name} module "
        f"{version}, so a reboot into it would come up without "
        + ("GPUs" if name.startswith("nvidia") else name)
        + ". Fix the build (a release that supports this kernel, or the kernel's complete headers), then run the "
        "role again"
    )


def main():
    module = AnsibleModule(
        argument_spec={
            "driver_version": {"type": "str", "required": True},
            "names": {
                "type": "list",
                "elements": "str",
                "default": ["nvidia", "nvidia-current", "nvidia-current-open"],
            },
            "build": {"type": "bool", "default": True},
            "boot_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    p = module.params
    root, version = p["boot_root"], p["driver_version"]
    name = registered(root, p["names"], version)
    if name is None:
        module.fail_json(
            msg=f"driver_version {version}: no DKMS module of that version is registered under /var/lib/dkms "
            f"({', '.join(p['names'])}); the driver's kernel module package (its dkms add) is not installed",
            kernels=[],
        )
    dkms = module.get_bin_path("dkms", required=True)
    _rc, out, _err = module.run_command([dkms, "status", "-m", name, "-v", version])
    plan = dkms_plan(installed_kernels(root), name, version, parse_dkms_status(out), lambda k: headers_present(root, k))
    rows, built = [], []
    for kernel, action in plan:
        state = action
        if action == "install" and not p["build"]:
            state = "not built"
        elif action == "install" and module.check_mode:
            state = "would build"
        elif action == "install":
            rc, out, err = module.run_command([dkms, "install", "-m", name, "-v", version, "-k", kernel])
            if rc != 0:
                rows.append({"release": kernel, "state": "failed"})
                rows += [{"release": k, "state": a} for k, a in plan[len(rows) :]]
                module.fail_json(
                    msg=build_failure(root, name, version, kernel, log_tail(err or out, lines=6)),
                    module=f"{name}/{version}",
                    kernels=rows,
                    built=built,
                    failed_kernel=kernel,
                    changed=bool(built),
                )
            state = "built now"
            built.append(kernel)
        rows.append(
            {
                "release": kernel,
                "state": state,
                **(read_module(module, root, kernel, name) if state in ("installed", "built now") else {}),
            }
        )
    unbuilt = any(r["state"] == "not built" for r in rows)
    module.exit_json(
        changed=bool(built) or any(r["state"] == "would build" for r in rows),
        build_log=build_log(root, name, version)[1] if unbuilt else "",
        module=f"{name}/{version}",
        kernels=rows,
        built=built,
        missing_headers=[r["release"] for r in rows if r["state"] == "no headers"],
    )


if __name__ == "__main__":
    main()
