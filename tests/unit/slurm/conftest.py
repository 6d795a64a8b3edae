"""The stand-in scontrol and squeue (fake_slurm.py) on PATH for modules run through Ansible."""

import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).with_name("fake_slurm.py")


@pytest.fixture
def fake_slurm(tmp_path, ansible_env, monkeypatch):
    """scontrol and squeue wrappers in tmp_path/bin, first on ansible_env's PATH (run_module) and for exec_module's
    bin_dir; returns the state file they read and write."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("scontrol", "squeue"):
        (bin_dir / tool).write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} {tool} "$@"\n')
        (bin_dir / tool).chmod(0o755)
    state = tmp_path / "slurm.json"
    ansible_env["PATH"] = f"{bin_dir}:{ansible_env['PATH']}"
    ansible_env["FAKE_SLURM_STATE"] = str(state)
    monkeypatch.setenv("FAKE_SLURM_STATE", str(state))
    return state
