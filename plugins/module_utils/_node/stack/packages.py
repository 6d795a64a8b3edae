# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which installed OS packages carry which stack component, and the versions they say.

Pure: takes {package: version} as dpkg-query or rpm print it, returns findings per component.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v

# Most specific first: the first package that matches gives the component's package version.
# Names: NVIDIA's CUDA repos (nvidia-open, cuda-drivers-570, libcudnn9-cuda-12, libnccl2), Ubuntu
# (nvidia-driver-570-open, libnvidia-compute-570), Debian non-free (nvidia-driver, nvidia-kernel-dkms,
# nvidia-cuda-toolkit, nvidia-cudnn), RHEL (kmod-nvidia-open-dkms, libnccl).
PATTERNS = {
    "driver": [
        r"nvidia-driver(-\d+)?(-server)?(-open)?",
        r"nvidia-open(-\d+)?",
        r"cuda-drivers(-\d+)?",
        r"nvidia-kernel(-open)?-dkms",
        r"libnvidia-compute-\d+",
        r"nvidia-driver-(cuda|libs)",
        r"kmod-nvidia.*",
    ],
    "fabricmanager": [r"nvidia-fabric-?manager(-\d+)?", r"cuda-drivers-fabricmanager(-\d+)?"],
    "cudnn": [r"libcudnn\d+(-cuda-\d+)?", r"cudnn\d*-cuda-\d+", r"libcudnn\d+-dev(-cuda-\d+)?", r"nvidia-cudnn"],
    "nccl": [r"libnccl2?", r"libnccl-devel"],
    "container_toolkit": [r"nvidia-container-toolkit", r"nvidia-container-toolkit-base"],
    "dcgm": [r"datacenter-gpu-manager-4-core", r"datacenter-gpu-manager"],
    "cuda_toolkit": [r"cuda-toolkit-\d+-\d+", r"nvidia-cuda-toolkit", r"cuda-toolkit"],
}


def _cuda_major_of(name, version):
    build = v.package_cuda_build(version)
    if build:
        return build
    found = re.search(r"-cuda-(\d+)$", name)
    return found.group(1) if found else None


def classify(packages):
    """{component: [{"package", "version", "raw_version", "cuda"}]} in PATTERNS order.

    `cuda` is the CUDA build the package names ("+cuda12.8" in its version, or "-cuda-12" in its name).
    Debian's nvidia-cudnn is an installer whose version is the cuDNN it downloads, so it counts as cuDNN.
    """
    out = {}
    for component, patterns in PATTERNS.items():
        found = []
        for pattern in patterns:
            for name in sorted(packages):
                if re.fullmatch(pattern, name) and name not in [f["package"] for f in found]:
                    raw = packages[name]
                    found.append(
                        {
                            "package": name,
                            "version": v.package_version(raw),
                            "raw_version": raw,
                            "cuda": _cuda_major_of(name, raw),
                        }
                    )
        if found:
            out[component] = found
    return out


def driver_flavor(names):
    """Kernel module flavour from the installed driver packages: "open", "proprietary" or None."""
    names = set(names)
    # nvidia-open-570 (NVIDIA's), nvidia-driver-570-open (Ubuntu's), nvidia-kernel-open-dkms (Debian's),
    # kmod-nvidia-open-dkms (RHEL's).
    if any(n == "nvidia-open" or "nvidia-open-" in n or n.endswith("-open") or "kernel-open" in n for n in names):
        return "open"
    if any(n.startswith("cuda-drivers") or n in ("nvidia-kernel-dkms", "nvidia-driver") for n in names):
        return "proprietary"
    return None
