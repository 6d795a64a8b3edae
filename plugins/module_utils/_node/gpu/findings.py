# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health findings from gathered GPU facts: pure functions, no NVML, no I/O.

A finding is {severity: critical|warning|info, gpu: index or None (host), what, value, threshold}.
health_status is the worst of critical/warning; info findings never raise it.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._common.xid import parse_xid, pci_key, xid_severity

SEVERITY_ORDER = {"info": 0, "warning": 1, "critical": 2}

# Thermal throttling means the card is too hot; hw_slowdown and the power brake are raised by the board
# (PSU or thermal sensor). sw_power_cap is the normal state of a card working at its power limit: info only.
THROTTLE_WARNING = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


def finding(severity, gpu, what, value=None, threshold=None):
    return {"severity": severity, "gpu": gpu, "what": what, "value": value, "threshold": threshold}


def gpu_findings(gpu, temperature_threshold):
    """Findings for one GPU dict as built by nvml.gpu_info."""
    found = []
    index = gpu.get("index")
    if gpu.get("error"):
        return [finding("critical", index, "gpu not accessible through NVML", gpu["error"])]
    temp = gpu.get("temperature") or {}
    current, slowdown = temp.get("current_c"), temp.get("slowdown_c")
    if current is not None:
        if slowdown is not None and current >= slowdown:
            found.append(
                finding("critical", index, "temperature at or over the card's slowdown threshold", current, slowdown)
            )
        elif current >= temperature_threshold:
            found.append(finding("warning", index, "temperature at or over threshold", current, temperature_threshold))
    ecc = gpu.get("ecc") or {}
    if ecc.get("volatile_uncorrected"):
        found.append(finding("critical", index, "uncorrectable ECC errors since boot", ecc["volatile_uncorrected"], 0))
    rows = gpu.get("remapped_rows") or {}
    if rows.get("failed"):
        found.append(finding("critical", index, "row remapping failed: the GPU needs service", True, False))
    if rows.get("pending"):
        found.append(finding("warning", index, "row remap pending: reset the GPU to apply it", True, False))
    if (gpu.get("retired_pages") or {}).get("pending"):
        found.append(finding("warning", index, "retired pages pending: reset the GPU to retire them", True, False))
    reasons = gpu.get("throttle_reasons") or []
    for reason in reasons:
        if reason in THROTTLE_WARNING:
            found.append(finding("warning", index, f"clocks throttled: {reason}", reason, None))
    found.extend(_pcie_findings(gpu, index, reasons))
    if gpu.get("persistence_mode") is False:
        found.append(finding("info", index, "persistence mode off", False, True))
    link = gpu.get("nvlink") or {}
    if link.get("links_total") and link.get("links_up", 0) < link["links_total"]:
        found.append(finding("warning", index, "NVLink link down", link["links_up"], link["links_total"]))
    return found


def _pcie_findings(gpu, index, reasons):
    """PCIe link below its maximum, only on a busy GPU.

    An idle GPU drops its link to gen 1 to save power (ASPM and dynamic link speed), so a low generation on
    an idle card is normal. We call a GPU idle when NVML says clocks are held for gpu_idle, or, when the
    card does not report clock event reasons, when utilisation is 0 %.
    """
    utilization = gpu.get("utilization_gpu_pct")
    idle = "gpu_idle" in reasons if gpu.get("throttle_reasons") is not None else not utilization
    if idle:
        return []
    pcie = gpu.get("pcie") or {}
    found = []
    for what, current, maximum in (
        ("PCIe link generation below its maximum", pcie.get("gen_current"), pcie.get("gen_max")),
        ("PCIe link width below its maximum", pcie.get("width_current"), pcie.get("width_max")),
    ):
        if current is not None and maximum is not None and current < maximum:
            found.append(finding("warning", index, what, current, maximum))
    return found


def xid_findings(lines, gpus):
    """One finding per Xid line, attributed to the GPU with that PCI address when known."""
    by_bus = {pci_key(gpu.get("pci_bus_id")): gpu.get("index") for gpu in gpus}
    found = []
    for line in lines:
        parsed = parse_xid(line)
        if not parsed:
            continue
        bus, xid = parsed
        found.append(finding(xid_severity(xid), by_bus.get(bus), f"Xid {xid} in kernel log", line, None))
    return found


def host_findings(driver_state, reason, pci_devices, nouveau_loaded, nvml_count=None):
    """Findings about the host rather than one GPU. nvml_count: the GPUs NVML enumerates, once the driver answered."""
    found = []
    pci_gpus = sum(bool(dev.get("is_gpu")) and dev.get("driver") != "vfio-pci" for dev in pci_devices)
    has_gpu = pci_gpus > 0
    # A GPU that fell off the bus, or that the driver failed to bring up (RmInitAdapter), stays on the PCI bus but
    # is not enumerated by NVML; CUDA and the scheduler then see fewer GPUs than the node has.
    if driver_state == "loaded" and nvml_count is not None and nvml_count < pci_gpus:
        found.append(
            finding("critical", None, f"NVML sees {nvml_count} of {pci_gpus} GPUs on the PCI bus", nvml_count, pci_gpus)
        )
    if driver_state == "mismatch":
        found.append(finding("critical", None, "driver library and kernel module versions differ", reason))
    elif driver_state in ("not_loaded", "not_installed", "error") and has_gpu:
        found.append(finding("critical", None, f"NVIDIA GPUs present but driver {driver_state}", reason))
    if nouveau_loaded and has_gpu:
        found.append(finding("warning", None, "nouveau kernel module loaded", True, False))
    return found


def health_status(findings):
    worst = max((SEVERITY_ORDER[item["severity"]] for item in findings), default=0)
    return {2: "critical", 1: "warning"}.get(worst, "ok")
