"""The sandbox's developer tools (sandbox/fleet, sandbox/bootcheck: scripts without a .py name), loaded as modules so
that their pure parts can be tested without Docker or qemu."""

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_sandbox_tool(name):
    loader = importlib.machinery.SourceFileLoader(name, str(ROOT / "sandbox" / name))
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fleet():
    return load_sandbox_tool("fleet")


@pytest.fixture(scope="module")
def bootcheck():
    return load_sandbox_tool("bootcheck")


@pytest.fixture
def fake_scontrol():
    """write(bin_dir, recorded): bin_dir/scontrol printing tests/unit/slurm/fixtures/<recorded> (`scontrol show
    config` recorded from Debian 12's Slurm 22.05.8) for `show config`; no scontrol when recorded is None."""
    fixtures = ROOT / "tests" / "unit" / "slurm" / "fixtures"

    def write(bin_dir, recorded):
        bin_dir.mkdir(exist_ok=True)
        scontrol = bin_dir / "scontrol"
        scontrol.unlink(missing_ok=True)
        if recorded:
            scontrol.write_text(f"#!/bin/sh\n[ \"$*\" = 'show config' ] && exec cat {fixtures / recorded}\nexit 2\n")
            scontrol.chmod(0o755)

    return write


@pytest.fixture
def recorded_sysfs(tmp_path):
    """root(name): tests/unit/fabric/fixtures/<name> (a recorded or derived /sys listing, see its header)
    materialised under a fresh directory; root is the sysfs_root the readers and gpu_facts take."""
    path = ROOT / "tests" / "unit" / "fabric" / "sysfs_tree.py"
    loader = importlib.machinery.SourceFileLoader("sysfs_tree", str(path))
    spec = importlib.util.spec_from_loader("sysfs_tree", loader)
    tree = importlib.util.module_from_spec(spec)
    loader.exec_module(tree)

    def root(name):
        return tree.build(path.parent / "fixtures" / name, tmp_path / "sysfs" / name)

    return root
