"""DCGM in the mirror: its control fields held to NVIDIA's (recorded/dcgm.control), and the dcgmi / nv-hostengine
stand-ins answering as the real tools do: the connection error without a host engine, Deployment findings read
from the NVML simulator's profile, the JSON schema of DCGM 4 and 3, the exit statuses."""

import json
import os
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
