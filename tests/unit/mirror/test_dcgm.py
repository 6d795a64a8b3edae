"""DCGM in the mirror: its control fields held to NVIDIA's (recorded/dcgm.control), and the dcgmi / nv-hostengine
stand-ins answering as the real tools do: the connection error without a host engine, Deployment findings read
from the NVML simulator's profile, the JSON schema of DCGM 4 and 3, the exit statuses."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from .conftest import CUDA12, MIRROR, extract, index, parse_index

RELATIONS = ("Pre-Depends", "Depends", "Recommends", "Provides", "Conflicts", "Replaces", "Breaks")


def recorded():
    text = (MIRROR / "recorded" / "dcgm.control").read_text()
    return parse_index("\n".join(line for line in text.splitlines() if not line.startswith("#")).strip())


def test_control_fields_equal_nvidias(mirror):
    ours = {(s["Package"], s["Version"]): s for s in index(mirror, CUDA12)}
    differ = []
    for real in recorded():
        for version in ("1:4.4.1-1", "1:4.5.3-1") if real["Version"].startswith("1:4") else ("1:3.3.9",):
            mine = ours.get((real["Package"], version))
            assert mine is not None, f"{real['Package']} {version} is missing from the mirror"
            for field in RELATIONS:
                want = real.get(field, "").replace(real["Version"], version)
                if mine.get(field, "") != want:
                    differ.append((real["Package"], version, field, want, mine.get(field)))
    assert not differ, differ
    assert (mirror / "www" / CUDA12 / "datacenter-gpu-manager-4-core_4.4.1-1_amd64.deb").exists()


@pytest.fixture(scope="module")
def node(mirror, tmp_path_factory):
    """The core package unpacked, its tools pointed at a temporary /var/run and profile."""
    root = extract(mirror, CUDA12, "datacenter-gpu-manager-4-core", "4.4.1-1", tmp_path_factory.mktemp("dcgm"))
    unit = (root / "usr/lib/systemd/system/nvidia-dcgm.service").read_text()
    assert "ExecStart=/usr/bin/nv-hostengine -n --service-account nvidia-dcgm" in unit
    assert "Alias=dcgm.service" in unit
    return root


def dcgmi(node, tmp_path, *args, profile=None, devices=0, engine=True):
    source = (node / "usr/bin/dcgmi").read_text()
    run = tmp_path / "run"
    dev = tmp_path / "dev"
    run.mkdir(exist_ok=True)
    dev.mkdir(exist_ok=True)
    for i in range(devices):
        (dev / f"nvidia{i}").touch()
    (dev / "nvidiactl").touch()
    if engine:
        (run / "nvhostengine.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / "profile.json").write_text(json.dumps(profile or {"gpus": []}))
    source = source.replace('"/var/run/nvhostengine.pid"', repr(str(run / "nvhostengine.pid")))
    source = source.replace('"/etc/gpufleet/nvml-sim/profile.json"', repr(str(tmp_path / "profile.json")))
    source = source.replace('glob.glob("/dev/nvidia*")', f'glob.glob({str(dev)!r} + "/nvidia*")')
    source = source.replace(r're.fullmatch(r"/dev/nvidia\d+", p)', r're.fullmatch(r".*/nvidia\d+", p)')
    script = tmp_path / "dcgmi"
    script.write_text(source)
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, check=False)


def gpu(**over):
    base = {
        "pci": {"device_id": "0x233010DE"},
        "serial": "1652423000000",
        "persistence_mode": True,
        "remapped_rows": {"pending": False, "failure": False},
        "processes": [],
    }
    return dict(base, **over)


def test_no_host_engine_is_the_real_connection_error(node, tmp_path):
    out = dcgmi(node, tmp_path, "diag", "-r", "1", engine=False)
    assert out.returncode == 235
    assert out.stdout.splitlines() == [
        "Error: unable to establish a connection to the specified host: localhost",
        "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.",
    ]


def test_healthy_node_passes_level_1(node, tmp_path):
    out = dcgmi(
        node,
        tmp_path,
        "diag",
        "-r",
        "1",
        "-j",
        profile={"driver_version": "570.133.20", "gpus": [gpu(), gpu()]},
        devices=2,
    )
    assert out.returncode == 0, out.stdout
    diag = json.loads(out.stdout)
    [category] = diag["DCGM Diagnostic"]["test_categories"]
    assert category["category"] == "Deployment"
    assert category["tests"][0]["name"] == "software"
    assert [r["status"] for r in category["tests"][0]["results"]] == ["Pass", "Pass"]
    assert diag["entity_groups"][0]["entities"][0]["device_id"] == "2330"
    assert diag["metadata"]["Driver Version Detected"] == "570.133.20"


def test_row_remap_failure_fails_with_dcgms_message(node, tmp_path):
    profile = {"gpus": [gpu(), gpu(remapped_rows={"failure": True}), gpu(persistence_mode=False)]}
    out = dcgmi(node, tmp_path, "diag", "-r", "1", "-j", profile=profile, devices=3)
    assert out.returncode == 226
    results = json.loads(out.stdout)["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"]
    assert [r["status"] for r in results] == ["Pass", "Fail", "Warn"]
    assert results[1]["warnings"][0]["warning"] == "GPU 1 had uncorrectable memory errors and row remapping failed."
    assert results[1]["warnings"][0]["error_id"] == 80
    assert results[2]["warnings"][0]["warning"] == "Persistence mode for GPU 2 is disabled."


def test_missing_device_nodes_fail_as_the_real_check_does(node, tmp_path):
    out = dcgmi(node, tmp_path, "diag", "-r", "1", profile={"gpus": [gpu(), gpu()]}, devices=1)
    assert out.returncode == 226
    assert "Successfully ran diagnostic for group." in out.stdout
    assert "| software                  | Fail" in out.stdout


def test_level_2_lists_the_cuda_tests_as_skipped_by_the_stand_in(node, tmp_path):
    out = dcgmi(node, tmp_path, "diag", "-r", "2", "-j", profile={"gpus": [gpu()]}, devices=1)
    assert out.returncode == 0
    categories = json.loads(out.stdout)["DCGM Diagnostic"]["test_categories"]
    tests = {t["name"]: t["test_summary"]["status"] for c in categories for t in c["tests"]}
    assert tests == {"software": "Pass", "pcie": "Skip", "memory": "Skip"}
    assert "stand-in" in categories[1]["tests"][0]["results"][0]["info"][0]


def test_dcgm3_json_uses_its_own_schema(mirror, tmp_path):
    root = extract(mirror, CUDA12, "datacenter-gpu-manager", "3.3.9", tmp_path / "dcgm3")
    out = dcgmi(root, tmp_path, "diag", "-r", "1", "-j", profile={"gpus": [gpu()]}, devices=1)
    diag = json.loads(out.stdout)
    result = diag["DCGM GPU Diagnostic"]["test_categories"][0]["tests"][0]["results"][0]
    assert result["gpu_id"] == "0"
    assert diag["version"] == "3.3.9"


def test_exporter_serves_dcgm_fields_from_nvml(mirror, tmp_path):
    """dcgm-exporter as the mirror ships it: its counters file, the unit, and /metrics with one sample per GPU and
    field, the driver version as a label, the last Xid of each GPU from the kernel log."""
    import socket
    import time
    import urllib.request

    root = extract(mirror, CUDA12, "datacenter-gpu-manager-exporter", "4.6.0-1", tmp_path / "exporter")
    unit = (root / "usr/lib/systemd/system/nvidia-dcgm-exporter.service").read_text()
    assert "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv" in unit
    profile = {
        "driver_version": "570.133.20",
        "host": {"xid_lines": ["NVRM: Xid (PCI:0000:2a:00): 79, pid=0, GPU has fallen off the bus."]},
        "gpus": [
            gpu(
                uuid="GPU-a", name="NVIDIA H100 80GB HBM3", temperature={"gpu": 41}, pci={"bus_id": "00000000:18:00.0"}
            ),
            gpu(
                uuid="GPU-b",
                name="NVIDIA H100 80GB HBM3",
                temperature={"gpu": 93},
                pci={"bus_id": "00000000:2A:00.0"},
                remapped_rows={"failure": True, "uncorrectable": 2},
            ),
        ],
    }
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    source = (root / "usr/bin/dcgm-exporter").read_text()
    source = source.replace('"/etc/gpufleet/nvml-sim/profile.json"', repr(str(tmp_path / "profile.json")))
    script = tmp_path / "dcgm-exporter"
    script.write_text(source)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    counters = root / "etc/dcgm-exporter/default-counters.csv"
    proc = subprocess.Popen([sys.executable, script, "-f", counters, "-a", f"127.0.0.1:{port}"])
    try:
        for _attempt in range(50):
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("dcgm-exporter did not answer")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "# TYPE DCGM_FI_DEV_GPU_TEMP gauge" in text
    temps = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_TEMP{")]
    assert len(temps) == 2
    assert temps[1].startswith('DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",pci_bus_id="00000000:2A:00.0",device="nvidia')
    assert 'DCGM_FI_DRIVER_VERSION="570.133.20"' in temps[1] and temps[1].endswith(" 93")
    assert 'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="1"' in text
    xid = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_XID_ERRORS{")]
    assert xid[0].endswith(" 0") and xid[1].endswith(" 79")
    promtool = shutil.which("promtool")
    if promtool:  # it parses as Prometheus parses it; its lint findings are the real exporter's own (camelCase
        # labels UUID/modelName/Hostname, counters without _total), nothing else
        checked = subprocess.run(
            [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
        )
        findings = (checked.stdout + checked.stderr).splitlines()
        assert findings and all(
            "label names should be written in 'snake_case'" in f or 'counter metrics should have "_total"' in f
            for f in findings
        ), findings


def test_exporter_refuses_a_field_dcgm_does_not_have(mirror, tmp_path):
    root = extract(mirror, CUDA12, "datacenter-gpu-manager-exporter", "4.6.0-1", tmp_path / "exporter")
    bad = tmp_path / "counters.csv"
    bad.write_text("DCGM_FI_DEV_GPU_TEMPERATURE, gauge, typo\n")
    proc = subprocess.run(
        [sys.executable, root / "usr/bin/dcgm-exporter", "-f", bad, "-a", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert proc.returncode != 0
    assert "Could not find DCGM field" in proc.stderr
