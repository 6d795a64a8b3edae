"""gpufleet.stack.gpu_processes under the NVML simulator (the HGX A100 profile runs pid 41230 on GPUs 0-3), with a
stand-in `scontrol listpids` printing what Slurm 22.05 prints (tests/unit/slurm/fixtures/listpids.txt)."""

import json
import os
import sys

import pytest

from . import test_simulator
from .test_simulator import SIM, run_replay

pytestmark = test_simulator.pytestmark  # the simulator tests' skips (no compiler: no simulator)

MODULE = "ansible_collections.gpufleet.stack.plugins.modules.gpu_processes"
HEADER = "PID      JOBID    STEPID   LOCALID GLOBALID"


def processes(tmp_path, scheduler, scontrol=None):
    env = {}
    if scontrol is not None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        (bin_dir / "scontrol").write_text(scontrol)
        (bin_dir / "scontrol").chmod(0o755)
        env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"scheduler": scheduler}}))
    argv = [sys.executable, "-m", MODULE, str(path)]
    return json.loads(run_replay(SIM / "profiles" / "a100-sxm4-40gb-x8-nvswitch.json", argv, tmp_path, env, (0, 1)))


def test_without_a_scheduler_every_gpu_process_is_a_stray(tmp_path):
    result = processes(tmp_path, "none")
    assert [(p["gpu"], p["pid"], p["job"]) for p in result["strays"]] == [(i, 41230, None) for i in range(4)]
    want = "GPU processes that no scheduler job owns: pid 41230 (python3, 30720 MiB) on GPU 0"
    assert result["message"].startswith(want)


def test_a_slurm_jobs_process_is_its_own(tmp_path):
    listpids = f"#!/bin/sh\nprintf '%s\\n' '{HEADER}' '41230    77       batch    0       0'\n"
    result = processes(tmp_path, "slurm", listpids)
    assert result["strays"] == [] and result["message"] == ""
    assert {p["job"] for p in result["processes"]} == {"77"}


def test_no_job_step_on_the_node_makes_every_process_a_stray(tmp_path):
    none = f"#!/bin/sh\necho '{HEADER}'\necho 'No job steps exist on this node.' >&2\nexit 1\n"
    result = processes(tmp_path, "slurm", none)
    assert len(result["strays"]) == 4
    assert "no Slurm job owns" in result["message"]


@pytest.mark.parametrize("err", ["slurm_load_ctl_conf error: Unable to contact slurm controller", ""])
def test_a_failing_scontrol_is_not_taken_for_strays(tmp_path, err):
    broken = f"#!/bin/sh\necho '{err}' >&2\nexit 1\n"
    result = processes(tmp_path, "slurm", broken)
    assert result["failed"] and result["msg"].startswith("gpu_processes: scontrol listpids failed (rc 1)")
