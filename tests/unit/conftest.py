"""The sandbox's developer tools (sandbox/fleet, sandbox/bootcheck: scripts without a .py name), loaded as modules so
that their pure parts can be tested without Docker or qemu."""

import fcntl
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def mirror():
    """The signed test mirror, built by sandbox/mirror/build into .cache/mirror-unit (rebuilt only when an input
    changed). One build at a time: xdist workers, and a second checkout's run, wait for each other rather than rewrite
    the tree under a test reading it."""
    missing = [tool for tool in ("dpkg-deb", "gpg", "gpgv", "cc") if not shutil.which(tool)]
    assert not missing, f"{', '.join(missing)} missing: make setup's machine has them (Debian's dpkg, gnupg, gcc)"
    out = ROOT / ".cache" / "mirror-unit"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(ROOT / ".cache" / "mirror-unit.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            [ROOT / "sandbox" / "mirror" / "build", "--out", out],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


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


@pytest.fixture
def exec_module():
    """run(name, args, cwd, bin_dir=None) -> the result JSON of gpufleet.stack.<name> executed as Ansible executes a
    module on a host (its arguments in a file, the collection on PYTHONPATH), in cwd; bin_dir, when given, comes
    first on PATH (stand-in commands such as modprobe or scontrol) and the system's /usr/bin and /bin follow. Faster
    than tests/conftest.py's run_module (the `ansible` CLI), and the only one of the two that sets PATH."""

    def run(name, args, cwd, bin_dir=None):
        path = Path(cwd) / "args.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = dict(os.environ, PYTHONPATH=str(ROOT / "collections"))
        if bin_dir is not None:
            env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
        proc = subprocess.run(
            [sys.executable, "-m", f"ansible_collections.gpufleet.stack.plugins.modules.{name}", str(path)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return json.loads(proc.stdout)

    return run


@pytest.fixture
def fake_modprobe():
    """install(root, rc, message) -> calls(): root/bin/modprobe, a stand-in that records its arguments in
    root/modprobe.calls and exits rc (printing message to stderr when rc is not 0); calls() lists them."""

    def install(root, rc=0, message=""):
        bin_dir = root / "bin"
        bin_dir.mkdir(exist_ok=True)
        log = root / "modprobe.calls"
        (bin_dir / "modprobe").write_text(
            f'#!/bin/sh\necho "$@" >> {log}\n[ {rc} = 0 ] || echo "{message}" >&2\nexit {rc}\n'
        )
        (bin_dir / "modprobe").chmod(0o755)
        return lambda: log.read_text().splitlines() if log.exists() else []

    return install
