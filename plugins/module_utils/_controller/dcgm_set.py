# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which packages make a DCGM install in NVIDIA's CUDA repository, for a DCGM version, the driver's branch and the
GPUs: the set the dcgm role hands to the nvidia_packages engine. Pure; sources in sandbox/mirror/README.md.

DCGM 4 is split (NVIDIA/DCGM cmake/packaging.cmake): datacenter-gpu-manager-4-core (nv-hostengine, dcgmi, the
nvidia-dcgm unit) and one package per CUDA user-mode driver major, datacenter-gpu-manager-4-cuda11/12/13, each
depending on core (= 1:V-1). NVIDIA's install guide picks the flavour by the CUDA major the driver ships
(`nvidia-smi`'s "CUDA Version"), with one exception: Maxwell, Pascal and Volta on a 580 driver take the cuda12
build (NVIDIA/DCGM#254: the cuda13 plugins fail there). cuda13 builds exist from 4.4.0 only. DCGM 3 is the single
package datacenter-gpu-manager (1:3.3.9), which -4-core Conflicts with.
"""

from __future__ import annotations

import re

CORE = "datacenter-gpu-manager-4-core"
LEGACY = "datacenter-gpu-manager"
# The CUDA user-mode driver major each driver branch ships (NVIDIA's CUDA toolkit release notes, table 3).
UMD_FROM = ((580, 13), (525, 12), (450, 11))
CUDA13_FROM = (4, 4)
# Below Turing (compute capability 7.5) CUDA 13 has no offline compilation target; NVIDIA points these at cuda12.
CUDA12_BELOW_CC = (7, 5)


class DcgmSetError(ValueError):
    pass


def _numbers(text, what, example="4.4.1"):
    try:
        return tuple(int(x) for x in str(text).split("."))
    except ValueError:
        raise DcgmSetError(f"{what} {text!r} is not a version such as {example}") from None


def driver_cuda_major(driver):
    """The CUDA major a driver branch's user-mode driver is: "580.95.05" -> 13, "570" -> 12; None below 450."""
    what = "dcgm_driver (gpufleet_stack.driver)"
    branch = _numbers(str(driver).split(".", maxsplit=1)[0], what, "570.133.20 or 580")[0]
    return next((major for start, major in UMD_FROM if branch >= start), None)


def _cc(value):
    """(7, 0) from a compute capability "7.0" or an sm_XY target "sm_70"; None for a product name."""
    text = str(value).strip()
    found = re.fullmatch(r"(\d{1,2})\.(\d)", text) or re.fullmatch(r"(?:sm|compute)_?(\d{1,2})(\d)[a-z]?", text, re.I)
    return (int(found.group(1)), int(found.group(2))) if found else None


def flavour(version, driver="", cuda="", gpus=()):
    """(CUDA major as str, reason) of the DCGM 4 package to install.

    cuda: what the user set (dcgm_cuda), "" to derive it from the driver. gpus: the node's GPUs as gpufleet_stack.gpu
    lists them; their compute capabilities ("7.0", "sm_70") count for the pre-Turing rule, product names do not.
    """
    if cuda:
        _needs_cuda13_build(version, int(cuda), f"dcgm_cuda {cuda}")
        return str(cuda), f"CUDA {cuda} as dcgm_cuda sets"
    if not driver:
        raise DcgmSetError(
            "the DCGM build follows the driver's CUDA major, and neither dcgm_cuda nor gpufleet_stack.driver is set: "
            'set dcgm_cuda to "12" or "13" (the "CUDA Version" nvidia-smi prints)'
        )
    major = driver_cuda_major(driver)
    if major is None:
        raise DcgmSetError(
            f"dcgm_driver (gpufleet_stack.driver) {driver} is older than any DCGM 4 build (R450 is the oldest, with "
            "CUDA 11): install a newer driver, or set dcgm_version to DCGM 3 (3.3.9)"
        )
    reason = f"driver {driver} ships the CUDA {major} user-mode driver"
    old = sorted({g for g in gpus if _cc(g) and _cc(g) < CUDA12_BELOW_CC})
    if major >= 13 and old:
        major = 12
        reason += f"; GPUs of compute capability {', '.join(old)} (before Turing) take the cuda12 build (DCGM#254)"
    _needs_cuda13_build(version, major, f"driver {driver}")
    return str(major), reason


def _needs_cuda13_build(version, major, who):
    if major >= 13 and _numbers(version, "dcgm_version")[:2] < CUDA13_FROM:
        raise DcgmSetError(
            f"DCGM {version} has no CUDA 13 build (datacenter-gpu-manager-4-cuda13 exists from 4.4.0) and "
            f"{who} needs one: set dcgm_version (gpufleet_stack.dcgm) to 4.4.1 or newer"
        )


def dcgm_set(version, driver="", cuda="", gpus=()):
    """The nvidia_packages arguments for DCGM `version`: {"packages", "reference", "pin", "remove", "cuda",
    "reason"}. The pin and the holds name every DCGM package; the other CUDA flavours (left from a driver of
    another branch) and DCGM 3 go in the same transaction.
    """
    major = _numbers(version, "dcgm_version")[0]
    if major == 3:
        return {
            "packages": [LEGACY],
            "reference": LEGACY,
            "pin": [LEGACY, "datacenter-gpu-manager-config"],
            "remove": ["datacenter-gpu-manager-4-*"],
            "cuda": "",
            "reason": "DCGM 3 is one package for every CUDA",
        }
    if major != 4:
        raise DcgmSetError(f"dcgm_version {version!r} is not a DCGM 3 or 4 release (such as 4.4.1)")
    cuda_major, reason = flavour(version, driver, cuda, gpus)
    build = f"datacenter-gpu-manager-4-cuda{cuda_major}"
    return {
        "packages": [CORE, build],
        "reference": CORE,
        "pin": [CORE, "datacenter-gpu-manager-4-cuda*", "datacenter-gpu-manager-4-config"],
        "remove": ["datacenter-gpu-manager-4-cuda*", LEGACY, "datacenter-gpu-manager-config"],
        "cuda": cuda_major,
        "reason": reason,
    }
