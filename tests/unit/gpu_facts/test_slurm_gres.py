"""gpufleet.stack.slurm_gres under the NVML simulator: eight A100s written once, a GPU missing from NVML refused."""

import json
import sys

from . import test_simulator
from .test_simulator import SIM, run_replay

pytestmark = test_simulator.pytestmark  # the simulator tests' skips (no compiler: no simulator)

MODULE = "ansible_collections.gpufleet.stack.plugins.modules.slurm_gres"


def gres_module(profile, tmp_path, args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"node": "gpu-1", "path": str(tmp_path / "gres.conf"), **args}}))
    argv = [sys.executable, "-m", MODULE, str(path)]
    return json.loads(run_replay(SIM / "profiles" / f"{profile}.json", argv, tmp_path, ok=(0, 1)))


def test_the_module_writes_eight_a100s_once(tmp_path):
    sysfs = tmp_path / "sysfs"
    result = gres_module("a100-sxm4-40gb-x8-nvswitch", tmp_path, {"sysfs_root": str(sysfs)})
    assert (result["changed"], result["gres"], result["gpus"]) == (True, "gpu:a100:8", 8)
    lines = (tmp_path / "gres.conf").read_text().splitlines()
    assert lines[-1] == "NodeName=gpu-1 Name=gpu Type=a100 File=/dev/nvidia7"  # no sysfs here: no Cores=
    assert gres_module("a100-sxm4-40gb-x8-nvswitch", tmp_path, {"sysfs_root": str(sysfs)})["changed"] is False


def test_the_module_refuses_a_gpu_missing_from_nvml(tmp_path):
    result = gres_module("a100-sxm4-40gb-x8-nvswitch-gpu-lost", tmp_path, {})
    assert result["failed"] and "NVML sees 7 GPUs (driver loaded), the PCI bus has 8" in result["msg"]
    assert not (tmp_path / "gres.conf").exists()
