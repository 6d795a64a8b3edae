"""Against Debian's real non-free libnvidia-ml1 on a host without the nvidia driver.

The real library, as root, creates /dev/nvidiactl during nvmlInit. gpu_facts must only dlopen it
(which this test proves harmless) and report "installed but not loaded" without initialising it.
The .deb is cached under .cache/debs; it is fetched from Debian's archive with a private apt list when absent.

Each run happens, where root and unshare(1) allow it, in a private mount namespace whose /dev is an empty
tmpfs: a regression then creates nvidiactl there, not on this machine, and the test still sees it.
Elsewhere it runs against the real /dev, which must not hold NVIDIA nodes beforehand.
"""

import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, debian_package

NODES = ("/dev/nvidiactl", "/dev/nvidia0")
MODULE = "ansible_collections.gpufleet.stack.plugins.modules.gpu_facts"

PRIVATE_DEV = """
set -e
mount --rbind /dev {save}
mount -t tmpfs gpufleet-test-dev /dev
for n in null zero random urandom; do touch /dev/$n; mount --bind {save}/$n /dev/$n; done
{command} >{out} 2>&1 || echo "exit $?" >>{out}
ls /dev
"""


@pytest.fixture(scope="module")
def real_lib(tmp_path_factory):
    if os.path.isdir("/sys/module/nvidia"):
        pytest.skip("the nvidia kernel module is loaded here; this test checks a host without a driver")
    dest = tmp_path_factory.mktemp("libnvidia-ml1")
    deb, error = debian_package("libnvidia-ml1", dest)
    if deb is None:
        pytest.skip(f"cannot download Debian's libnvidia-ml1 .deb ({error}); would check no /dev/nvidiactl appears")
    libdir = next(Path(p).parent for p in glob.glob(str(dest / "usr/lib/*/nvidia/current/libnvidia-ml.so.1")))
    version = deb.name.split("_")[1].split("-")[0]
    return libdir, version


def _private_dev_works(tmp_path):
    if not shutil.which("unshare") or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    return probe.returncode == 0


def run_with_real_lib(tmp_path, libdir, argv):
    """Run argv with the real library first on LD_LIBRARY_PATH: (NVIDIA nodes created, output)."""
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir), PYTHONPATH=str(ROOT / "collections"))
    out = tmp_path / "out.txt"
    if _private_dev_works(tmp_path):
        save = tmp_path / "dev-save"
        save.mkdir()
        script = PRIVATE_DEV.format(save=save, out=out, command=shlex.join(argv))
        proc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return [f"/dev/{name}" for name in proc.stdout.split() if name.startswith("nvidia")], out.read_text()
    present = [node for node in NODES if os.path.exists(node)]
    if present:
        pytest.skip(f"{present} already exist and no private /dev is possible, so a new node could not be seen")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
    return [node for node in NODES if os.path.exists(node)], proc.stdout + proc.stderr


def test_control_real_nvmlinit_creates_nvidiactl(real_lib, tmp_path):
    """Why the guard exists: nvmlInit of the real library, as root, makes /dev/nvidiactl."""
    if not _private_dev_works(tmp_path):
        pytest.skip("needs a private /dev (root, unshare); would show that nvmlInit creates /dev/nvidiactl")
    code = "import pynvml\ntry:\n    pynvml.nvmlInit()\nexcept pynvml.NVMLError as exc:\n    print(exc)"
    created, out = run_with_real_lib(tmp_path, real_lib[0], [sys.executable, "-c", code])
    assert created == ["/dev/nvidiactl"], out
    assert "Driver Not Loaded" in out


def test_dlopen_of_real_library_creates_no_device_node(real_lib, tmp_path):
    code = (
        "import ctypes; lib = ctypes.CDLL('libnvidia-ml.so.1');"
        "print(hasattr(lib, 'nvmlInit_v2'), hasattr(lib, 'gpufleet_nvml_sim_profile_path'))"
    )
    created, out = run_with_real_lib(tmp_path, real_lib[0], [sys.executable, "-c", code])
    assert out.split() == ["True", "False"]  # the real library, not the simulator
    assert created == []


def test_gpu_facts_reports_installed_not_loaded(real_lib, tmp_path):
    libdir, version = real_lib
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"kernel_log": False}}))
    created, out = run_with_real_lib(tmp_path, libdir, [sys.executable, "-m", MODULE, str(args)])
    assert created == []
    facts = json.loads(out)["ansible_facts"]["gpufleet_gpu"]
    assert facts["driver_state"] == "not_loaded"
    assert facts["library_version"] == version
    assert "nvmlInit was not called" in facts["driver_state_reason"]
    assert (facts["simulated"], facts["source"], facts["gpus"]) == (False, "sysfs", [])
