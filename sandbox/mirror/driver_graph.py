"""The driver's package graph in NVIDIA's Debian repositories, for any driver version: control fields per package.

Pure data and text, no files written. catalog.py adds the files (the NVML simulator, stubs, units) and builds.

Where it comes from (README.md, "Evidence", has the table with each source):
- The ~48 binaries of source `nvidia-graphics-drivers` (libcuda1, libnvidia-ml1, libnvidia-ptxjitcompiler1,
  firmware-nvidia-gsp, nvidia-kernel-support, nvidia-alternative, the GL/EGL/Vulkan/X parts, nvidia-driver ...) are
  the REAL control fields recorded from Debian's archive (recorded/debian13-nvidia-graphics-drivers-550.163.01-2
  .control), with the version substituted. NVIDIA's Debian repository is built from the same packaging: NVIDIA's
  fork NVIDIA/debian-packaging-nvidia-driver is Debian's `Source: nvidia-graphics-drivers`, and a real apt error
  against NVIDIA's debian12 repository shows nvidia-driver 550.90.12-1 depending on exactly these parts with
  `(= 550.90.12-1)`.
- NVIDIA's own additions are modelled from what install scripts, forum posts and apt logs show of them:
  nvidia-kernel-open-dkms, nvidia-driver-cuda (compute only), the metapackages nvidia-open(-B) and cuda-drivers(-B)
  (unversioned `>=` dependencies, so without a pin they pull the newest branch), Fabric Manager and companions
  (branch-suffixed below 580, unsuffixed from 580), the nvidia-driver-pinning-* packages.
- Per distribution: Debian 13's names where Debian 12 has others (libssl3t64 / libssl3), and Debian 12's dkms.
"""

from __future__ import annotations

import re
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "recorded"
TEMPLATE = RECORDED / "debian13-nvidia-graphics-drivers-550.163.01-2.control"
TEMPLATE_DEB, TEMPLATE_UPSTREAM, TEMPLATE_BRANCH = "550.163.01-2", "550.163.01", "550"
RELATIONS = ("Pre-Depends", "Depends", "Recommends", "Provides", "Conflicts", "Replaces", "Breaks")
# Debian 12 lacks two names Debian 13's build depends on: its OpenSSL is libssl3 (the t64 rename came with trixie)
# and its dkms is 3.0.10 (the recorded 550 build asks for >= 3.0.11, which no bookworm dkms satisfies). GUESS: NVIDIA's
# debian12 build depends on what bookworm has; the exact floor is not known.
PER_DIST = {
    "debian12": [("libssl3t64 (>= 3.0.0)", "libssl3 (>= 3.0.0)"), ("dkms (>= 3.0.11)", "dkms (>= 3.0.10)")],
    "debian13": [],
}
# The recorded template is Debian's, which has no nvidia-kernel-open-dkms (Debian names it nvidia-open-kernel-dkms,
# from another source). NVIDIA's nvidia-driver names its own open package instead (real debian12 apt output:
# "nvidia-kernel-dkms (= V) | nvidia-kernel-545.23.08 | nvidia-kernel-open-dkms (= V)").
OPEN_ALT = "nvidia-open-kernel-{u}"


def read_control(text):
    """[{field: value}] of deb822 stanzas, comment lines dropped."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith("#"):
                continue
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _sep, value = line.partition(":")
                fields[key] = value.strip()
        if fields.get("Package"):
            out.append(fields)
    return out


def _sub(value, upstream, deb, branch, dist):
    value = value.replace(TEMPLATE_DEB, deb).replace(TEMPLATE_UPSTREAM, upstream)
    value = value.replace(f"(>= {TEMPLATE_BRANCH})", f"(>= {branch})")
    value = value.replace(OPEN_ALT.format(u=upstream), f"nvidia-kernel-open-dkms (= {deb})")
    for old, new in PER_DIST[dist]:
        value = value.replace(old, new)
    return value


def stanza(package, source, deb, **fields):
    out = {"Package": package, "Source": source, "Version": deb, "Architecture": "amd64"}
    out.update({k.replace("_", "-"): v for k, v in fields.items() if v})
    return out


def graphics_drivers(upstream, deb, dist):
    """Every binary of source nvidia-graphics-drivers at this version: the recorded graph, version substituted."""
    branch = upstream.split(".")[0]
    out = []
    for fields in read_control(TEMPLATE.read_text()):
        out.append({k: _sub(v, upstream, deb, branch, dist) if k in RELATIONS else v for k, v in fields.items()})
        out[-1]["Version"] = deb
    return out


def nvidia_additions(upstream, deb, dist):
    """NVIDIA's packages beside the Debian-style set: the open kernel module, compute-only and the metapackages."""
    branch = upstream.split(".")[0]
    floor = f"(>= {upstream})"
    dkms = "dkms (>= 3.0.10)" if dist == "debian12" else "dkms (>= 3.0.11)"
    exact = f"(= {deb})"
    return [
        # Modelled on Debian's nvidia-open-kernel-dkms (recorded companions), under NVIDIA's name. It and
        # nvidia-kernel-dkms both ship nvidia.ko for DKMS: they conflict (NVIDIA's debian13 nvidia-open conflicts with
        # nvidia-kernel-dkms, seen in apt logs).
        stanza(
            "nvidia-kernel-open-dkms",
            "nvidia-open-gpu-kernel-modules",
            deb,
            Pre_Depends="nvidia-installer-cleanup",
            Depends=(
                f"firmware-nvidia-gsp (= {upstream}) | firmware-nvidia-gsp-{upstream}, "
                f"nvidia-kernel-support--v1, {dkms}"
            ),
            Provides=f"nvidia-open-kernel-{upstream}, nvidia-kernel-dkms-any (= {upstream})",
            Conflicts="nvidia-kernel-dkms",
            Replaces="nvidia-kernel-dkms",
        ),
        # Compute-only userspace (NVIDIA's guide: `apt install nvidia-driver-cuda nvidia-kernel-open-dkms` for a
        # headless node). GUESS for its exact Depends: the compute parts, each at this version, no X or GL.
        stanza(
            "nvidia-driver-cuda",
            "nvidia-graphics-drivers",
            deb,
            Depends=(
                f"nvidia-alternative {exact}, libcuda1 {exact}, libnvidia-ml1 {exact}, nvidia-smi {exact}, "
                f"libnvidia-cfg1 {exact}, libnvidia-nvvm4 {exact}, libcudadebugger1 {exact}, "
                f"nvidia-persistenced {floor}, "
                f"nvidia-modprobe {floor}, nvidia-kernel-support {exact}"
            ),
            Recommends=f"nvidia-kernel-open-dkms {exact} | nvidia-kernel-dkms {exact}",
        ),
        # The metapackages: unversioned names with >= (real cuda-drivers-580 580.105.08-1: "nvidia-driver (>=
        # 580.65.06), nvidia-driver-cuda (>= 580.65.06), nvidia-kernel-dkms (>= ...), nvidia-settings (>= ...),
        # nvidia-xconfig (>= ...)"): without a pin, apt takes the newest of each, whatever the branch.
        stanza(
            f"cuda-drivers-{branch}",
            "cuda-drivers",
            deb,
            Depends=(
                f"nvidia-driver {floor}, nvidia-driver-cuda {floor}, nvidia-kernel-dkms {floor}, "
                f"nvidia-settings {floor}, nvidia-xconfig {floor}"
            ),
        ),
        stanza("cuda-drivers", "cuda-drivers", deb, Depends=f"cuda-drivers-{branch} {floor}"),
        stanza(
            f"nvidia-open-{branch}",
            "nvidia-open",
            deb,
            Depends=(
                f"nvidia-driver {floor}, nvidia-driver-cuda {floor}, nvidia-kernel-open-dkms {floor}, "
                f"nvidia-settings {floor}, nvidia-xconfig {floor}"
            ),
            Conflicts="nvidia-kernel-dkms",
        ),
        stanza(
            "nvidia-open", "nvidia-open", deb, Depends=f"nvidia-open-{branch} {floor}", Conflicts="nvidia-kernel-dkms"
        ),
        # NVIDIA ships these at the driver's version (Debian's are separate sources with their own numbers; the
        # recorded companions give their dependencies).
        stanza(
            "nvidia-persistenced",
            "nvidia-persistenced",
            deb,
            Pre_Depends="init-system-helpers (>= 1.54~)",
            Depends="libnvidia-cfg1 | libnvidia-cfg.so.1 | libnvidia-cfg1-any, adduser, libc6 (>= 2.34), "
            + ("libtirpc3 (>= 1.0.2)" if dist == "debian12" else "libtirpc3t64 (>= 1.3.2)"),
        ),
        stanza("nvidia-modprobe", "nvidia-modprobe", deb, Depends="libc6 (>= 2.34)"),
        stanza(
            "nvidia-settings",
            "nvidia-settings",
            deb,
            Depends=f"libnvidia-gtk3 {exact} | libnvidia-gtk2 {exact}, libc6 (>= 2.34)",
        ),
        stanza("libnvidia-gtk3", "nvidia-settings", deb, Depends="libc6 (>= 2.34), libgtk-3-0 (>= 3.0.0)"),
        stanza("nvidia-xconfig", "nvidia-xconfig", deb, Depends="libc6 (>= 2.34)"),
    ]


def fabric_manager(upstream, deb):
    """Fabric Manager and its companions, named by branch (NVIDIA/gpu-driver-container install.sh, commit 78fa4ac
    "add driver 580.65.06"): below 580 `nvidia-fabricmanager-<B>`, `libnvidia-nscq-<B>`, `libnvsdm-<B>` (570-579),
    `nvidia-imex-<B>` (550-579); from 580 the same without the suffix. Old branch packages provide and conflict
    with the unsuffixed name (NVIDIA/apt-packaging-fabric-manager control.in), so two branches never coexist.
    Fabric Manager itself does not depend on the driver: only the role keeps them at the same version."""
    branch = int(upstream.split(".")[0])
    suffix = "" if branch >= 580 else f"-{branch}"

    def versioned(name, source, **fields):
        full = f"{name}{suffix}"
        if suffix:
            fields.setdefault("Provides", name)
            fields.setdefault("Conflicts", name)
            fields.setdefault("Replaces", name)
        return stanza(full, source, deb, **fields)

    out = [
        versioned("nvidia-fabricmanager", "fabricmanager", Depends="libc6 (>= 2.2.1)"),
        versioned("nvidia-fabricmanager-dev", "fabricmanager", Depends="libc6 (>= 2.2.1)"),
        versioned("libnvidia-nscq", "libnvidia-nscq", Depends="libc6 (>= 2.2.1)"),
        stanza(
            f"cuda-drivers-fabricmanager-{branch}",
            "fabricmanager",
            deb,
            Depends=f"nvidia-fabricmanager{suffix} (= {deb}), cuda-drivers-{branch} (= {deb})",
        ),
    ]
    if branch >= 570:
        out.append(versioned("libnvsdm", "libnvsdm", Depends="libc6 (>= 2.2.1)"))
    if branch >= 550:
        # nvidia-imex depends on nvidia-modprobe without a version (NVIDIA/gpu-driver-container PR #899).
        out.append(versioned("nvidia-imex", "nvidia-imex", Depends="nvidia-modprobe, libc6 (>= 2.34)"))
    return out


# The NVLink 5 subnet manager is numbered by date, not by driver (2025.10.14-1 in NVIDIA's repository).
NVLSM = stanza("nvlsm", "nvlsm", "2025.10.14-1", Depends="libc6 (>= 2.34), libibumad3")


def pinning(upstream, deb):
    """nvidia-driver-pinning-<branch> and -<version>: one preferences file (/etc/apt/preferences.d/nvidia-driver-pin)
    so they provide/conflict/replace the same virtual name (only one at a time). The file's first stanza is the
    recorded one of nvidia-driver-pinning-595.71.05 ("Package: cuda-drivers* src:nvidia-open:any / Pin: version
    595.71.05-*"); GUESS: the second catches the driver's other sources the same way."""
    branch = upstream.split(".")[0]
    sources = (
        "src:nvidia-graphics-drivers:any src:nvidia-open-gpu-kernel-modules:any src:nvidia-settings:any "
        "src:nvidia-modprobe:any src:nvidia-persistenced:any src:nvidia-xconfig:any"
    )

    def text(pin):
        return (
            f"Package: cuda-drivers* src:nvidia-open:any\nPin: version {pin}\nPin-Priority: 1000\n\n"
            f"Package: {sources}\nPin: version {pin}\nPin-Priority: 1000\n"
        )

    common = {
        "Provides": "nvidia-driver-pinning",
        "Conflicts": "nvidia-driver-pinning",
        "Replaces": "nvidia-driver-pinning",
    }
    return [
        (
            stanza(f"nvidia-driver-pinning-{branch}", f"nvidia-driver-pinning-{branch}", f"{branch}-1", **common),
            text(f"{branch}.*"),
        ),
        (
            stanza(f"nvidia-driver-pinning-{upstream}", f"nvidia-driver-pinning-{upstream}", deb, **common),
            text(f"{upstream}-*"),
        ),
    ]
