"""Build the NVML simulator once per session and query it through pynvml in subprocesses."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SIM = ROOT / "sandbox" / "nvml-sim"
PROFILES = SIM / "profiles"
PROBE = Path(__file__).with_name("_probe.py")


def build(outdir, *options, cflags=None):
    """Run build.sh; skip (with what would have been checked) when no compiler or nvml.h can be had."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: would build libnvidia-ml.so.1 and query it through pynvml")
    proc = subprocess.run(
        [str(SIM / "build.sh"), str(outdir), *options],
        env=dict(os.environ, CFLAGS=cflags or ""),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if proc.returncode and "nvml.h" in proc.stderr + proc.stdout and "pip" in proc.stderr + proc.stdout:
        pytest.skip(
            f"nvml.h not cached and PyPI unreachable: would query the simulator via pynvml ({proc.stderr[-200:]})"
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return Path(outdir)


@pytest.fixture(scope="session")
def libdir(tmp_path_factory):
    return build(tmp_path_factory.mktemp("nvml-sim-lib"))


def run_probe(libdir, profile, env=None):
    """What pynvml answers in a fresh interpreter with the simulator loaded for profile (a path)."""
    full_env = dict(os.environ, LD_LIBRARY_PATH=str(libdir), GPUFLEET_NVML_SIM_PROFILE=str(profile))
    for key in ("GPUFLEET_NVML_SIM_DRIVER_VERSION", "GPUFLEET_NVML_SIM_CUDA_DRIVER_VERSION"):
        full_env.pop(key, None)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, str(PROBE)], env=full_env, capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def probe(libdir):
    def _probe(profile, env=None):
        path = profile if isinstance(profile, Path) else PROFILES / f"{profile}.json"
        return run_probe(libdir, path, env)

    return _probe


@pytest.fixture
def derived(tmp_path):
    """A copy of a shipped profile changed by a function, written under tmp_path."""

    def _derived(base, change):
        data = json.loads((PROFILES / f"{base}.json").read_text())
        change(data)
        path = tmp_path / f"{base}-derived.json"
        path.write_text(json.dumps(data))
        return path

    return _derived
