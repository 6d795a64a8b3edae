# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readiness gate of an upgraded node: pure checks of gathered facts, one verdict per gate.

A node that passes every gate is given back to its scheduler; the first gate that fails names the node's state
(failed/<gate>) and the reason it stays drained. Each gate answers a failure GPU fleets report right after a driver
change (NVIDIA's driver, toolkit and operator trackers, Slurm sites):

- module: the kernel module loaded is not the installed driver (no reboot yet, or the reboot came up without it);
- gpus: a GPU fell off the bus or failed to initialise without an Xid: NVML sees fewer GPUs than the PCI bus;
- fabric: on NVSwitch systems Fabric Manager is not running or the fabric has not finished training, and CUDA
  answers error 802 "system not yet initialized"; on GB200-class trays (GPUs on the rack's NVLink switches) the GPUs
  have not registered with the fabric;
- nvlsm: on NVLink 5 systems (HGX B200/B300) the NVLink Subnet Manager is not running beside Fabric Manager, which
  then fails with NV_WARN_NOTHING_TO_DO (Fabric Manager user guide; siderolabs/extensions#717);
- imex: where GPUs share memory across nodes (GB200 NVL) the IMEX service is not active or its channel0 is missing,
  and CUDA's fabric-memory calls fail with an insufficient-permission error (NVIDIA's IMEX guide, "IMEX Channels");
- peermem: the node loads nvidia-peermem at boot (role rdma) but it is not loaded after the change: NCCL falls back
  to staging through host memory without a word (NVIDIA/nccl#1537, NVIDIA/deepops#1300);
- gdrdrv: GDRCopy is installed but its module is not loaded or /dev/gdrdrv is missing after the change (its init
  script reports failures and still exits 0, so gdrdrv.service looks fine; NVIDIA/gdrcopy#331, #334);
- persistence: persistence mode off (the driver tears down between jobs; NVIDIA's Ubuntu packaging starts
  nvidia-persistenced with --no-persistence-mode);
- health: a critical finding (ECC, remapped rows, temperature, a next kernel without a module);
- xid: an Xid in the kernel log that was not there when the upgrade began;
- cdi: the CDI spec still describes the previous driver (generated before the change).
"""

from __future__ import annotations

import re

# Fabric Manager's line once the NVSwitches and GPUs are configured (HGX A100 and B200 logs in NVIDIA's trackers).
FM_DONE = "Successfully configured all the available GPUs and NVSwitches"
# Where a start begins: systemd's "Starting <unit>..." in the unit's journal; in Fabric Manager's own log (appended
# across restarts) its version line at start ("Fabric Manager version 570.133.20 is running ...": the wording of
# that line is not verified against a real log).
_FM_START = re.compile(r"^Starting |Fabric Manager version \S+ is running")
_CDI_HOOK_VERSION = re.compile(r"--host-driver-version=(\d+\.\d+(?:\.\d+)?)")
# Only the driver's own core libraries: a spec also mounts libraries with versions of their own
# (libnvidia-egl-wayland.so.1.1.13, libnvidia-egl-gbm.so.1.1.2).
_CDI_LIB_VERSION = re.compile(r"/lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)\b")


def gate(name, ok, detail):
    return {"gate": name, "ok": bool(ok), "detail": detail}


def gate_module(facts, target):
    """The kernel module NVML talks to is the target driver."""
    loaded = facts.get("driver_version") if facts.get("driver_state") == "loaded" else None
    if not target:
        return gate("module", True, "no driver target: not checked")
    if loaded == target:
        return gate("module", True, f"driver {target} loaded")
    state = facts.get("driver_state") or "unknown"
    why = facts.get("driver_state_reason")
    detail = f"driver {target} is not the one loaded: NVML reports {loaded or state}" + (f" ({why})" if why else "")
    return gate("module", False, detail)


def gate_gpus(facts, expected=None):
    """NVML enumerates every NVIDIA GPU on the PCI bus, and as many as the inventory says the node has."""
    nvml, pci = facts.get("gpu_count") or 0, facts.get("pci_gpu_count") or 0
    if pci and nvml < pci:
        return gate("gpus", False, f"{nvml} of {pci} GPUs: NVML enumerates {nvml}, the PCI bus has {pci}")
    if expected and nvml != expected:
        return gate(
            "gpus", False, f"{nvml} of {expected} GPUs: NVML enumerates {nvml}, gpufleet_expected_gpus is {expected}"
        )
    return gate("gpus", True, f"{nvml} GPUs in NVML" + (f", {pci} on PCI" if pci else ""))


def fm_configured(lines):
    """Fabric Manager's own lines since its last start say it configured the fabric. lines: the unit's journal (or
    its log file), oldest first; systemd's "Starting ..." line marks a start."""
    starts = [i for i, line in enumerate(lines) if _FM_START.search(line)]
    if not starts:
        return False  # no start seen: a success line could be from any earlier run
    return any(FM_DONE in line for line in lines[starts[-1] + 1 :])


def _unregistered(facts):
    """The GPUs whose NVML fabric probe is not completed with status 0; None when a GPU has no probe (A100)."""
    probes = [g.get("fabric") for g in facts.get("gpus") or []]
    if not probes or not all(probes):
        return None
    return [
        f"GPU {g['index']} {g['fabric']['state']}"
        + (f" (status {g['fabric']['status']})" if g["fabric"]["status"] else "")
        for g in facts["gpus"]
        if g["fabric"]["state"] != "completed" or g["fabric"]["status"] != 0
    ]


def gate_fabric(facts, fm_active, fm_lines):
    """NVSwitch hosts (on PCI, or behind an NVLink 5 bridge): Fabric Manager active, and the fabric trained: every
    GPU's NVML fabric state completed with status 0 (Hopper and newer), else (A100: no fabric probe) Fabric
    Manager's "configured" line. GPUs on switches outside the node (GB200 trays): registered with the fabric."""
    pending = _unregistered(facts)
    if facts.get("imex_required") and not facts.get("fabricmanager_required"):
        return _rack_fabric(facts, pending)
    if not facts.get("fabricmanager_required"):
        return gate("fabric", True, "no NVSwitch: Fabric Manager not needed")
    if not fm_active:
        return gate("fabric", False, "Fabric Manager is not active on an NVSwitch system (CUDA answers error 802)")
    return _fm_trained(facts, pending, fm_lines)


def _fm_trained(facts, pending, fm_lines):
    """Fabric Manager active: NVML's probes say the GPUs registered; without probes (A100), its own log does."""
    if pending:
        return gate("fabric", False, "the NVLink fabric has not finished training: " + ", ".join(pending))
    if pending is not None:  # every GPU has a probe and all are registered
        return gate("fabric", True, f"Fabric Manager active, {len(facts['gpus'])} GPUs registered with the fabric")
    if fm_configured(fm_lines):
        return gate("fabric", True, "Fabric Manager active and reports the GPUs and NVSwitches configured")
    return gate("fabric", False, f'Fabric Manager is active but has not logged "{FM_DONE}" since it started')


def _rack_fabric(facts, pending):
    """A tray whose GPUs are on the rack's NVLink switches: every GPU registered with that fabric."""
    if pending:
        return gate("fabric", False, "the GPUs have not registered with the NVLink fabric: " + ", ".join(pending))
    return gate("fabric", True, f"{len(facts['gpus'])} GPUs registered with the rack's NVLink fabric")


def gate_nvlsm(facts, processes):
    """NVLink 5 systems: NVLSM runs (Fabric Manager's start script launches it; its process is nvlsm)."""
    if not facts.get("nvlsm_required"):
        return gate("nvlsm", True, "no NVLink 5 NVSwitch: NVLSM not needed")
    if "nvlsm" in processes:
        return gate("nvlsm", True, "NVLSM running beside Fabric Manager")
    return gate(
        "nvlsm",
        False,
        "NVLSM is not running on an NVLink 5 system: Fabric Manager cannot program the NVSwitches (is nvlsm "
        "installed and ib_umad loaded?)",
    )


def gate_imex(facts, imex_active, channel0):
    """GPUs sharing memory across nodes: the IMEX service active and its default channel present."""
    if not facts.get("imex_required"):
        return gate("imex", True, "no multi-node NVLink: IMEX not needed")
    if not imex_active:
        return gate("imex", False, "the IMEX service is not active on a multi-node NVLink node")
    if not channel0:
        return gate(
            "imex",
            False,
            "IMEX channel0 is missing (/dev/nvidia-caps-imex-channels/channel0): CUDA's fabric memory calls fail "
            "with insufficient permission",
        )
    return gate("imex", True, f"IMEX active with channel0 in NVLink domain {facts.get('nvlink_domain') or 'unknown'}")


def _driver_in_kernel(facts, kernel_driver):
    """The NVIDIA module is loaded as the kernel says (kernel_driver: /sys/module or /proc/driver/nvidia), else as
    NVML says: the kernel modules that depend on it (nvidia-peermem, gdrdrv) can only be where it is."""
    return facts.get("driver_state") == "loaded" if kernel_driver is None else bool(kernel_driver)


def gate_peermem(facts, wanted, kernel_driver=None):
    """A node set to load nvidia-peermem at boot has it loaded once the driver is."""
    if not wanted:
        return gate("peermem", True, "nvidia-peermem not configured here")
    if not _driver_in_kernel(facts, kernel_driver):
        return gate("peermem", True, "the driver is not loaded: nvidia-peermem follows it")
    if (facts.get("fabric") or {}).get("peermem"):
        return gate("peermem", True, "nvidia-peermem loaded (GPUDirect RDMA)")
    return gate(
        "peermem",
        False,
        "nvidia-peermem is configured to load at boot but is not loaded: NCCL stages through host memory (no "
        "GPUDirect RDMA); see `modprobe nvidia-peermem` for why",
    )


def gate_gdrdrv(facts, installed, loaded, device, kernel_driver=None):
    """A node with GDRCopy installed has gdrdrv loaded and /dev/gdrdrv once the driver is loaded."""
    if not installed:
        return gate("gdrdrv", True, "GDRCopy not installed here")
    if not _driver_in_kernel(facts, kernel_driver):
        return gate("gdrdrv", True, "the driver is not loaded: gdrdrv follows it")
    if not loaded:
        return gate("gdrdrv", False, "GDRCopy is installed but gdrdrv is not loaded (see `modprobe gdrdrv`)")
    if not device:
        return gate("gdrdrv", False, "gdrdrv is loaded but /dev/gdrdrv is missing (gdrdrv.service makes it)")
    return gate("gdrdrv", True, "gdrdrv loaded, /dev/gdrdrv present")


def gate_persistence(facts, required=True):
    if not required:
        return gate("persistence", True, "not required (nvidia-persistenced not managed)")
    off = [g["index"] for g in facts.get("gpus") or [] if g.get("persistence_mode") is False]
    if off:
        return gate(
            "persistence",
            False,
            f"persistence mode off on GPU {', '.join(map(str, off))}: nvidia-persistenced is not running with "
            "persistence mode (its unit's --no-persistence-mode)",
        )
    return gate("persistence", True, "persistence mode on")


def gate_health(facts, baseline):
    """Critical findings, except Xid lines that were in the log before the upgrade (the xid gate judges new ones)."""
    old = set(baseline or [])
    critical = [
        f["what"]
        for f in facts.get("health") or []
        if f.get("severity") == "critical" and not (str(f.get("what", "")).startswith("Xid ") and f.get("value") in old)
    ]
    if critical:
        return gate("health", False, "critical: " + "; ".join(critical))
    return gate("health", True, f"health {facts.get('health_status', 'ok')}")


def new_xid_lines(facts, baseline):
    old = set(baseline or [])
    return [line for line in (facts.get("kernel_log") or {}).get("xid_lines") or [] if line not in old]


def gate_xid(facts, baseline):
    new = new_xid_lines(facts, baseline)
    if new:
        return gate("xid", False, f"{len(new)} new Xid since the upgrade began: {new[0]}")
    return gate("xid", True, "no new Xid since the upgrade began")


def cdi_versions(text):
    """Driver versions a CDI spec was generated for: its hook's --host-driver-version (newer toolkits), else the
    versions of the libcuda and libnvidia-ml it mounts."""
    found = set(_CDI_HOOK_VERSION.findall(text or "")) or set(_CDI_LIB_VERSION.findall(text or ""))
    return sorted(found)


def gate_cdi(spec_path, text, loaded):
    """The CDI spec was regenerated for the driver now loaded (a spec made before the reboot names the old one)."""
    if not spec_path:
        return gate("cdi", True, "no CDI spec expected")
    if text is None:
        return gate("cdi", False, f"no CDI spec at {spec_path}: containers cannot request nvidia.com/gpu devices")
    versions = cdi_versions(text)
    if not versions:
        return gate("cdi", False, f"the CDI spec {spec_path} names no driver version (generated without a driver?)")
    if loaded and versions != [loaded]:
        return gate("cdi", False, f"the CDI spec {spec_path} is for driver {', '.join(versions)}, {loaded} is loaded")
    return gate("cdi", True, f"CDI spec for driver {', '.join(versions)}")


def evaluate(facts, *, target, expected_gpus, fm_active, fm_lines, xid_baseline, cdi_path, cdi_text, **node):
    """Every gate in order: the first that failed decides the node's state (failed/<gate>). node: persistence
    (required, default true), processes (names running), imex_active, imex_channel0, peermem_wanted,
    gdrdrv_installed, gdrdrv_loaded, gdrdrv_device, kernel_driver (the kernel has the NVIDIA module loaded)."""
    loaded = facts.get("driver_version") if facts.get("driver_state") == "loaded" else None
    persistence = node.get("persistence", True)
    return [
        gate_module(facts, target),
        gate_gpus(facts, expected_gpus),
        gate_fabric(facts, fm_active, fm_lines),
        gate_nvlsm(facts, node.get("processes") or ()),
        gate_imex(facts, node.get("imex_active", False), node.get("imex_channel0", False)),
        gate_peermem(facts, node.get("peermem_wanted", False), node.get("kernel_driver")),
        gate_gdrdrv(
            facts,
            node.get("gdrdrv_installed", False),
            node.get("gdrdrv_loaded"),
            node.get("gdrdrv_device"),
            node.get("kernel_driver"),
        ),
        gate_persistence(facts, persistence),
        gate_health(facts, xid_baseline),
        gate_xid(facts, xid_baseline),
        gate_cdi(cdi_path, cdi_text, loaded),
    ]


def first_failure(gates):
    return next((g for g in gates if not g["ok"]), None)
