"""install-node.sh lays the simulator out as a driver package would; checked in a scratch root, not a container."""

import json
import os
import subprocess
import sys

import pynvml as n

from .conftest import SIM, run_probe

LIBDIR = "usr/lib/x86_64-linux-gnu"


def install(root, *args):
    return subprocess.run(
        [str(SIM / "install-node.sh"), "--root", str(root), *args], capture_output=True, text=True, check=False
    )


def test_installs_versioned_library_profile_and_marker(tmp_path, libdir):
    proc = install(tmp_path, "t4-x1")
    assert proc.returncode == 0, proc.stderr
    lib = tmp_path / LIBDIR / "libnvidia-ml.so.1"
    assert os.readlink(lib) == "libnvidia-ml.so.535.230.02"  # gpu_facts reads the version from this name
    marker = (tmp_path / "etc/gpufleet/nvml-sim/gpufleet-nvml-sim").read_text().splitlines()
    assert marker[:2] == ["profile=t4-x1.json", "driver_version=535.230.02"]
    out = run_probe(tmp_path / LIBDIR, tmp_path / "etc/gpufleet/nvml-sim/profile.json")
    assert (out["driver_version"], out["gpus"][0]["name"]) == ("535.230.02", "Tesla T4")


def test_upgrade_replaces_the_library_and_needs_the_module_to_follow(tmp_path, libdir):
    assert install(tmp_path, "t4-x1").returncode == 0
    proc = install(tmp_path, "t4-x1", "--driver-version", "570.133.20")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / LIBDIR).iterdir()) == ["libnvidia-ml.so.1", "libnvidia-ml.so.570.133.20"]
    # The profile's kernel module is still 535: like an upgrade without reboot.
    out = run_probe(tmp_path / LIBDIR, tmp_path / "etc/gpufleet/nvml-sim/profile.json")
    assert out["init"] == {"error": n.NVML_ERROR_LIB_RM_VERSION_MISMATCH}


def test_default_profile_path_without_env(libdir):
    env = {k: v for k, v in os.environ.items() if k != "GPUFLEET_NVML_SIM_PROFILE"}
    code = (
        "import ctypes; lib = ctypes.CDLL('libnvidia-ml.so.1'); "
        "lib.gpufleet_nvml_sim_profile_path.restype = ctypes.c_char_p; "
        "print(lib.gpufleet_nvml_sim_profile_path().decode())"
    )
    env["LD_LIBRARY_PATH"] = str(libdir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "/etc/gpufleet/nvml-sim/profile.json"


def test_refuses_without_a_destination():
    proc = subprocess.run([str(SIM / "install-node.sh"), "t4-x1"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "exactly one of --root DIR or --container NAME" in proc.stderr


def test_no_driver_installs_the_profile_only(tmp_path):
    """GPUs without a driver: the mirror's driver package brings NVML, and the kernel module follows it."""
    proc = install(tmp_path, "a100-sxm4-40gb-x8-nvswitch", "--no-driver")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / LIBDIR).exists()
    profile = json.loads((tmp_path / "etc/gpufleet/nvml-sim/profile.json").read_text())
    assert "kernel_module_version" not in profile["host"] and profile["host"]["driver_loaded"] is True
    assert not any(gpu.get("processes") for gpu in profile["gpus"])  # the shipped profile has some; none run yet


def test_the_root_it_unpacks_over_keeps_its_mode(tmp_path):
    """The stage is copied over / of the node: its own mode must not turn / into 0700 (munge, slurm need o+x)."""
    root = tmp_path / "root"
    root.mkdir(mode=0o755)
    assert install(root, "t4-x1").returncode == 0
    assert oct(root.stat().st_mode & 0o777) == "0o755"
