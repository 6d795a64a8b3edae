"""playbooks/facts.yml run on this machine under the NVML simulator (sandbox/nvml-sim/replay PROFILE): the hosts of
the inventory that connect locally see the simulated GPUs. This machine's toolchain has nvidia-ml-py, and /usr/local
is not a test's to write, so the pynvml role installs nothing."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def facts_playbook(inventory, report_dir, env, profile, check=True):
    """The finished ansible-playbook process (output captured as text)."""
    argv = [
        ROOT / "sandbox/nvml-sim/replay",
        profile,
        "--",
        BIN / "ansible-playbook",
        "-i",
        inventory,
        ROOT / "playbooks/facts.yml",
        "-e",
        f"gpufleet_report_dir={report_dir}",
        "-e",
        "pynvml_install=false",
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=check, timeout=300)
