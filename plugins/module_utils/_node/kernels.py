# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Installed kernels, the one that boots next, and whether each has an nvidia module for the installed driver.

The failure this guards against is the most reported one after unattended upgrades: a new kernel arrives without
its headers (or DKMS fails to build for it), the host reboots into it, and the GPUs are gone. DKMS builds a module
for every kernel whose headers are installed (Debian's /etc/kernel/postinst.d/dkms and header_postinst.d/dkms run
dkms_autoinstaller), into /lib/modules/<kernel>/updates/dkms/ on Debian and Ubuntu, and keeps its build tree in
/var/lib/dkms/<module>/<version>/<kernel>/<arch>/. Debian's own driver packages name the module nvidia-current.

Everything reads plain files under a root (tests point it at a fixture tree); the one command, modinfo, is passed
in as a function so callers decide whether to run it.
"""

from __future__ import annotations

import os
import re

# Module file names: NVIDIA's packages and the runfile build nvidia.ko, Debian's nvidia-current.ko; DKMS copies the
# compression of the kernel's own modules (.ko, .ko.xz, .ko.zst, .ko.gz).
_MODULE_RE = re.compile(r"^nvidia(?:-current(?:-open)?)?\.ko(?:\.(?:xz|zst|gz))?$")
# DKMS module names: NVIDIA's packages register nvidia/<version>, Debian's nvidia-current/<version> (closed) and
# nvidia-current-open/<version> (open).
DKMS_MODULES = ("nvidia", "nvidia-current", "nvidia-current-open")
# Debian's kernel flavours, each with a headers metapackage (linux-headers-<flavour>) that follows its new kernels.
DEBIAN_FLAVOURS = ("amd64", "cloud-amd64", "rt-amd64", "arm64", "rt-arm64", "cloud-arm64")
# `dkms status` lines (dkms 3.x): "nvidia/570.133.20, 6.1.0-28-amd64, x86_64: installed", maybe followed by
# " (WARNING: ...)" or "(original_module exists)".
_STATUS_RE = re.compile(r"^([^/,\s]+)/([^,\s]+), ([^,\s]+), ([^:\s]+): (\w+)")


def _under(root, path):
    return os.path.join(root or "/", path.lstrip("/"))


def version_key(kernel):
    """Sort key for kernel release strings: "6.1.0-28-amd64" after "6.1.0-9-amd64" (numbers compare as numbers)."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"[.+~-]", kernel)]


def installed_kernels(root="/"):
    """Kernel releases with an image in /boot (vmlinuz-<release>); /lib/modules keeps directories of removed kernels
    that still hold DKMS-built modules, so an image is what says a kernel can boot."""
    try:
        names = os.listdir(_under(root, "/boot"))
    except OSError:
        return []
    kernels = [n[len("vmlinuz-") :] for n in names if n.startswith("vmlinuz-") and len(n) > len("vmlinuz-")]
    return sorted(kernels, key=version_key)


def next_boot_kernel(root="/", kernels=None):
    """(release, how) of the kernel the next boot loads, or (None, why not).

    Debian's linux-update-symlinks points /vmlinuz (or /boot/vmlinuz with link_in_boot) at the newest installed
    image, and GRUB's default entry on Debian is the newest kernel by version; a GRUB_DEFAULT=saved choice is not
    read here."""
    kernels = installed_kernels(root) if kernels is None else kernels
    for link in ("/vmlinuz", "/boot/vmlinuz"):
        path = _under(root, link)
        if os.path.islink(path):
            target = os.path.basename(os.readlink(path))
            if target.startswith("vmlinuz-") and target[len("vmlinuz-") :] in kernels:
                return target[len("vmlinuz-") :], f"{link} points to it"
    if kernels:
        return kernels[-1], "the newest installed kernel image"
    return None, "no kernel image in /boot (a container, or an image without a kernel)"


def dkms_versions(root, kernel):
    """{module name: [driver versions]} DKMS built for kernel (its tree may hold several versions)."""
    found = {}
    for name in DKMS_MODULES:
        base = _under(root, f"/var/lib/dkms/{name}")
        try:
            versions = sorted(os.listdir(base))
        except OSError:
            continue
        built = [v for v in versions if os.path.isdir(os.path.join(base, v, kernel))]
        if built:
            found[name] = built
    return found


def nvidia_modules(root, kernel):
    """Paths of nvidia kernel modules installed for kernel (DKMS' updates/dkms, extra, or anywhere under it)."""
    base = _under(root, f"/lib/modules/{kernel}")
    found = []
    for dirpath, _dirs, files in os.walk(base):
        found.extend(os.path.join(dirpath, f) for f in files if _MODULE_RE.match(f))
    return sorted(found)


def module_report(root, kernel, driver_version, modinfo=None):
    """What kernel has for the driver: {present, versions, matches, detail}. modinfo(path) -> version or None."""
    paths = nvidia_modules(root, kernel)
    dkms = dkms_versions(root, kernel)
    versions = set()
    for path in paths:
        name = os.path.basename(path).split(".ko", 1)[0]
        # The file itself says which version it is (modinfo); DKMS' tree only which versions were built for the
        # kernel, not which one is installed, so it is the fallback (all of them) where modinfo cannot tell.
        version = modinfo(path) if modinfo else None
        versions.update([version] if version else dkms.get(name, []))
    versions = sorted(versions)
    if not paths:
        detail = f"no nvidia module in /lib/modules/{kernel}"
    elif driver_version and versions and driver_version not in versions:
        detail = f"nvidia module {', '.join(versions)}, not the installed driver {driver_version}"
    else:
        detail = f"nvidia module {', '.join(versions) or '(version unknown)'}"
    matches = bool(paths) and (not driver_version or not versions or driver_version in versions)
    return {"present": bool(paths), "versions": versions, "matches": matches, "detail": detail}


def kernel_report(root="/", running=None, driver_version=None, modinfo=None):
    """Every installed kernel with its nvidia module, the running one and the one that boots next."""
    kernels = installed_kernels(root)
    nxt, how = next_boot_kernel(root, kernels)
    rows = []
    for kernel in kernels:
        row = {"release": kernel, "running": kernel == running, "next_boot": kernel == nxt}
        row.update(module_report(root, kernel, driver_version, modinfo))
        rows.append(row)
    return {"running": running, "next_boot": nxt, "next_boot_source": how, "kernels": rows}


def next_boot_problem(report, driver_version):
    """The sentence that says why rebooting now would lose the GPUs, or None. Unknown next kernel: None (nothing to
    judge, e.g. in a container)."""
    nxt = report.get("next_boot")
    if not nxt or not driver_version:
        return None
    row = next((r for r in report.get("kernels", []) if r["release"] == nxt), None)
    if row is None or row["matches"]:
        return None
    return (
        f"the kernel that boots next ({nxt}, {report.get('next_boot_source')}) has {row['detail']}: after a reboot "
        f"driver {driver_version} would not load. Install its headers (linux-headers-{nxt}) so DKMS builds the "
        f"module (dkms autoinstall -k {nxt}), or make another kernel the default"
    )


def flavour(kernel):
    """The flavour of a Debian kernel release: "amd64" of "6.1.0-28-amd64", "cloud-amd64" of
    "6.12.9+bpo-cloud-amd64"."""
    match = re.match(r"^[^-]+-(?:[0-9]+-)?(.+)$", kernel or "")
    return match.group(1) if match else ""


def headers_present(root, kernel):
    """Whether DKMS can build for kernel: its build tree has include/ (as dkms' common.postinst checks)."""
    return os.path.isdir(_under(root, f"/lib/modules/{kernel}/build/include"))


def kernel_targets(root="/", running=None):
    """The kernels whose headers a host needs, so that the module exists wherever it boots: the running kernel (None
    in a container, whose kernel is the host's) and the one that boots next. Older kernels get a module when their
    headers are there (dkms_plan) but their headers are not asked for: the archive may no longer have them."""
    nxt, _how = next_boot_kernel(root)
    return [k for i, k in enumerate([running, nxt]) if k and k not in [running, nxt][:i]]


def kernel_packages(
    targets, headers_format="linux-headers-{}", headers_package="", flavours=DEBIAN_FLAVOURS, unavailable=()
):
    """DKMS, the headers of each target kernel, and the metapackage that brings the headers of every new kernel of
    the next boot's flavour (headers_package when named: Proxmox, Ubuntu HWE and custom kernels have their own).
    Nothing when there is no kernel to build for (a container without kernels of its own). Kernels in unavailable
    (their headers are in no repository: a custom kernel, an ABI the archive has dropped) get no headers package:
    asking for one would fail the whole install, and the kernel guard refuses a reboot into them instead."""
    if not targets:
        return []
    meta = headers_package or (headers_format.format(flavour(targets[-1])) if flavour(targets[-1]) in flavours else "")
    headers = [headers_format.format(k) for k in targets if k not in unavailable]
    return list(dict.fromkeys(["dkms"] + headers + ([meta] if meta else [])))


def unavailable_headers(targets, headers_format, available):
    """The target kernels whose headers package available(name) says no repository has (nor dpkg, installed)."""
    return [k for k in targets if not available(headers_format.format(k))]


def parse_dkms_status(text):
    """{(module, version, kernel): state} from `dkms status` (state: added, built, installed)."""
    found = {}
    for line in text.splitlines():
        match = _STATUS_RE.match(line.strip())
        if match:
            name, version, kernel, _arch, state = match.groups()
            found[(name, version, kernel)] = state
    return found


def dkms_plan(kernels, module, version, status, has_headers):
    """[(kernel, action)] for one DKMS module version over the installed kernels: "installed" (nothing to do),
    "install" (dkms install builds it when needed) or "no headers" (nothing DKMS can do: reported)."""
    plan = []
    for kernel in kernels:
        if status.get((module, version, kernel)) == "installed":
            plan.append((kernel, "installed"))
        elif has_headers(kernel):
            plan.append((kernel, "install"))
        else:
            plan.append((kernel, "no headers"))
    return plan


def log_tail(text, lines=25, width=300):
    """The last lines of a build log, each cut to width characters, undecodable bytes replaced: what a failure
    message quotes."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    tail = [line[:width] for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join(tail)
