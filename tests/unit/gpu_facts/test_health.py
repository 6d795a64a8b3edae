"""Health findings from a captured failing A100 and from Xid kernel-log lines."""

import copy

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._common import xid
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import findings as health
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.host import kernel_log_xid_lines

from .conftest import fixture_json, fixture_text


@pytest.fixture
def hot():
    return fixture_json("gpu-hot-a100.json")


def whats(findings):
    return {(f["severity"], f["what"]) for f in findings}


def test_hot_failing_card(hot):
    found = health.gpu_findings(hot, 85)
    assert whats(found) == {
        ("critical", "temperature at or over the card's slowdown threshold"),
        ("critical", "uncorrectable ECC errors since boot"),
        ("warning", "row remap pending: reset the GPU to apply it"),
        ("warning", "clocks throttled: sw_thermal_slowdown"),
        ("warning", "clocks throttled: hw_thermal_slowdown"),
        ("warning", "PCIe link width below its maximum"),
        ("warning", "NVLink link down"),
    }
    temp = next(f for f in found if f["what"].startswith("temperature"))
    assert (temp["gpu"], temp["value"], temp["threshold"]) == (3, 91, 89)
    assert health.health_status(found) == "critical"


def healthy(hot):
    gpu = copy.deepcopy(hot)
    gpu["temperature"]["current_c"] = 45
    gpu["ecc"]["volatile_uncorrected"] = 0
    gpu["remapped_rows"]["pending"] = False
    gpu["throttle_reasons"] = []
    gpu["pcie"]["width_current"] = 16
    gpu["nvlink"]["links_up"] = 12
    return gpu


def test_healthy_card_has_no_findings(hot):
    assert health.gpu_findings(healthy(hot), 85) == []


@pytest.mark.parametrize(
    ("temp", "threshold", "expected"),
    [
        (84, 85, None),
        (85, 85, "warning"),
        (86, 90, None),
        (88, 90, None),  # one below the card's slowdown (89)
        (89, 95, "critical"),  # exactly at the card's slowdown: critical whatever the user's threshold
    ],
)
def test_temperature_threshold_option(hot, temp, threshold, expected):
    gpu = healthy(hot)
    gpu["temperature"]["current_c"] = temp
    found = health.gpu_findings(gpu, threshold)
    assert [f["severity"] for f in found] == ([expected] if expected else [])


def test_remap_failure_is_critical(hot):
    gpu = healthy(hot)
    gpu["remapped_rows"]["failed"] = True
    assert whats(health.gpu_findings(gpu, 85)) == {("critical", "row remapping failed: the GPU needs service")}


def test_pcie_below_max_ignored_when_idle(hot):
    gpu = healthy(hot)
    gpu["pcie"]["gen_current"] = 1
    gpu["throttle_reasons"] = ["gpu_idle"]
    assert health.gpu_findings(gpu, 85) == []
    gpu["throttle_reasons"] = None  # card without clock event reasons: fall back to utilisation
    gpu["utilization_gpu_pct"] = 0
    assert health.gpu_findings(gpu, 85) == []
    gpu["utilization_gpu_pct"] = 60
    assert whats(health.gpu_findings(gpu, 85)) == {("warning", "PCIe link generation below its maximum")}


def test_persistence_off_is_info_and_keeps_status_ok(hot):
    gpu = healthy(hot)
    gpu["persistence_mode"] = False
    found = health.gpu_findings(gpu, 85)
    assert whats(found) == {("info", "persistence mode off")}
    assert health.health_status(found) == "ok"


def test_unsupported_fields_make_no_findings():
    gpu = {"index": 0, "temperature": {"current_c": None}, "ecc": {}, "nvlink": {"links_up": 0, "links_total": 0}}
    assert health.gpu_findings(gpu, 85) == []


def test_xid_findings_attributed_by_pci_address(hot):
    other = healthy(hot)
    other.update(index=0, pci_bus_id="00000000:07:00.0")
    lines = kernel_log_xid_lines(fixture_text("dmesg-xid.txt"))
    found = health.xid_findings(lines, [hot, other])
    assert [(f["severity"], f["gpu"], f["what"]) for f in found] == [
        ("critical", 3, "Xid 48 in kernel log"),
        ("info", None, "Xid 13 in kernel log"),
        ("critical", 0, "Xid 79 in kernel log"),
        ("info", 0, "Xid 31 in kernel log"),
    ]


def test_pci_key_normalises_domain_width():
    assert xid.pci_key("00000000:3B:00.0") == xid.pci_key("0000:3b:00") == (0, 0x3B, 0)
    assert xid.pci_key("garbage") is None


def test_host_findings():
    gpus = [{"is_gpu": True, "is_nvswitch": False}]
    assert whats(health.host_findings("not_loaded", "why", gpus, True)) == {
        ("critical", "NVIDIA GPUs present but driver not_loaded"),
        ("warning", "nouveau kernel module loaded"),
    }
    assert whats(health.host_findings("mismatch", "why", [], False)) == {
        ("critical", "driver library and kernel module versions differ")
    }
    assert health.host_findings("not_installed", "why", [], False) == []


def test_health_status_levels():
    assert health.health_status([]) == "ok"
    assert health.health_status([health.finding("warning", 0, "x")]) == "warning"
