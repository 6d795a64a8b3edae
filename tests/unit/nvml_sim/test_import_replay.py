"""import-smi-xml round trip (nvidia-smi XML -> profile -> pynvml), replay end to end, generated profiles."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pynvml as n
import pytest

from .conftest import PROBE, PROFILES, SIM

SAMPLES = sorted((SIM / "samples").glob("*.xml"))
MIB = 1 << 20


def replay(target, argv, tmp_path, env=None):
    # Own cache: the test proves replay builds the library itself, without touching the shared one.
    full_env = dict(os.environ, GPUFLEET_NVML_SIM_CACHE=str(tmp_path / "cache"), **(env or {}))
    return subprocess.run(
        [str(SIM / "replay"), str(target), "--", *argv],
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )


def num(el, path):
    """The number in an nvidia-smi value such as '81559 MiB' or '700.00 W', read independently of the importer."""
    return float(re.match(r"[\d.]+", el.findtext(path).strip()).group(0))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_smi_xml_round_trip(sample, tmp_path, libdir):
    proc = replay(sample, [sys.executable, str(PROBE)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    root = ET.parse(sample).getroot()
    assert out["init"] is None
    assert out["driver_version"] == root.findtext("driver_version")
    major, minor = root.findtext("cuda_version").split(".")
    assert out["cuda_driver_version"] == int(major) * 1000 + int(minor) * 10
    xml_gpus = root.findall("gpu")
    assert out["count"] == len(xml_gpus)
    for xml, got in zip(xml_gpus, out["gpus"], strict=True):
        assert got["name"] == xml.findtext("product_name")
        assert got["uuid"] == xml.findtext("uuid")
        assert got["serial"] == xml.findtext("serial")
        assert got["pci"]["busId"] == xml.findtext("pci/pci_bus_id")
        assert f"{got['pci']['pciDeviceId']:08X}" == xml.findtext("pci/pci_device_id")
        assert got["memory_v2"]["total"] == num(xml, "fb_memory_usage/total") * MIB
        assert got["memory_v2"]["used"] == num(xml, "fb_memory_usage/used") * MIB
        assert got["temperature"] == num(xml, "temperature/gpu_temp")
        assert got["thresholds"]["slowdown"] == num(xml, "temperature/gpu_temp_slow_threshold")
        assert got["thresholds"]["shutdown"] == num(xml, "temperature/gpu_temp_max_threshold")
        power = xml.find("gpu_power_readings")
        power = power if power is not None else xml.find("power_readings")  # pre-R535 layout
        limit = "current_power_limit" if power.find("current_power_limit") is not None else "power_limit"
        assert got["power_limit"] == num(power, limit) * 1000
        assert got["power_constraints"] == [num(power, "min_power_limit") * 1000, num(power, "max_power_limit") * 1000]
        assert got["max_clocks"]["graphics"] == num(xml, "max_clocks/graphics_clock")
        assert got["pcie"]["gen_max"] == num(xml, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")
        active = [
            el.tag.rsplit("_reason_", 1)[1] for el in xml.iter() if "_reason_" in el.tag and el.text.strip() == "Active"
        ]
        assert bool(got["event_reasons"] & n.nvmlClocksEventReasonGpuIdle) == ("gpu_idle" in active)
        assert got["ecc_mode"][0] == (xml.findtext("ecc_mode/current_ecc") == "Enabled")
        # Processes: every compute pid in the dump, with its memory, on the parent GPU.
        want = sorted(
            (int(p.findtext("pid")), num(p, "used_memory") * MIB) for p in xml.findall("processes/process_info")
        )
        assert sorted((p["pid"], p["usedGpuMemory"]) for p in got["processes"]) == want
        xml_migs = xml.findall("mig_devices/mig_device")
        got_migs = [m for m in got["mig_devices"] if "error" not in m]
        assert [m["gpu_instance_id"] for m in got_migs] == [int(m.findtext("gpu_instance_id")) for m in xml_migs]
        assert [m["memory_v2"]["total"] for m in got_migs] == [num(m, "fb_memory_usage/total") * MIB for m in xml_migs]
        if xml.findtext("retired_pages/multiple_single_bit_retirement/retired_count").strip() != "N/A":
            for cause, got_pages in (
                ("multiple_single_bit_retirement", got["retired_single_bit"]),
                ("double_bit_retirement", [p["address"] for p in got["retired_double_bit_v2"]]),
            ):
                pages = xml.findall(f"retired_pages/{cause}/retired_pagelist/retired_page_address")
                assert got_pages == [int(a.text, 16) for a in pages]
        else:
            assert got["retired_single_bit"] == {"error": n.NVML_ERROR_NOT_SUPPORTED}
        if xml.findtext("remapped_rows/remapped_row_corr") is None:
            assert got["remapped_rows"] == {"error": n.NVML_ERROR_NOT_SUPPORTED}


def test_h100_sample_details(tmp_path):
    out = subprocess.run(
        [str(SIM / "import-smi-xml"), str(SIM / "samples" / "h100-x2-r570-mig.xml"), "--flavor", "open"],
        capture_output=True,
        text=True,
        check=True,
    )
    profile = json.loads(out.stdout)
    busy, mig = profile["gpus"]
    assert profile["host"]["kernel_module_flavor"] == "open"
    assert busy["architecture"] == "HOPPER" and busy["cuda_compute_capability"] == [9, 0]
    # R535+ ECC counters: aggregate corrected = sram + dram correctable.
    assert mig["ecc"]["errors"]["aggregate"] == {"corrected": 4, "uncorrected": 0}
    assert [d["name"].rsplit(" ", 1)[1] for d in mig["mig"]["devices"]] == ["3g.40gb", "2g.20gb"]
    assert [p["pid"] for d in mig["mig"]["devices"] for p in d["processes"]] == [30240, 30241]
    assert "utilization" not in mig  # NVML has no whole-GPU utilization in MIG mode
    assert "retired_pages" not in busy  # N/A on Hopper: row remapping instead


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("other.xml", "<html/>", "expected nvidia_smi_log"),
        ("notes.txt", "Fri Apr 10 10:23:01 2026\nsomething else entirely\n", "neither nvidia-smi -q -x output nor"),
    ],
)
def test_importer_refuses_what_is_not_a_dump(tmp_path, name, content, reason):
    bad = tmp_path / name
    bad.write_text(content)
    proc = subprocess.run([str(SIM / "import-smi-xml"), str(bad)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert reason in proc.stderr


def test_replay_runs_a_command_against_a_named_profile(tmp_path):
    script = (
        "import pynvml as n; n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(7); "
        "print(n.nvmlDeviceGetCount(), n.nvmlDeviceGetName(h))"
    )
    proc = replay("h100-sxm5-80gb-x8", [sys.executable, "-c", script], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "8 NVIDIA H100 80GB HBM3"
    assert (tmp_path / "cache" / "lib" / "libnvidia-ml.so.1").exists()
    env = replay(PROFILES / "t4-x1.json", ["sh", "-c", 'echo "$GPUFLEET_NVML_SIM_PROFILE:$LD_LIBRARY_PATH"'], tmp_path)
    profile, libpath = env.stdout.strip().split(":", 1)
    assert profile == str(PROFILES / "t4-x1.json")
    assert libpath.split(":")[0] == str(tmp_path / "cache" / "lib")


def test_replay_exit_code_and_unknown_profile(tmp_path):
    assert replay("t4-x1", ["sh", "-c", "exit 7"], tmp_path).returncode == 7
    proc = replay("no-such-card", ["true"], tmp_path)
    assert proc.returncode == 2
    assert "known names:" in proc.stderr and "a100-mig" in proc.stderr
    usage = subprocess.run([str(SIM / "replay"), "t4-x1", "true"], capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "usage: replay PROFILE_OR_XML -- COMMAND" in usage.stderr


def test_committed_profiles_are_gen_profiles_output(tmp_path):
    subprocess.run([str(SIM / "gen-profiles"), str(tmp_path)], check=True, capture_output=True)
    generated = {p.name: p.read_text() for p in tmp_path.glob("*.json")}
    committed = {p.name: p.read_text() for p in PROFILES.glob("*.json")}
    assert generated == committed, "edit sandbox/nvml-sim/gen-profiles and rerun it"
