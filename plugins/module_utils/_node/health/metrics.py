# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts' facts as Prometheus text exposition for node_exporter's textfile collector: pure functions.

The format is Prometheus' text format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/): one
`# HELP` and `# TYPE` per family, then its samples; label values escape backslash, double quote and newline. The
textfile collector refuses a file whose families repeat or mix types, so every family is written once, here.

Per-GPU series carry only `gpu` (the NVML index); `gpufleet_gpu_info` carries the identity (uuid, model, PCI bus id),
to be joined on `gpu` when an alert wants the model: the usual info-metric pattern, which keeps series few.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._common.xid import parse_xid
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.findings import SEVERITY_ORDER
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.names import THROTTLE_REASONS

PREFIX = "gpufleet_"
HEALTH_STATUS = {"ok": 0, "warning": 1, "critical": 2}
# The stack parts gpufleet_node_stack_info names, from ansible_facts['gpufleet_installed'].
STACK_PARTS = ("driver", "cuda", "cudnn", "nccl", "fabricmanager", "container_toolkit")


def escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Families:
    """Samples grouped by family, in the order families were first declared."""

    def __init__(self):
        self._families = {}

    def add(self, name, kind, help_text, value, /, **labels):
        if value is None:
            return  # NVML had no value (unsupported on this card): no sample rather than a made-up 0
        family = self._families.setdefault(PREFIX + name, {"kind": kind, "help": help_text, "samples": []})
        family["samples"].append((labels, value))

    def text(self):
        lines = []
        for name, family in self._families.items():
            lines.append(f"# HELP {name} {family['help']}")
            lines.append(f"# TYPE {name} {family['kind']}")
            for labels, value in family["samples"]:
                rendered = ",".join(f'{key}="{escape(val)}"' for key, val in labels.items())
                lines.append(f"{name}{{{rendered}}} {number(value)}" if rendered else f"{name} {number(value)}")
        return "\n".join(lines) + "\n"


def _version(installed, part):
    """The part's version as the host's pins have it (stack/gather: installed["stack"]); CUDA toolkits joined."""
    value = ((installed or {}).get("stack") or {}).get(part) or ""
    return ",".join(value) if isinstance(value, list) else str(value)


def _framework_versions(installed):
    frameworks = (installed or {}).get("frameworks") or {}
    return ",".join(
        f"{name}=={entry.get('version')}"
        for name in sorted(frameworks)
        for entry in frameworks[name]
        if isinstance(entry, dict) and entry.get("version")
    )


def node_families(out, facts, installed):
    state = facts.get("driver_state")
    out.add(
        "node_stack_info",
        "gauge",
        "The node's driver and stack versions as labels (value 1).",
        1,
        driver_state=state or "",
        driver_version=facts.get("driver_version") or "",
        cuda_driver_version=facts.get("cuda_driver_version") or "",
        kernel_module_flavor=facts.get("kernel_module_flavor") or "",
        **{part: _version(installed, part) for part in STACK_PARTS},
        frameworks=_framework_versions(installed),
    )
    out.add("node_driver_loaded", "gauge", "1 when NVML answered (driver loaded and matching).", state == "loaded")
    out.add(
        "node_driver_mismatch",
        "gauge",
        "1 when the driver library and the loaded kernel module differ (upgraded without a reboot).",
        state == "mismatch",
    )
    out.add("node_gpus_pci", "gauge", "NVIDIA GPUs on the PCI bus (not given to a VM).", facts.get("pci_gpu_count", 0))
    out.add("node_gpus_nvml", "gauge", "GPUs NVML enumerates.", facts.get("gpu_count", 0))
    out.add(
        "node_health_status",
        "gauge",
        "Worst health finding: 0 ok, 1 warning, 2 critical.",
        HEALTH_STATUS.get(facts.get("health_status"), 2),
    )
    counts = dict.fromkeys(SEVERITY_ORDER, 0)
    for item in facts.get("health") or []:
        counts[item["severity"]] = counts.get(item["severity"], 0) + 1
    for severity, count in counts.items():
        out.add("node_health_findings", "gauge", "Health findings by severity.", count, severity=severity)
    kernel_log = facts.get("kernel_log") or {}
    out.add(
        "node_kernel_log_readable", "gauge", "1 when the kernel log was read for Xid lines.", kernel_log.get("read")
    )


def xid_families(out, facts):
    """Xid lines in this boot's kernel log, counted per GPU, Xid and severity from the health rules' own Xid findings
    (gpu/findings.xid_findings: one per line, attributed to the GPU of its PCI address)."""
    counts = {}
    for item in facts.get("health") or []:
        parsed = (
            parse_xid(item["value"]) if item["what"].startswith("Xid ") and isinstance(item["value"], str) else None
        )
        if parsed:
            key = (item["gpu"], parsed[1], item["severity"])
            counts[key] = counts.get(key, 0) + 1
    for (gpu, xid, severity), count in sorted(counts.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        out.add(
            "xid_events",
            "gauge",
            "Xid lines in this boot's kernel log (gpu empty when no GPU has that PCI address).",
            count,
            gpu="" if gpu is None else gpu,
            xid=xid,
            severity=severity,
        )


def gpu_families(out, gpu):
    index = gpu.get("index")
    out.add("gpu_accessible", "gauge", "1 when NVML answered for the GPU.", not gpu.get("error"), gpu=index)
    if gpu.get("error"):
        return
    out.add(
        "gpu_info",
        "gauge",
        "The GPU's identity as labels (value 1).",
        1,
        gpu=index,
        uuid=gpu.get("uuid") or "",
        name=gpu.get("name") or "",
        pci_bus_id=gpu.get("pci_bus_id") or "",
        architecture=gpu.get("architecture") or "",
        compute_capability=gpu.get("compute_capability") or "",
    )
    temp = gpu.get("temperature") or {}
    out.add("gpu_temperature_celsius", "gauge", "GPU core temperature.", temp.get("current_c"), gpu=index)
    out.add(
        "gpu_slowdown_temperature_celsius",
        "gauge",
        "Temperature at which the card slows its clocks (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN).",
        temp.get("slowdown_c"),
        gpu=index,
    )
    out.add(
        "gpu_shutdown_temperature_celsius",
        "gauge",
        "Temperature at which the card shuts down (NVML_TEMPERATURE_THRESHOLD_SHUTDOWN).",
        temp.get("shutdown_c"),
        gpu=index,
    )
    power = gpu.get("power") or {}
    out.add("gpu_power_watts", "gauge", "Board power draw.", power.get("draw_w"), gpu=index)
    out.add("gpu_power_limit_watts", "gauge", "Enforced power limit.", power.get("limit_w"), gpu=index)
    out.add("gpu_utilization_percent", "gauge", "GPU utilisation.", gpu.get("utilization_gpu_pct"), gpu=index)
    reasons = gpu.get("throttle_reasons")
    if reasons is not None:
        for _bit, name in THROTTLE_REASONS:
            out.add(
                "gpu_throttle_reason",
                "gauge",
                "1 when the clocks are held back for this reason (nvmlDeviceGetCurrentClocksEventReasons).",
                name in reasons,
                gpu=index,
                reason=name,
            )
    ecc = gpu.get("ecc") or {}
    for key, kind, scope in (
        ("volatile_corrected", "corrected", "volatile"),
        ("volatile_uncorrected", "uncorrected", "volatile"),
        ("aggregate_corrected", "corrected", "aggregate"),
        ("aggregate_uncorrected", "uncorrected", "aggregate"),
    ):
        out.add(
            "gpu_ecc_errors",
            "gauge",
            "ECC error counts (volatile: since the driver loaded; aggregate: the card's lifetime).",
            ecc.get(key),
            gpu=index,
            type=kind,
            scope=scope,
        )
    rows = gpu.get("remapped_rows") or {}
    for kind in ("correctable", "uncorrectable"):
        out.add("gpu_remapped_rows", "gauge", "Rows remapped, by cause.", rows.get(kind), gpu=index, cause=kind)
    out.add(
        "gpu_remapped_rows_pending",
        "gauge",
        "1 when a row remap waits for a GPU reset.",
        rows.get("pending"),
        gpu=index,
    )
    out.add("gpu_remapped_rows_failed", "gauge", "1 when row remapping failed.", rows.get("failed"), gpu=index)
    pages = gpu.get("retired_pages") or {}
    out.add("gpu_retired_pages_pending", "gauge", "1 when pages wait to be retired.", pages.get("pending"), gpu=index)
    link = gpu.get("nvlink") or {}
    if link.get("links_total"):
        out.add("gpu_nvlink_links_up", "gauge", "NVLink links active.", link.get("links_up"), gpu=index)
        out.add("gpu_nvlink_links", "gauge", "NVLink links the GPU has.", link.get("links_total"), gpu=index)
    out.add("gpu_persistence_mode", "gauge", "1 when persistence mode is on.", gpu.get("persistence_mode"), gpu=index)


def gpu_findings_families(out, facts):
    counts = {}
    for item in facts.get("health") or []:
        if item.get("gpu") is not None:
            key = (item["gpu"], item["severity"])
            counts[key] = counts.get(key, 0) + 1
    for gpu in facts.get("gpus") or []:
        for severity in ("warning", "critical"):
            out.add(
                "gpu_health_findings",
                "gauge",
                "Health findings on the GPU by severity.",
                counts.get((gpu.get("index"), severity), 0),
                gpu=gpu.get("index"),
                severity=severity,
            )


def render(facts, installed=None, collector=None):
    """The whole textfile: node, per-GPU and Xid families, then the collector's own (run time, duration, health loop).

    collector: {timestamp, duration_s, slurm: {action, drained_by_us}} or None."""
    out = Families()
    node_families(out, facts, installed)
    for gpu in facts.get("gpus") or []:
        gpu_families(out, gpu)
    gpu_findings_families(out, facts)
    xid_families(out, facts)
    collector = collector or {}
    out.add(
        "collector_last_run_timestamp_seconds",
        "gauge",
        "When the GPU health collector last wrote this file (Unix time).",
        collector.get("timestamp"),
    )
    out.add(
        "collector_duration_seconds", "gauge", "Wall time of the collector's last run.", collector.get("duration_s")
    )
    slurm = collector.get("slurm")
    if slurm:
        out.add(
            "health_loop_drained",
            "gauge",
            "1 when the health loop holds this node drained in Slurm for a critical finding.",
            slurm.get("drained_by_us"),
        )
    return out.text()
