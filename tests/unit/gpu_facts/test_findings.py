"""Each health finding of one GPU and of the host (_node/gpu/findings.py), whole: severity, GPU, what, the value
seen and the threshold it crossed, at and beside each boundary."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import findings as health

BUSY = {"index": 2, "utilization_gpu_pct": 90, "throttle_reasons": []}


def found(gpu, threshold=85):
    return [tuple(f.values()) for f in health.gpu_findings(dict(BUSY, **gpu), threshold)]


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        (
            {"error": "Unknown Error", "temperature": {"current_c": 99}},
            [("critical", 2, "gpu not accessible through NVML", "Unknown Error", None)],
        ),
        # The card's own slowdown threshold wins over the operator's: critical at it, not only over it.
        (
            {"temperature": {"current_c": 90, "slowdown_c": 90}},
            [("critical", 2, "temperature at or over the card's slowdown threshold", 90, 90)],
        ),
        (
            {"temperature": {"current_c": 89, "slowdown_c": 90}},
            [("warning", 2, "temperature at or over threshold", 89, 85)],
        ),
        ({"temperature": {"current_c": 85}}, [("warning", 2, "temperature at or over threshold", 85, 85)]),
        ({"temperature": {"current_c": 84}}, []),
        (
            {"temperature": {"current_c": 84, "slowdown_c": 84}},
            [("critical", 2, "temperature at or over the card's slowdown threshold", 84, 84)],
        ),
        ({"temperature": {"slowdown_c": 0}}, []),
        ({"ecc": {"volatile_uncorrected": 3}}, [("critical", 2, "uncorrectable ECC errors since boot", 3, 0)]),
        ({"ecc": {"volatile_uncorrected": 0}}, []),
        (
            {"remapped_rows": {"failed": True}},
            [("critical", 2, "row remapping failed: the GPU needs service", True, False)],
        ),
        (
            {"remapped_rows": {"pending": True}},
            [("warning", 2, "row remap pending: reset the GPU to apply it", True, False)],
        ),
        ({"remapped_rows": {"failed": False, "pending": False}}, []),
        (
            {"retired_pages": {"pending": True}},
            [("warning", 2, "retired pages pending: reset the GPU to retire them", True, False)],
        ),
        ({"retired_pages": {"pending": False}}, []),
        (
            {"throttle_reasons": ["sw_power_cap", "hw_slowdown"]},
            [("warning", 2, "clocks throttled: hw_slowdown", "hw_slowdown", None)],
        ),
        (
            {"throttle_reasons": ["sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"]},
            [
                ("warning", 2, "clocks throttled: sw_thermal_slowdown", "sw_thermal_slowdown", None),
                ("warning", 2, "clocks throttled: hw_thermal_slowdown", "hw_thermal_slowdown", None),
                ("warning", 2, "clocks throttled: hw_power_brake_slowdown", "hw_power_brake_slowdown", None),
            ],
        ),
        ({"persistence_mode": False}, [("info", 2, "persistence mode off", False, True)]),
        ({"persistence_mode": None}, []),  # not reported: no finding
        ({"nvlink": {"links_total": 18, "links_up": 17}}, [("warning", 2, "NVLink link down", 17, 18)]),
        ({"nvlink": {"links_total": 18, "links_up": 18}}, []),
        ({"nvlink": {"links_total": 0, "links_up": 0}}, []),
        (
            {"pcie": {"gen_current": 4, "gen_max": 5, "width_current": 8, "width_max": 16}},
            [
                ("warning", 2, "PCIe link generation below its maximum", 4, 5),
                ("warning", 2, "PCIe link width below its maximum", 8, 16),
            ],
        ),
        ({"pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16}}, []),
        # Idle: the link drops to gen 1 to save power, which is no finding.
        ({"throttle_reasons": ["gpu_idle"], "pcie": {"gen_current": 1, "gen_max": 5}}, []),
        ({"throttle_reasons": None, "utilization_gpu_pct": 0, "pcie": {"gen_current": 1, "gen_max": 5}}, []),
        (
            {"throttle_reasons": None, "utilization_gpu_pct": 5, "pcie": {"gen_current": 1, "gen_max": 5}},
            [("warning", 2, "PCIe link generation below its maximum", 1, 5)],
        ),
    ],
)
def test_each_gpu_finding_whole_at_its_boundary(gpu, expected):
    assert found(gpu) == expected


def host(state, devices, nouveau=False, count=None, reason="why"):
    return [tuple(f.values()) for f in health.host_findings(state, reason, devices, nouveau, count)]


GPU = {"is_gpu": True, "driver": "nvidia"}
VM = {"is_gpu": True, "driver": "vfio-pci"}
SWITCH = {"is_gpu": False, "driver": None}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("loaded", [GPU, GPU], False, 1), [("critical", None, "NVML sees 1 of 2 GPUs on the PCI bus", 1, 2)]),
        (("loaded", [GPU, GPU], False, 2), []),
        (("loaded", [GPU, GPU, VM], False, 2), []),  # a GPU given to a VM is not the driver's
        (("loaded", [GPU, GPU], False, None), []),  # NVML did not answer a count
        (
            ("not_loaded", [GPU], False, 0),
            [("critical", None, "NVIDIA GPUs present but driver not_loaded", "why", None)],
        ),
        (("error", [GPU], False, None), [("critical", None, "NVIDIA GPUs present but driver error", "why", None)]),
        (
            ("not_installed", [GPU], False, None),
            [("critical", None, "NVIDIA GPUs present but driver not_installed", "why", None)],
        ),
        (("not_installed", [SWITCH], False, None), []),
        (("not_installed", [VM], False, None), []),
        (
            ("mismatch", [], False, None),
            [("critical", None, "driver library and kernel module versions differ", "why", None)],
        ),
        (("loaded", [GPU], True, 1), [("warning", None, "nouveau kernel module loaded", True, False)]),
        (("not_installed", [], True, None), []),  # nouveau without NVIDIA GPUs is nobody's concern here
    ],
)
def test_each_host_finding_whole(args, expected):
    assert host(*args) == expected


@pytest.mark.parametrize(
    ("severities", "status"),
    [([], "ok"), (["info"], "ok"), (["info", "warning"], "warning"), (["warning", "critical", "info"], "critical")],
)
def test_the_worst_finding_is_the_status_and_information_never_raises_it(severities, status):
    assert health.health_status([health.finding(s, None, "x") for s in severities]) == status
