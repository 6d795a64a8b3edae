"""The textfile the collector writes: families once each, values from the facts, no sample for what NVML lacks."""

import json
import re
from pathlib import Path

from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import findings as health
from ansible_collections.gpufleet.stack.plugins.module_utils._node.health.metrics import escape, render

GPU_FIXTURES = Path(__file__).resolve().parents[1] / "gpu_facts" / "fixtures"
SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$")


def hot_gpu():
    return json.loads((GPU_FIXTURES / "gpu-hot-a100.json").read_text())


def facts_with(gpus, xid_lines=(), state="loaded"):
    findings = [f for gpu in gpus for f in health.gpu_findings(gpu, 85)]
    findings += health.xid_findings(list(xid_lines), gpus)
    return {
        "driver_state": state,
        "driver_version": "570.133.20",
        "cuda_driver_version": "12.8",
        "kernel_module_flavor": "open",
        "pci_gpu_count": len(gpus),
        "gpu_count": len(gpus),
        "gpus": gpus,
        "health": findings,
        "health_status": health.health_status(findings),
        "kernel_log": {"read": True, "xid_lines": list(xid_lines)},
    }


def samples(text):
    """{(name, labels text): value} and the families in the order of their TYPE lines."""
    found, families = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.append(line.split()[2])
        elif not line.startswith("#"):
            name, labels, value = SAMPLE.match(line).groups()
            found[(name, labels or "")] = float(value)
    return found, families


def test_hot_gpu_values_and_thresholds():
    gpu = hot_gpu()
    found, families = samples(render(facts_with([gpu]), collector={"timestamp": 1796200000.5, "duration_s": 0.12}))
    assert len(families) == len(set(families)), "a family written twice makes node_exporter drop the file"
    temp = gpu["temperature"]
    assert found[("gpufleet_gpu_temperature_celsius", 'gpu="3"')] == temp["current_c"]
    assert found[("gpufleet_gpu_slowdown_temperature_celsius", 'gpu="3"')] == temp["slowdown_c"]
    assert found[("gpufleet_gpu_ecc_errors", 'gpu="3",type="uncorrected",scope="volatile"')] == 2
    assert found[("gpufleet_node_health_status", "")] == 2
    assert found[("gpufleet_gpu_health_findings", 'gpu="3",severity="critical"')] >= 2
    assert found[("gpufleet_collector_last_run_timestamp_seconds", "")] == 1796200000.5
    for reason in gpu["throttle_reasons"]:
        assert found[("gpufleet_gpu_throttle_reason", f'gpu="3",reason="{reason}"')] == 1
    assert found[("gpufleet_gpu_throttle_reason", 'gpu="3",reason="gpu_idle"')] == 0


def test_xid_lines_are_counted_per_gpu_with_their_severity():
    gpu = hot_gpu()  # PCI 00000000:3B:00.0
    lines = [
        "NVRM: Xid (PCI:0000:3b:00): 48, pid=2817, name=python, An uncorrectable double bit error (DBE)",
        "NVRM: Xid (PCI:0000:3b:00): 48, pid=2818, name=python, An uncorrectable double bit error (DBE)",
        "NVRM: Xid (PCI:0000:b1:00): 13, pid=12345, name=python3, Graphics SM Warp Exception",
    ]
    found, _families = samples(render(facts_with([gpu], lines)))
    assert found[("gpufleet_xid_events", 'gpu="3",xid="48",severity="critical"')] == 2
    # No GPU of this node has PCI b1: counted with an empty gpu label, not dropped.
    assert found[("gpufleet_xid_events", 'gpu="",xid="13",severity="info"')] == 1


def test_values_nvml_does_not_have_are_absent_not_zero():
    """A consumer card has no ECC and no row remapping: no sample, so an alert on them never sees a made-up 0."""
    gpu = {
        "index": 0,
        "name": "NVIDIA GeForce RTX 4090",
        "temperature": {"current_c": 45, "slowdown_c": None},
        "ecc": {"volatile_uncorrected": None},
        "remapped_rows": {"failed": None, "pending": None},
        "throttle_reasons": None,
    }
    found, _families = samples(render(facts_with([gpu])))
    assert ("gpufleet_gpu_temperature_celsius", 'gpu="0"') in found
    names = {name for name, _labels in found}
    assert not names & {
        "gpufleet_gpu_slowdown_temperature_celsius",
        "gpufleet_gpu_ecc_errors",
        "gpufleet_gpu_remapped_rows_failed",
        "gpufleet_gpu_throttle_reason",
        "gpufleet_gpu_nvlink_links",
    }


def test_driver_states_and_stack_labels():
    installed = {
        "stack": {"driver": "570.133.20", "cuda": ["12.8", "12.6"], "cudnn": "9.8.0.87"},
        "frameworks": {"torch": [{"version": "2.7.1+cu128"}]},
    }
    found, _families = samples(render(facts_with([], state="mismatch"), installed))
    assert found[("gpufleet_node_driver_mismatch", "")] == 1
    assert found[("gpufleet_node_driver_loaded", "")] == 0
    info = next(labels for name, labels in found if name == "gpufleet_node_stack_info")
    assert 'cuda="12.8,12.6"' in info and 'cudnn="9.8.0.87"' in info and 'frameworks="torch==2.7.1+cu128"' in info
    assert 'nccl=""' in info


def test_inaccessible_gpu_is_reported_without_identity():
    found, _families = samples(render(facts_with([{"index": 2, "error": "Unknown Error"}])))
    assert found[("gpufleet_gpu_accessible", 'gpu="2"')] == 0
    assert not [key for key in found if key[0] == "gpufleet_gpu_info"]


def test_label_values_are_escaped():
    assert escape('a "quoted"\\path\nline') == 'a \\"quoted\\"\\\\path\\nline'


def test_health_loop_state_only_when_the_loop_ran():
    assert "gpufleet_health_loop_drained" not in render(facts_with([]))
    text = render(facts_with([]), collector={"slurm": {"drained_by_us": True}})
    assert "gpufleet_health_loop_drained 1" in text
