"""One real apt round trip against the offline mirror: a debian12 sandbox node trusts the mirror's key by
signed-by, installs a driver with Fabric Manager at the same version and a CUDA toolkit (plus cuDNN, NCCL and
the Container Toolkit from the second repository), and the collection's own fact modules see them; then a
driver upgrade changes what NVML (the simulator the driver package ships) reports.

Needs the local Docker engine (sandbox/fleet); takes about half a minute when the node image is cached."""

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
NODE, FLEET = "mirrortest-1", "mirrortest"
KEYRING = "/usr/share/keyrings/gpufleet-mirror.gpg"
# Debian's archive stays in the sources: NVIDIA's driver depends on Debian packages (dkms, and contrib's nvidia-support,
# nvidia-kernel-common, nvidia-installer-cleanup, glx-alternative-nvidia).
APT = "apt-get"
SOURCES = "src:nvidia-graphics-drivers src:nvidia-open-gpu-kernel-modules src:nvidia-persistenced src:fabricmanager"

pytestmark = pytest.mark.slow


def sh(*argv, check=True, timeout=600):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, timeout=timeout)
    assert not check or proc.returncode == 0, (
        f"{' '.join(map(str, argv))}: rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )
    return proc


def node(script):
    return sh("docker", "exec", NODE, "bash", "-ec", script).stdout


def module(name, ansible_env, inventory):
    """Run a gpufleet.stack module on the node; return its ansible_facts."""
    env = dict(ansible_env, ANSIBLE_DEPRECATION_WARNINGS="0")
    argv = [BIN / "ansible", NODE, "-i", inventory, "-m", f"gpufleet.stack.{name}", "-o"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{") :])[0]["ansible_facts"]


def pin(version):
    """What the package engine writes to install one exact driver: a pin by source package (like NVIDIA's
    nvidia-driver-pinning-*), Debian's own builds of those sources excluded."""
    node(
        f"printf 'Package: {SOURCES}\\nPin: release o=Debian\\nPin-Priority: -1\\n\\n"
        f"Package: {SOURCES}\\nPin: version %s\\nPin-Priority: 1001\\n' {version}-1"
        " > /etc/apt/preferences.d/nvidia-driver"
    )


@pytest.fixture
def served_mirror(tmp_path):
    if shutil.which("docker") is None or sh("docker", "info", check=False).returncode != 0:
        pytest.skip("no Docker engine: would install driver, Fabric Manager and CUDA from the mirror on a node")
    out = ROOT / ".cache" / "mirror-integration"
    fingerprint = sh(ROOT / "sandbox/mirror/build", "--out", out).stdout.strip().splitlines()[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sh(ROOT / "sandbox/mirror/serve", "start", "--dir", out, "--port", port)
    try:
        yield out, port, fingerprint
    finally:
        sh(ROOT / "sandbox/mirror/serve", "stop", "--dir", out)


@pytest.fixture
def mirror_node(served_mirror, tmp_path, request):
    image = request.param
    out, port, _fingerprint = served_mirror
    # A GPU host whose kernel module does not pin a version: the library the driver package installs decides.
    profile = json.loads((ROOT / "sandbox/nvml-sim/profiles/h100-sxm5-80gb-x8.json").read_text())
    profile["host"].pop("kernel_module_version", None)
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    fleet = [ROOT / "sandbox/fleet", "up", "--name", NODE, "--fleet", FLEET, "--inventory", "none"]
    try:
        sh(*fleet, "--image", image, "--profile", tmp_path / "profile.json")
        # --profile also preinstalls a simulator library (as a driver installed outside apt would be); ldconfig
        # would keep pointing libnvidia-ml.so.1 at it when its version is newer. Here the driver package alone
        # must provide NVML, so only the profile stays.
        node("rm -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.* && ldconfig")
        sh("docker", "cp", out / "www/keys/gpufleet-mirror.gpg", f"{NODE}:{KEYRING}")
        base = f"http://127.0.0.1:{port}"
        node(
            f"echo 'deb [signed-by={KEYRING}] {base}/compute/cuda/repos/{image}/x86_64/ /' >"
            " /etc/apt/sources.list.d/gpufleet-mirror.list\n"
            f"echo 'deb [signed-by={KEYRING}] {base}/libnvidia-container/stable/deb/amd64/ /' >>"
            " /etc/apt/sources.list.d/gpufleet-mirror.list\n"
            f"{APT} update"
        )
        inventory = tmp_path / "hosts.yml"
        inventory.write_text(
            f"all:\n  hosts:\n    {NODE}:\n      ansible_connection: community.docker.docker\n"
            "      ansible_python_interpreter: /usr/bin/python3\n"
        )
        yield inventory
    finally:
        sh(ROOT / "sandbox/fleet", "down", "--fleet", FLEET, "--inventory", "none", check=False)


@pytest.mark.parametrize("mirror_node", ["debian12"], indirect=True)
def test_open_570_and_cuda_12_8_install_and_upgrade(mirror_node, ansible_env, nvml_bindings):
    nvml_bindings(mirror_node)
    pin("570.133.20")
    node(
        f"DEBIAN_FRONTEND=noninteractive {APT} install -y --no-install-recommends nvidia-driver-cuda"
        " nvidia-kernel-open-dkms nvidia-fabricmanager-570 cuda-toolkit-12-8 libcudnn9-dev-cuda-12 libnccl-dev"
        " nvidia-container-toolkit"
    )
    assert "Cuda compilation tools, release 12.8, V12.8.93" in node("/usr/local/cuda-12.8/bin/nvcc --version")
    assert json.loads(node("cat /usr/local/cuda/version.json"))["cuda"]["version"] == "12.8.1"
    assert node("nvidia-ctk --version").startswith("NVIDIA Container Toolkit CLI version 1.19.1")

    gpu = module("gpu_facts", ansible_env, mirror_node)["gpufleet_gpu"]
    assert (gpu["driver_version"], gpu["cuda_driver_version"], gpu["gpu_count"]) == ("570.133.20", "12.8", 8)
    installed = module("stack_facts", ansible_env, mirror_node)["gpufleet_installed"]
    assert installed["driver"]["package_version"] == "570.133.20"
    assert installed["driver"]["max_cuda"] == "12.8"
    assert installed["fabricmanager"]["version"] == "570.133.20"
    assert installed["cuda"]["default"] == "/usr/local/cuda-12.8"
    assert [t["version"] for t in installed["cuda"]["toolkits"]] == ["12.8.1"]
    assert installed["cudnn"]["version"].startswith("9.8.0") and installed["cudnn"]["consistent"]
    assert installed["nccl"]["version"] == "2.26.2"
    assert installed["container_toolkit"]["version"] == "1.19.1"

    pin("570.172.08")
    node(
        f"DEBIAN_FRONTEND=noninteractive {APT} install -y nvidia-driver-cuda nvidia-kernel-open-dkms"
        " nvidia-fabricmanager-570"
    )
    versions = dict(line.split() for line in node("dpkg-query -W libnvidia-ml1 nvidia-fabricmanager-570").splitlines())
    assert versions == {"libnvidia-ml1": "570.172.08-1", "nvidia-fabricmanager-570": "570.172.08-1"}
    gpu = module("gpu_facts", ansible_env, mirror_node)["gpufleet_gpu"]
    assert gpu["driver_version"] == "570.172.08"
    assert "libnvidia-ml.so.570.133.20" not in node("ls /usr/lib/x86_64-linux-gnu/").split()  # the old one is gone


@pytest.mark.parametrize("mirror_node", ["debian13"], indirect=True)
def test_proprietary_550_and_cuda_12_4_on_debian13(mirror_node, ansible_env, nvml_bindings):
    """The other flavour, branch, toolkit, cuDNN and NCCL, on Debian 13 (whose apt verifies with sqv)."""
    nvml_bindings(mirror_node)
    pin("550.127.08")
    node(
        f"DEBIAN_FRONTEND=noninteractive {APT} install -y --no-install-recommends nvidia-driver-cuda nvidia-kernel-dkms"
        " nvidia-fabricmanager-550 cuda-toolkit-12-4 libcudnn8-dev"
        " libnccl2=2.21.5-1+cuda12.4 libnccl-dev=2.21.5-1+cuda12.4"  # both: -dev needs its exact runtime
    )
    listed = node("dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n' 'nvidia-kernel*dkms' 'nvidia-fab*'")
    versions = dict(line.split()[1:] for line in listed.splitlines() if line.startswith("ii"))
    assert versions == {"nvidia-kernel-dkms": "550.127.08-1", "nvidia-fabricmanager-550": "550.127.08-1"}
    assert "Cuda compilation tools, release 12.4, V12.4.131" in node("/usr/local/cuda/bin/nvcc --version")
    gpu = module("gpu_facts", ansible_env, mirror_node)["gpufleet_gpu"]
    assert (gpu["driver_version"], gpu["cuda_driver_version"]) == ("550.127.08", "12.4")
    installed = module("stack_facts", ansible_env, mirror_node)["gpufleet_installed"]
    assert [t["version"] for t in installed["cuda"]["toolkits"]] == ["12.4.1"]
    assert installed["cudnn"]["version"].startswith("8.9.7")
    assert (installed["nccl"]["version"], installed["nccl"]["findings"][-1]["cuda"]) == ("2.21.5", "12.4")

    pin("550.163.01")
    node(
        f"DEBIAN_FRONTEND=noninteractive {APT} install -y nvidia-driver-cuda nvidia-kernel-dkms"
        " nvidia-fabricmanager-550"
    )
    assert module("gpu_facts", ansible_env, mirror_node)["gpufleet_gpu"]["driver_version"] == "550.163.01"
    assert "550.163.01" in node("nv-fabricmanager --version")

    # A second toolkit side by side: both stay, the newer takes /usr/local/cuda through update-alternatives.
    node(f"DEBIAN_FRONTEND=noninteractive {APT} install -y --no-install-recommends cuda-toolkit-12-8")
    cuda = module("stack_facts", ansible_env, mirror_node)["gpufleet_installed"]["cuda"]
    assert sorted(t["version"] for t in cuda["toolkits"]) == ["12.4.1", "12.8.1"]
    assert cuda["default"] == "/usr/local/cuda-12.8"
    assert "release 12.4," in node("/usr/local/cuda-12.4/bin/nvcc --version")
