"""The fleet report's rows, drift and rendering (plugins/module_utils/_report.py)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils import _report

DESIRED = {
    "driver": "570",
    "cuda": "12.8",
    "cudnn": "9.8.0",
    "nccl": "2.26.2",
    "framework": {"name": "torch", "version": "2.7.1", "cuda": "12.8"},
}


def gpu_facts(driver="570.133.20", health="ok", findings=(), model="NVIDIA A100-SXM4-40GB", count=8):
    return {
        "driver_state": "loaded",
        "driver_version": driver,
        "cuda_driver_version": "12.8",
        "health_status": health,
        "health": list(findings),
        "gpus": [{"index": i, "name": model} for i in range(count)],
    }


INSTALLED = {
    "driver": {"loaded_version": "570.133.20", "package_version": "570.133.20"},
    "cuda": {"toolkits": [{"version": "12.8.93", "path": "/usr/local/cuda-12.8"}]},
    "cudnn": {"version": "9.8.0"},
    "nccl": {"version": "2.26.2"},
    "frameworks": {"torch": [{"version": "2.7.1+cu128"}]},
}


@pytest.mark.parametrize(
    ("desired", "actual", "ok"),
    [
        ("570", "570.133.20", True),
        ("570.133", "570.133.20", True),
        ("570.133.20", "570.133.20", True),
        ("570.1", "570.133.20", False),
        ("57", "570.133.20", False),
        ("570", None, False),
        (None, "550.54.15", True),
        (">=12.4,<13", "12.8", True),
        ("not a pin", "12.8", False),
    ],
)
def test_version_pins_match_on_dot_boundaries(desired, actual, ok):
    assert _report.version_matches(desired, actual) is ok


def test_a_host_at_the_desired_stack_has_no_drift():
    assert _report.drift(DESIRED, gpu_facts(), INSTALLED) == []


def test_drift_names_each_component_and_both_versions():
    installed = dict(INSTALLED, cudnn={"version": "8.9.7"}, nccl=None, frameworks={})
    found = _report.drift(DESIRED, gpu_facts(driver="550.54.15"), installed)
    assert found == [
        "driver 550.54.15 ≠ 570",
        "cuDNN 8.9.7 ≠ 9.8.0",
        "NCCL absent ≠ 2.26.2",
        "torch absent ≠ 2.7.1",
    ]


def test_missing_toolkit_is_drift():
    installed = dict(INSTALLED, cuda={"toolkits": [{"version": "12.4.131"}]})
    assert _report.drift(DESIRED, gpu_facts(), installed) == ["CUDA 12.8 not installed (have 12.4.131)"]


def test_host_without_facts_is_reported_not_hidden():
    row = _report.host_row("gpu-9", {"gpufleet_stack": DESIRED})
    assert row["health"] == "unknown"
    assert row["drift"] == ["no GPU facts: run playbooks/facts.yml"]


def test_rows_put_the_worst_hosts_first_and_count_them():
    hot = [{"severity": "critical", "gpu": 3, "what": "temperature", "value": 91, "threshold": 85}]
    rows = _report.build_rows(
        {
            "a-ok": {
                "ansible_facts": {"gpufleet_gpu": gpu_facts(), "gpufleet_installed": INSTALLED},
                "gpufleet_stack": DESIRED,
            },
            "b-old": {
                "ansible_facts": {"gpufleet_gpu": gpu_facts(driver="550.54.15"), "gpufleet_installed": INSTALLED},
                "gpufleet_stack": DESIRED,
            },
            "c-hot": {
                "ansible_facts": {
                    "gpufleet_gpu": gpu_facts(health="critical", findings=hot),
                    "gpufleet_installed": INSTALLED,
                },
                "gpufleet_stack": DESIRED,
            },
        }
    )
    assert [r["host"] for r in rows] == ["c-hot", "b-old", "a-ok"]
    assert rows[2]["gpus"] == "8x NVIDIA A100-SXM4-40GB"
    assert _report.summary(rows) == {"hosts": 3, "critical": 1, "warning": 0, "drifted": 1, "ok": 1}
    markdown = _report.render_markdown(rows, "2026-12-01 08:00 UTC")
    assert "| c-hot | 8x NVIDIA A100-SXM4-40GB | 570.133.20 (loaded) | 12.8 / 12.8.93 | critical | none |" in markdown
    assert "- critical: GPU 3: temperature = 91 (threshold 85)" in markdown


def test_html_escapes_what_hosts_report():
    facts = gpu_facts(model="<script>alert(1)</script>")
    rows = _report.build_rows({"x": {"ansible_facts": {"gpufleet_gpu": facts}}})
    page = _report.render_html(rows, "now")
    assert "<script>" not in page
    assert "&lt;script&gt;" in page


def test_failed_verification_and_upgrade_are_named_first_in_the_row():
    facts = {
        "gpufleet_gpu": gpu_facts(),
        "gpufleet_installed": INSTALLED,
        "gpufleet_verify": {"status": "failed", "failures": ["nccl 2.26.2 wanted, host has 2.21.5"]},
        "gpufleet_upgrade": {"status": "failed", "step": "install", "message": "nvidia-kernel-dkms postinst exit 10"},
    }
    row = _report.host_row("gpu-1", {"ansible_facts": facts, "gpufleet_stack": DESIRED})
    assert row["drift"][:2] == [
        "verification failed: nccl 2.26.2 wanted, host has 2.21.5",
        "upgrade failed at install: nvidia-kernel-dkms postinst exit 10",
    ]
    ok = dict(facts, gpufleet_verify={"status": "ok", "failures": []}, gpufleet_upgrade={"status": "done"})
    assert _report.host_row("gpu-1", {"ansible_facts": ok, "gpufleet_stack": DESIRED})["drift"] == []
