"""The fleet report's rows, drift and rendering (plugins/module_utils/_controller/report.py)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import report
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import report_render as render

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
    assert report.version_matches(desired, actual) is ok


def test_a_host_at_the_desired_stack_has_no_drift():
    assert report.drift(DESIRED, gpu_facts(), INSTALLED) == []


def test_drift_names_each_component_and_both_versions():
    installed = dict(INSTALLED, cudnn={"version": "8.9.7"}, nccl=None, frameworks={})
    found = report.drift(DESIRED, gpu_facts(driver="550.54.15"), installed)
    assert found == [
        ("driver", "driver 550.54.15 ≠ 570"),
        ("cuDNN", "cuDNN 8.9.7 ≠ 9.8.0"),
        ("NCCL", "NCCL absent ≠ 2.26.2"),
        ("framework", "torch absent ≠ 2.7.1"),
    ]


def test_missing_toolkit_is_drift():
    installed = dict(INSTALLED, cuda={"toolkits": [{"version": "12.4.131"}]})
    assert report.drift(DESIRED, gpu_facts(), installed) == [("CUDA", "CUDA 12.8 not installed (have 12.4.131)")]


def test_host_without_facts_is_reported_not_hidden():
    row = report.host_row("gpu-9", {"gpufleet_stack": DESIRED})
    assert row["health"] == "unknown"
    assert row["drift"] == ["no GPU facts: run playbooks/facts.yml"]


def test_rows_put_the_worst_hosts_first_and_count_them():
    hot = [{"severity": "critical", "gpu": 3, "what": "temperature", "value": 91, "threshold": 85}]
    rows = report.build_rows(
        {
            "a-ok": {
                "ansible_facts": {"gpufleet_gpu": gpu_facts(), "gpufleet_installed": INSTALLED},
                "gpufleet_stack": DESIRED,
                "gpufleet_components": ["driver", "cuda", "cudnn", "nccl", "horovod"],
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
    assert report.summary(rows) == {"hosts": 3, "critical": 1, "warning": 0, "drifted": 1, "ok": 1}
    markdown = render.render_markdown(rows, "2026-12-01 08:00 UTC")
    assert (
        "| c-hot | 8x NVIDIA A100-SXM4-40GB | 570.133.20 (loaded) | 12.8 / 12.8.93 | driver 570.133.20, CUDA 12.8.93, "
        "cuDNN 9.8.0, NCCL 2.26.2, torch 2.7.1+cu128 | critical | — | none |"
    ) in markdown
    assert "- critical: GPU 3: temperature = 91 (threshold 85)" in markdown


def test_html_escapes_what_hosts_report():
    facts = gpu_facts(model="<script>alert(1)</script>")
    rows = report.build_rows({"x": {"ansible_facts": {"gpufleet_gpu": facts}}})
    page = render.render_html(rows, "now")
    assert "<script>alert" not in page  # the page's own script is the only one
    assert "&lt;script&gt;" in page


def test_markdown_keeps_what_hosts_report_as_text():
    """A GPU name, finding and host name with HTML, a table separator, a link and a line break: one row each, shown
    literally (a Markdown viewer renders raw HTML and links)."""
    hostile = "<img src=x onerror=alert(1)>|[x](http://evil.example)\n## owned"
    finding = {"severity": "critical", "what": "xid <b>79</b> | `rm -rf`", "gpu": 0}
    facts = gpu_facts(model=hostile, health="critical", findings=[finding], count=1)
    rows = report.build_rows({"node_7": {"ansible_facts": {"gpufleet_gpu": facts}}})
    markdown = render.render_markdown(rows, "now")
    assert "<img" not in markdown and "<b>" not in markdown and "](http" not in markdown.replace("\\](", "")
    assert "\n## owned" not in markdown and "\n- critical" in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;\\|\\[x\\](http://evil.example) \\#\\# owned" in markdown
    assert "- critical: GPU 0: xid &lt;b&gt;79&lt;/b&gt; \\| \\`rm -rf\\`" in markdown
    assert "## node\\_7" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| node")]
    assert len(table) == 1 and table[0].count(" | ") == 8  # nine cells, none split by the name's |


def test_a_host_whose_gathering_failed_is_critical_with_why_not_healthy_from_its_cache():
    cached = dict(gpu_facts(), gathered_at="2026-12-05T10:00:00Z")
    failed = {"at": "2026-12-06T04:00:00Z", "reason": "unreachable, or a step before gpu_facts failed"}
    rows = report.build_rows(
        {
            "gone": {"ansible_facts": {"gpufleet_gpu": cached, "gpufleet_gather_failed": failed}},
            "back": {"ansible_facts": {"gpufleet_gpu": cached, "gpufleet_gather_failed": None}},
            "never": {"ansible_facts": {"gpufleet_gather_failed": failed}},
        }
    )
    by_host = {r["host"]: r for r in rows}
    gone, never, back = by_host["gone"], by_host["never"], by_host["back"]
    assert (gone["host"], gone["health"], back["health"], never["health"]) == ("gone", "critical", "ok", "critical")
    assert gone["findings"][0]["what"] == (
        "facts could not be gathered at 2026-12-06T04:00:00Z: unreachable, or a step before gpu_facts failed; "
        "the facts shown are from 2026-12-05T10:00:00Z"
    )
    assert never["findings"][0]["what"].endswith("; the facts shown are old")
    markdown = render.render_markdown(rows, "now")
    assert "| critical | — | none | 2026-12-05T10:00:00Z |" in markdown
    assert "- critical: facts could not be gathered at 2026-12-06T04:00:00Z" in markdown
    assert ">2026-12-05T10:00:00Z</td>" in render.render_html(rows, "now")


def test_failed_verification_and_upgrade_are_named_first_in_the_row():
    facts = {
        "gpufleet_gpu": gpu_facts(),
        "gpufleet_installed": INSTALLED,
        "gpufleet_verify": {"status": "failed", "failures": ["nccl 2.26.2 wanted, host has 2.21.5"]},
        "gpufleet_upgrade": {"status": "failed", "step": "install", "message": "nvidia-kernel-dkms postinst exit 10"},
    }
    row = report.host_row("gpu-1", {"ansible_facts": facts, "gpufleet_stack": DESIRED})
    assert row["drift"][:2] == [
        "verification failed: nccl 2.26.2 wanted, host has 2.21.5",
        "upgrade failed at install: nvidia-kernel-dkms postinst exit 10",
    ]
    ok = dict(facts, gpufleet_verify={"status": "ok", "failures": []}, gpufleet_upgrade={"status": "done"})
    assert report.host_row("gpu-1", {"ansible_facts": ok, "gpufleet_stack": DESIRED})["drift"] == []


def test_the_listed_components_decide_what_drifts():
    """The demo's stack names torch but installs no training environment (no horovod component): not drift."""
    installed = dict(INSTALLED, frameworks={})
    facts = {"gpufleet_gpu": gpu_facts(), "gpufleet_installed": installed}
    row = report.host_row("gpu-1", {"ansible_facts": facts, "gpufleet_stack": DESIRED})
    assert row["drift"] == []
    with_venv = {"ansible_facts": {"gpufleet_gpu": gpu_facts(), "gpufleet_installed": installed},
                 "gpufleet_stack": DESIRED, "gpufleet_components": ["driver", "horovod"]}  # fmt: skip
    assert report.host_row("gpu-1", with_venv)["drift"] == ["torch absent ≠ 2.7.1"]


def test_a_row_has_the_whole_stack_the_gpus_and_the_last_upgrade():
    gpu = gpu_facts(count=2) | {"kernel_module_flavor": "open", "kernel_log": {"xid_lines": [
        "NVRM: Xid (PCI:0000:0f:00): 79, pid=1, GPU has fallen off the bus."]}}  # fmt: skip
    gpu["gpus"][1].update(
        pci_bus_id="00000000:0F:00.0",
        temperature={"current_c": 90, "slowdown_c": 89},
        memory_total_mib=40960,
        ecc={"volatile_uncorrected": 2},
        remapped_rows={"correctable": 0, "uncorrectable": 1, "pending": True, "failed": False},
    )
    installed = dict(INSTALLED, fabricmanager={"version": "570.133.20"}, container_toolkit={"version": "1.17.8"})
    upgrade = {"status": "failed", "step": "gpus", "outcome": "failed/gpus", "time": "2026-12-02T04:00:00Z",
               "from": {"driver": "570.133.20"}, "to": {"driver": "570.172.08"},
               "message": "failed/gpus: 7 of 8"}  # fmt: skip
    facts = {"gpufleet_gpu": gpu, "gpufleet_installed": installed, "gpufleet_upgrade": upgrade}
    row = report.host_row("gpu-7", {"ansible_facts": facts, "gpufleet_stack": DESIRED})
    assert render.stack_text(row["stack"]) == (
        "driver 570.133.20 open, FM 570.133.20, CUDA 12.8.93, cuDNN 9.8.0, NCCL 2.26.2, CTK 1.17.8, torch 2.7.1+cu128"
    )
    assert render.grid_cells(row["gpu_grid"][1]) == [
        "1", "NVIDIA A100-SXM4-40GB", "90 °C / 89", "40960 MiB", "2", "0/1 pending", "1"]  # fmt: skip
    assert render.upgrade_text(row["upgrade"]) == "570.133.20 → 570.172.08, failed/gpus 2026-12-02T04:00:00Z"
    assert row["drift"] == ["upgrade failed at gpus: failed/gpus: 7 of 8"]
    assert row["drift_kinds"] == ["upgrade"]


def test_the_fleet_by_model_driver_and_kind_of_drift():
    fleet = {
        "a": {"ansible_facts": {"gpufleet_gpu": gpu_facts(), "gpufleet_installed": INSTALLED},
              "gpufleet_stack": DESIRED},
        "b": {"ansible_facts": {"gpufleet_gpu": gpu_facts(driver="550.54.15", model="NVIDIA H100 80GB HBM3"),
                                "gpufleet_installed": INSTALLED}, "gpufleet_stack": DESIRED},
        "c": {"gpufleet_stack": DESIRED},
    }  # fmt: skip
    b = report.breakdowns(report.build_rows(fleet))
    assert b["model"] == {
        "NVIDIA A100-SXM4-40GB": {"hosts": 1, "gpus": 8}, "NVIDIA H100 80GB HBM3": {"hosts": 1, "gpus": 8}}  # fmt: skip
    assert b["driver"] == {"550.54.15": 1, "570.133.20": 1}
    assert b["drift"] == {"driver": 1, "no facts": 1}
    page = render.render_html(report.build_rows(fleet), "now")
    assert 'data-health="ok" data-drift="driver"' in page and '<option value="no facts">' in page


def test_the_job_across_nodes_is_in_each_nodes_row():
    validation = {"status": "refused", "checks": [{"check": "nccl", "status": "refused", "reason": "no nvcc"}]}
    multinode = {
        "status": "refused",
        "nodes": ["gpu-1", "gpu-2"],
        "checks": [
            {"check": "allreduce", "status": "passed", "reason": "gloo all-reduce ..."},
            {"check": "rdma_bw", "status": "refused", "reason": "no RDMA device on gpu-1"},
        ],
    }
    facts = {"gpufleet_gpu": gpu_facts(), "gpufleet_installed": INSTALLED, "gpufleet_validation": validation}
    # Set in this run by set_fact on each node of the job: a host variable; from the cache on later runs: a fact.
    row = report.host_row("gpu-1", {"ansible_facts": facts, "gpufleet_stack": DESIRED, "gpufleet_multinode": multinode})
    assert row["validation"] == (
        "refused (nccl refused); across gpu-1, gpu-2: refused (allreduce passed; rdma_bw refused)"
    )
    assert row["drift"] == []
    failed = dict(
        multinode, status="failed", checks=[{"check": "allreduce", "status": "failed", "reason": "rank 1 lost"}]
    )
    row = report.host_row("gpu-2", {"ansible_facts": dict(facts, gpufleet_multinode=failed), "gpufleet_stack": DESIRED})
    assert row["drift"] == ["the job across nodes failed: allreduce: rank 1 lost"]
    assert row["validation"].endswith("across gpu-1, gpu-2: failed (allreduce failed)")


def test_a_nodes_rdma_fabric_is_in_its_row_and_escaped():
    fabric = {
        "summary": "roce",
        "peermem": False,
        "devices": [
            {"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "active": True, "rate_gbps": 100.0}]},
            {"name": "<b>x", "ports": [{"port": 1, "state": "DOWN", "active": False, "rate_gbps": 40.0}]},
        ],
    }
    gpu = dict(gpu_facts(), fabric=fabric)
    row = report.host_row("gpu-1", {"ansible_facts": {"gpufleet_gpu": gpu, "gpufleet_installed": INSTALLED}})
    assert row["fabric"] == "roce: mlx5_0:1 ACTIVE 100 Gb/s, <b>x:1 DOWN; no nvidia-peermem"
    html = render.render_html([row], "now")
    assert "fabric roce: mlx5_0:1 ACTIVE 100 Gb/s, &lt;b&gt;x:1 DOWN" in html and "<b>x" not in html
    assert report.fabric_text(gpu_facts()) is None  # facts from before fabric was gathered
    assert report.fabric_text(dict(gpu_facts(), fabric={"summary": "none"})) is None
    assert r"fabric roce: mlx5\_0:1 ACTIVE 100 Gb/s" in render.render_markdown([row], "now")


def test_what_the_nvlink_fabric_needs_is_in_the_row():
    """An HGX B200: its compute HCA's port, not the NVSwitch bridge's, and NVLSM; a GB200 tray: its IMEX domain."""
    bridge = {"name": "mlx5_8", "nvswitch_mgmt": True, "ports": [{"port": 1, "state": "ACTIVE", "active": True}]}
    hca = {"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "active": True, "rate_gbps": 400.0}]}
    b200 = dict(gpu_facts(), nvlink5_switch=True, fabric={"summary": "ib", "peermem": False, "devices": [hca, bridge]})
    assert report.fabric_text(b200) == (
        "ib: mlx5_0:1 ACTIVE 400 Gb/s; no nvidia-peermem; NVLink 5 NVSwitches (Fabric Manager, NVLSM)"
    )
    tray = dict(gpu_facts(), imex_required=True, nvlink_domain="9c6f5af3-53bf-49b5-a436-b66766c413c3.4026")
    assert report.fabric_text(tray) == "NVLink domain 9c6f5af3-53bf-49b5-a436-b66766c413c3.4026 (IMEX)"
    assert report.fabric_text(dict(tray, nvlink_domain=None)) == "multi-node NVLink, no domain registered (IMEX)"
