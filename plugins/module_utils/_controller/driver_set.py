# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which packages make a driver install in NVIDIA's Debian repositories, for a branch, flavour and scope: the set
the nvidia_driver role hands to the nvidia_packages engine. Pure; the naming rules and their sources are in
sandbox/mirror/README.md ("Evidence").
"""

from __future__ import annotations

# Every source package of NVIDIA's driver set. The pin and the holds select by source, so parts that arrive through
# dependencies (firmware-nvidia-gsp, libnvidia-ptxjitcompiler1, nvidia-kernel-support ...) are pinned and held too.
# Never a wildcard such as src:*nvidia*: that would also pin, and exclude from Debian, Debian's own contrib helpers
# the driver depends on (nvidia-support, nvidia-kernel-common, nvidia-installer-cleanup).
SOURCES = [
    "src:nvidia-graphics-drivers",
    "src:nvidia-open-gpu-kernel-modules",
    "src:nvidia-open",
    "src:cuda-drivers",
    "src:nvidia-persistenced",
    "src:nvidia-modprobe",
    "src:nvidia-settings",
    "src:nvidia-xconfig",
]
FABRIC_SOURCES = ["src:fabricmanager", "src:libnvidia-nscq", "src:libnvsdm", "src:nvidia-imex"]
KERNEL = {"open": "nvidia-kernel-open-dkms", "proprietary": "nvidia-kernel-dkms"}
# Debian's own packages (the distro channel): its open module package is named the other way round and comes from a
# source of its own; nvidia-persistenced is a separate source with its own numbers and is not part of this set.
DISTRO_KERNEL = {"open": "nvidia-open-kernel-dkms", "proprietary": "nvidia-kernel-dkms"}
DISTRO_SOURCES = ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"]
NVIDIA_URLS = ["/compute/cuda/repos/"]
META = {"open": "nvidia-open", "proprietary": "cuda-drivers"}
# Fabric Manager and companions lost their branch suffix with 580 (NVIDIA/gpu-driver-container, "add driver
# 580.65.06"); libnvsdm exists from 570, nvidia-imex from 550.
UNSUFFIXED_FROM = 580
# The driver creates IMEX's default channel at load time with NVreg_CreateImexChannel0=1 from 555
# (NVIDIA/open-gpu-kernel-modules 555.42.02); before, an administrator's mknod after every boot (IMEX guide).
IMEX_CHANNEL_OPTION_FROM = 555


def _suffixed(names, branch):
    return [n + ("" if branch >= UNSUFFIXED_FROM else f"-{branch}") for n in names]


def fabric_packages(branch):
    """Fabric Manager and its companions (NVSwitch systems), named as the branch names them."""
    return _suffixed(["nvidia-fabricmanager", "libnvidia-nscq"] + (["libnvsdm"] if branch >= 570 else []), branch)


def imex_packages(branch):
    """nvidia-imex (GPU memory across the nodes of a multi-node NVLink domain), at the driver's version; refused
    where the driver cannot create IMEX's channel at load time."""
    if branch < IMEX_CHANNEL_OPTION_FROM:
        raise ValueError(
            f"IMEX with driver branch {branch}: the driver creates IMEX channel0 at load time only from "
            f"{IMEX_CHANNEL_OPTION_FROM} (NVreg_CreateImexChannel0); use branch 570 or newer, or "
            "nvidia_driver_imex=false"
        )
    return _suffixed(["nvidia-imex"], branch)


def driver_set(
    version, *, flavor="open", scope="compute", fabricmanager=False, imex=False, channel="network", **distro
):
    """The nvidia_packages arguments for a driver install: {"branch", "packages", "reference", "pin", "members",
    "remove", "same_version", "series", "pin_version", "exclude_origins", "exclude_urls", "fabric"}.

    channel "distro" (Debian's non-free packages): distro["packages"] (nvidia-smi, libnvidia-ml1, libcuda1) plus the
    kernel module when distro["kernel"] is true, all at one version (Debian numbers the parts of its
    nvidia-graphics-drivers alike, 550.163.01-2), NVIDIA's repository ignored.

    scope: "compute" installs NVIDIA's compute-only set (nvidia-driver-cuda and the kernel module: no X server, no
    GL stack), "full" adds the desktop metapackages (nvidia-open-<B> / cuda-drivers-<B>).
    Removed in the same transaction: the other flavour's kernel module and metapackages, another branch's
    metapackages, Fabric Manager and companions that are not wanted or of another branch, and NVIDIA's
    nvidia-driver-pinning-* packages (their pin file would fight the one this collection writes).
    """
    branch = int(str(version).split(".", maxsplit=1)[0])
    other = "proprietary" if flavor == "open" else "open"
    if channel == "distro":
        kernel = [DISTRO_KERNEL[flavor]] if distro.get("kernel") else []
        return {
            "branch": str(branch),
            "packages": list(distro.get("packages", [])) + kernel,
            "reference": "libnvidia-ml1",
            "pin": DISTRO_SOURCES,
            "members": DISTRO_SOURCES,
            "remove": [DISTRO_KERNEL[other]],
            "same_version": True,
            "series": None,
            "pin_version": None,
            "exclude_origins": [],
            "exclude_urls": NVIDIA_URLS,
            "fabric": [],
        }
    packages = ["nvidia-driver-cuda", KERNEL[flavor]]
    if scope == "full":
        packages += [META[flavor], f"{META[flavor]}-{branch}"]
    # IMEX does not need Fabric Manager on the node: a GB200 tray's switches are managed from the switch trays.
    fabric = (fabric_packages(branch) if fabricmanager else []) + (imex_packages(branch) if imex else [])
    packages += fabric
    stems = ["nvidia-fabricmanager", "nvidia-fabricmanager-dev", "libnvidia-nscq", "libnvsdm", "nvidia-imex"]
    remove = [
        KERNEL[other],
        META[other],
        f"{META[other]}-[0-9]*",
        "nvidia-driver-pinning-*",
        "cuda-drivers-fabricmanager*",
    ]
    remove += [f"{META[flavor]}-[0-9]*"] if scope == "full" else []
    remove += [s for stem in stems for s in (stem, f"{stem}-[0-9]*")]
    members = SOURCES + FABRIC_SOURCES
    return {
        "branch": str(branch),
        "packages": packages,
        "reference": "nvidia-driver-cuda",
        "pin": members,
        "members": members,
        # The engine never removes a package it installs, so the wanted metapackage and Fabric Manager stay.
        "remove": remove,
        "same_version": True,
        "series": None,
        "pin_version": None,
        "exclude_origins": ["Debian", "Ubuntu"],
        "exclude_urls": [],
        "fabric": fabric,
    }


# gpu_facts' answer for each NVLink fabric part (_node/gpu/gather._nvlink_needs).
FABRIC_FACTS = {"fabricmanager": "fabricmanager_required", "nvlsm": "nvlsm_required", "imex": "imex_required"}


def fabric_wanted(facts, **settings):
    """{fabricmanager, nvlsm, imex}: for each part, the setting "auto" takes what gpu_facts says the node needs
    (Fabric Manager where NVSwitches are local, NVLSM beside it on NVLink 5, IMEX where the GPUs are on switches
    outside the node); true or false force it. A part not given is auto."""
    facts = facts if isinstance(facts, dict) else {}
    wanted = {}
    for part, key in FABRIC_FACTS.items():
        value = str(settings.get(part, "auto")).strip().lower()
        wanted[part] = facts.get(key) is True if value == "auto" else value in ("true", "yes", "on", "1")
    return wanted
