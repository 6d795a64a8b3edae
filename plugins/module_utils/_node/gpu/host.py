# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host-side facts for gpu_facts: kernel module, nouveau, NVIDIA PCI functions, driver-state decisions.

Everything here reads plain files under a root (so tests can point it at a fixture tree) or is a pure
function of its arguments. Nothing here loads NVML.
"""

from __future__ import annotations

import os
import re

NVIDIA_PCI_VENDOR = "0x10de"

# NVSwitch chips enumerate as PCI class 0x0680 ("bridge, other"); GPUs are 0x0300 (VGA) or 0x0302 (3D).
# Fabric Manager must run wherever they are present:
# https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html
NVSWITCH_PCI_CLASS_PREFIX = "0x0680"
GPU_PCI_CLASS_PREFIXES = ("0x0300", "0x0302")

# /proc/driver/nvidia/version, e.g.
#   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (...)
#   NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Tue ...
_NVRM_RE = re.compile(r"NVRM version:.*?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_LIB_VERSION_RE = re.compile(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$")

# NVML return codes (nvml.h) that say something about the driver rather than about one query.
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _under(root, path):
    return os.path.join(root or "/", path.lstrip("/"))


def parse_nvrm_version(text):
    """Return (version, flavor) from /proc/driver/nvidia/version text; flavor is open|proprietary."""
    if not text:
        return None, None
    match = _NVRM_RE.search(text)
    version = match.group(1) if match else None
    first = text.splitlines()[0] if text.strip() else ""
    flavor = "open" if "Open Kernel Module" in first else "proprietary"
    return version, flavor


def library_version_from_path(path):
    """The driver version a libnvidia-ml file belongs to, from its versioned file name, or None."""
    if not path:
        return None
    match = _LIB_VERSION_RE.search(os.path.basename(path))
    return match.group(1) if match else None


def read_kernel_module(sysfs_root="/", procfs_root="/"):
    """What the running kernel says about the nvidia module, without touching any device node."""
    proc_text = read_text(_under(procfs_root, "/proc/driver/nvidia/version"))
    sys_module = os.path.isdir(_under(sysfs_root, "/sys/module/nvidia"))
    version, flavor = parse_nvrm_version(proc_text)
    if version is None and sys_module:
        version = (read_text(_under(sysfs_root, "/sys/module/nvidia/version")) or "").strip() or None
    return {
        "loaded": bool(sys_module or proc_text is not None),
        "version": version,
        "flavor": flavor,
        "nouveau_loaded": os.path.isdir(_under(sysfs_root, "/sys/module/nouveau")),
    }


def read_machine(sysfs_root="/"):
    """The DMI product name (GFD's nvidia.com/gpu.machine), or None."""
    return (read_text(_under(sysfs_root, "/sys/class/dmi/id/product_name")) or "").strip() or None


def pci_device(bus_id, vendor, device, pci_class, driver=None):
    """One NVIDIA PCI function as reported in facts."""
    pci_class = (pci_class or "").lower()
    return {
        "bus_id": bus_id,
        "vendor_id": vendor,
        "device_id": device,
        "class": pci_class,
        "is_gpu": pci_class.startswith(GPU_PCI_CLASS_PREFIXES),
        "is_nvswitch": pci_class.startswith(NVSWITCH_PCI_CLASS_PREFIX),
        "driver": driver,
    }


def read_pci_devices(sysfs_root="/"):
    """NVIDIA PCI functions in sysfs: present whether or not any driver is bound."""
    base = _under(sysfs_root, "/sys/bus/pci/devices")
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return []
    found = []
    for bus_id in entries:
        path = os.path.join(base, bus_id)
        vendor = (read_text(os.path.join(path, "vendor")) or "").strip().lower()
        if vendor != NVIDIA_PCI_VENDOR:
            continue
        driver_link = os.path.join(path, "driver")
        driver = os.path.basename(os.readlink(driver_link)) if os.path.islink(driver_link) else None
        device = (read_text(os.path.join(path, "device")) or "").strip().lower() or None
        found.append(pci_device(bus_id, vendor, device, (read_text(os.path.join(path, "class")) or "").strip(), driver))
    return found


def plan_probe(kmod_loaded, lib_found, standalone=None):
    """Decide whether nvmlInit may be called.

    Returns (call_init, driver_state, reason); driver_state is None when call_init is True.
    The real libnvidia-ml, run as root, creates /dev/nvidiactl during nvmlInit when the module is absent,
    so without a loaded module we never initialise it. standalone: why a library that touches no device node
    (source.library's) is safe to initialise anyway.
    """
    if lib_found and standalone:
        return True, None, standalone
    if not lib_found and not kmod_loaded:
        return False, "not_installed", "no libnvidia-ml.so.1 on the library path and no nvidia kernel module"
    if not lib_found:
        return False, "error", "the nvidia kernel module is loaded but libnvidia-ml.so.1 is not on the library path"
    if not kmod_loaded:
        return (
            False,
            "not_loaded",
            (
                "libnvidia-ml.so.1 is installed but the nvidia kernel module is not loaded "
                "(/sys/module/nvidia and /proc/driver/nvidia/version absent); nvmlInit was not called"
            ),
        )
    return True, None, "nvidia kernel module loaded"


def classify_init_error(code, lib_version=None, kmod_version=None):
    """Map an nvmlInit failure to (driver_state, reason)."""
    if code == NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "mismatch", (
            f"NVML library {lib_version or 'unknown'} does not match kernel module {kmod_version or 'unknown'}; "
            "reboot or reload the nvidia module after a driver upgrade"
        )
    if code == NVML_ERROR_DRIVER_NOT_LOADED:
        return "not_loaded", "nvmlInit: the NVIDIA kernel driver is not loaded"
    if code == NVML_ERROR_LIBRARY_NOT_FOUND:
        return "not_installed", "nvmlInit: libnvidia-ml.so.1 not found"
    if code == NVML_ERROR_NO_PERMISSION:
        return "error", "nvmlInit: no permission to open the NVIDIA device nodes"
    return "error", f"nvmlInit failed with NVML error {code}"


def versions_mismatch(lib_version, kmod_version):
    """True only when both versions are known and differ (a driver upgrade without reboot)."""
    return bool(lib_version and kmod_version and lib_version != kmod_version)


def cuda_version_string(value):
    """NVML's CUDA driver version integer (12080) as "12.8"; None stays None."""
    if value is None or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def kernel_log_xid_lines(text):
    """The NVRM Xid lines of a kernel log."""
    return [line.strip() for line in (text or "").splitlines() if "NVRM: Xid" in line]
