"""gpufleet.stack.slurm_gres under the NVML simulator: eight A100s written once, a GPU missing from NVML refused."""

import json
import sys

from . import test_simulator
from .test_simulator import SIM, run_replay

pytestmark = test_simulator.pytestmark  # the simulator tests' skips (no compiler: no simulator)

MODULE = "ansible_collections.gpufleet.stack.plugins.modules.slurm_gres"


def gres_module(profile, tmp_path, args, show_config=None, fake_scontrol=None):
    """The module under the simulator; `show_config` names a recorded `scontrol show config` that a stand-in scontrol
    on PATH prints (none: no scontrol, as on a node set up before its Slurm)."""
    path = tmp_path / "args.json"
    args = {"node": "gpu-1", "path": str(tmp_path / "gres.conf"), "cgroup_conf": str(tmp_path / "cgroup.conf"), **args}
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    argv = [sys.executable, "-m", MODULE, str(path)]
    bin_dir = tmp_path / "bin"
    if fake_scontrol:
        fake_scontrol(bin_dir, show_config)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return json.loads(run_replay(SIM / "profiles" / f"{profile}.json", argv, tmp_path, env=env, ok=(0, 1)))


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


def test_jobs_are_confined_to_their_gpus_where_slurm_uses_task_cgroup(fake_scontrol, tmp_path):
    (tmp_path / "cgroup.conf").write_text("# the site's\nConstrainCores=yes\nConstrainDevices=no\n")
    result = gres_module("a100-sxm4-40gb-x8-nvswitch", tmp_path, {}, "show-config-cgroup-memlock.txt", fake_scontrol)
    assert (result["changed"], result["cgroup"]) == (True, "ConstrainDevices=yes")
    assert (tmp_path / "cgroup.conf").read_text() == "# the site's\nConstrainCores=yes\nConstrainDevices=yes\n"
    again = gres_module("a100-sxm4-40gb-x8-nvswitch", tmp_path, {}, "show-config-cgroup-memlock.txt", fake_scontrol)
    assert (again["changed"], again["cgroup"]) == (False, "unchanged")


def test_a_cluster_without_task_cgroup_is_refused_before_any_file_is_written(fake_scontrol, tmp_path):
    result = gres_module("a100-sxm4-40gb-x8-nvswitch", tmp_path, {}, "show-config-default.txt", fake_scontrol)
    assert result["failed"]
    assert (
        "TaskPlugin = task/none: without task/cgroup, ConstrainDevices=yes in cgroup.conf confines nothing"
        in result["msg"]
    )
    assert "slurm_gres_constrain_devices: false" in result["msg"]
    assert not (tmp_path / "gres.conf").exists() and not (tmp_path / "cgroup.conf").exists()


def test_constrain_devices_false_leaves_cgroup_conf_alone(fake_scontrol, tmp_path):
    result = gres_module(
        "a100-sxm4-40gb-x8-nvswitch", tmp_path, {"constrain_devices": False}, "show-config-default.txt"
    )
    assert (result["changed"], result["cgroup"]) == (True, "not managed")
    assert not (tmp_path / "cgroup.conf").exists()
