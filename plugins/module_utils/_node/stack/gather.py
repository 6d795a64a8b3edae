# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible_facts['gpufleet_installed']: what is installed, read by stack_facts, and by gpu_facts (stack: true) in the
same module run as the GPUs."""

from __future__ import annotations

import platform

from ansible_collections.gpufleet.stack.plugins.module_utils._node.kernels import kernel_report
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack import parse
from ansible_collections.gpufleet.stack.plugins.module_utils._node.stack.scan import Scanner, summarise


def scanner_for(module, root="/"):
    """A Scanner that runs commands through the module (read-only: rc is the caller's to judge)."""
    return Scanner(root=root, run=lambda argv: module.run_command(argv, check_rc=False))


def gather(scanner, python_envs):
    manager, pkgs = scanner.packages()
    found = {
        "driver": scanner.driver(pkgs, manager),
        "cuda": scanner.cuda(pkgs),
        "cudnn": scanner.library(
            "cudnn",
            headers=[
                "usr/include/cudnn_version*.h",
                "usr/include/*-linux-gnu/cudnn_version*.h",
                "usr/local/cuda*/include/cudnn_version*.h",
            ],
            parser=_parse("cudnn_header"),
            stem="libcudnn",
            pkgs=pkgs,
            manager=manager,
        ),
        "nccl": scanner.library(
            "nccl",
            headers=["usr/include/nccl.h", "usr/local/cuda*/include/nccl.h"],
            parser=_parse("nccl_header"),
            stem="libnccl",
            pkgs=pkgs,
            manager=manager,
        ),
        "fabricmanager": scanner.simple_tool("fabricmanager", "usr/bin/nv-fabricmanager", pkgs, manager),
        "container_toolkit": scanner.simple_tool("container_toolkit", "usr/bin/nvidia-ctk", pkgs, manager),
        "dcgm": scanner.simple_tool("dcgm", "usr/bin/dcgmi", pkgs, manager),
        "frameworks": {},
        "package_manager": manager,
    }
    for env in python_envs:
        frameworks, wheels = scanner.python_env(env)
        for name, entry in frameworks.items():
            found["frameworks"].setdefault(name, []).append(entry)
        for lib in ("cudnn", "nccl"):
            if lib in wheels:
                # A wheel serves only its environment: keep system findings first, list the wheel after.
                findings = found[lib]["findings"] + [dict(wheels[lib], env=env, scope="wheel")]
                system = found[lib] if found[lib]["present"] else None
                found[lib] = summarise(findings) if system is None else dict(system, findings=findings)
    userspace = found["driver"]["package_version"] or found["driver"]["library_version"]
    found["kernels"] = kernel_report(
        scanner.root, platform.release() if scanner.root in ("", "/") else None, userspace, scanner.modinfo
    )
    found["stack"] = as_pins(found)
    return found


def _parse(name):
    return getattr(parse, name)


def as_pins(installed):
    """What a host has, shaped like the inventory's gpufleet_stack (exact versions): the record a rollback returns to.

    Only components that are present; CUDA toolkits as "X.Y", /usr/local/cuda's first."""
    installed = installed or {}
    driver = installed.get("driver") or {}
    pins = {}
    version = driver.get("package_version") or driver.get("loaded_version")
    if version:
        pins["driver"] = version
        if driver.get("flavor"):
            pins["driver_flavor"] = driver["flavor"]
    toolkits = (installed.get("cuda") or {}).get("toolkits") or []
    default = (installed.get("cuda") or {}).get("default")
    cuda = []
    for toolkit in sorted(toolkits, key=lambda t: t.get("path") != default):
        short = ".".join(str(toolkit.get("version") or "").split(".")[:2])
        if short and short not in cuda:
            cuda.append(short)
    if cuda:
        pins["cuda"] = cuda[0] if len(cuda) == 1 else cuda
    for key in ("cudnn", "nccl", "fabricmanager", "container_toolkit", "dcgm"):
        found = installed.get(key) or {}
        if found.get("present") and found.get("version"):
            pins[key] = found["version"]
    return pins
