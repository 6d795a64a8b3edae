"""nvidia-ctk as the mirror's nvidia-container-toolkit-base ships it: the real tool's flags, merges and output."""

import importlib.util
import json
import os
import stat
import subprocess
import sys
import tomllib

import pytest

from .conftest import CONTAINER, ROOT, extract


@pytest.fixture(scope="module")
def ctk(mirror, tmp_path_factory):
    root = extract(mirror, CONTAINER, "nvidia-container-toolkit-base", "1.17.8-1", tmp_path_factory.mktemp("ctk"))
    return root / "usr/bin/nvidia-ctk"


def run(ctk, *args, env=None):
    return subprocess.run([sys.executable, ctk, *args], capture_output=True, text=True, check=False, env=env)


def test_version(ctk):
    assert ctk.read_text().startswith("#!/usr/bin/python3\n")
    out = run(ctk, "--version")
    assert out.stdout.splitlines()[0] == "NVIDIA Container Toolkit CLI version 1.17.8"


def test_docker_merge_keeps_other_keys(ctk, tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text(json.dumps({"log-driver": "journald", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}))
    out = run(ctk, "runtime", "configure", "--runtime=docker", "--config", str(daemon))
    assert out.returncode == 0 and f"Wrote updated config to {daemon}" in out.stderr
    config = json.loads(daemon.read_text())
    assert config["log-driver"] == "journald" and config["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert config["runtimes"]["nvidia"] == {"args": [], "path": "nvidia-container-runtime"}
    assert "default-runtime" not in config
    run(ctk, "runtime", "configure", "--runtime", "docker", "--config", str(daemon), "--set-as-default")
    assert json.loads(daemon.read_text())["default-runtime"] == "nvidia"


def test_containerd_merge_keeps_other_keys(ctk, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.9"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs"\n'
    )
    out = run(ctk, "runtime", "configure", "--runtime=containerd", "--config", str(config), "--set-as-default")
    assert out.returncode == 0, out.stderr
    cri = tomllib.loads(config.read_text())["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.9"
    assert cri["containerd"]["snapshotter"] == "overlayfs"
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    nvidia = cri["containerd"]["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["options"] == {"BinaryName": "/usr/bin/nvidia-container-runtime"}


def test_bad_config_is_refused_unchanged(ctk, tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text("{not json")
    out = run(ctk, "runtime", "configure", "--runtime=docker", "--config", str(daemon))
    assert out.returncode == 1 and "unable to load config" in out.stderr
    assert daemon.read_text() == "{not json"


def test_cdi_generate(ctk, mirror, tmp_path):
    lib = extract(mirror, "compute/cuda/repos/debian12/x86_64", "libnvidia-ml1", "570.133.20-1", tmp_path / "root")
    profile = json.loads((ROOT / "sandbox/nvml-sim/profiles/h100-sxm5-80gb-x8.json").read_text())
    profile["host"].pop("kernel_module_version", None)
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    env = dict(
        os.environ,
        LD_LIBRARY_PATH=str(lib / "usr/lib/x86_64-linux-gnu"),
        GPUFLEET_NVML_SIM_PROFILE=str(tmp_path / "profile.json"),
    )
    spec = tmp_path / "cdi" / "nvidia.yaml"
    out = run(ctk, "cdi", "generate", "--output", str(spec), "--driver-root", str(lib), env=env)
    assert out.returncode == 0, out.stderr
    text = spec.read_text()
    assert "kind: nvidia.com/gpu" in text and "  name: all" in text
    assert f'name: "{profile["gpus"][7]["uuid"]}"' in text and "path: /dev/nvidia7" in text
    # The driver version the spec was made for is in the hook and in every versioned library it mounts.
    assert "--host-driver-version=570.133.20" in text
    assert f"  - containerPath: {lib}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.133.20" in text
    listed = run(ctk, "cdi", "list", "--spec-dir", str(spec.parent))
    assert listed.stderr == "INFO[0000] Found 17 CDI devices\n"
    names = listed.stdout.splitlines()
    assert names[:8] == [f"nvidia.com/gpu={i}" for i in range(8)]
    assert names[8:16] == sorted(f"nvidia.com/gpu={g['uuid']}" for g in profile["gpus"])
    assert names[-1] == "nvidia.com/gpu=all" and len(names) == 17
    # Without a driver (no profile: the simulator's "not loaded") the real tool fails the same way.
    env["GPUFLEET_NVML_SIM_PROFILE"] = str(tmp_path / "absent.json")
    failed = run(ctk, "cdi", "generate", "--output", str(tmp_path / "x.yaml"), env=env)
    assert failed.returncode == 1 and "failed to initialize NVML" in failed.stderr


def test_dev_char_symlinks(ctk, tmp_path):
    """The links runc needs (nvidia-container-toolkit#48): /dev/char/195:N -> ../nvidiaN, idempotent."""
    dev = tmp_path / "dev"
    dev.mkdir()
    try:
        os.mknod(dev / "nvidia0", 0o666 | stat.S_IFCHR, os.makedev(195, 0))
        os.mknod(dev / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    except PermissionError:
        pytest.skip("mknod not permitted here: would check /dev/char/195:0 -> ../nvidia0 and 195:255 -> ../nvidiactl")
    (dev / "nvidia-not-a-device").write_text("")
    chars = tmp_path / "char"
    argv = ["system", "create-dev-char-symlinks", "--create-all", "--driver-root", str(tmp_path),
            "--dev-char-path", str(chars)]  # fmt: skip
    out = run(ctk, *argv)
    assert out.returncode == 0, out.stderr
    assert {p.name: os.readlink(p) for p in chars.iterdir()} == {
        "195:0": "../dev/nvidia0",
        "195:255": "../dev/nvidiactl",
    }
    assert "Creating link" not in run(ctk, *argv).stderr  # nothing to do the second time


def test_cdi_list_prints_what_the_real_tool_prints(ctk, mirror, tmp_path):
    """The real nvidia-ctk 1.17.6's `cdi list` for 4 GPUs, recorded (sandbox/mirror/README.md says where): the same
    spec's devices listed by the stand-in give the same lines (the real INFO line pads the message; compared
    without the padding)."""
    recorded = (ROOT / "sandbox/mirror/recorded/nvidia-ctk-1.17.6-cdi-list-4gpu.txt").read_text().splitlines()
    spec = tmp_path / "cdi" / "nvidia.yaml"
    spec.parent.mkdir()
    # The stand-in's own spec writer (its source in the checkout), for the recording's four GPUs and UUIDs.
    source = importlib.util.spec_from_file_location("nvidia_ctk", ROOT / "sandbox/mirror/nvidia_ctk.py")
    stand_in = importlib.util.module_from_spec(source)
    source.loader.exec_module(stand_in)
    spec.write_text(stand_in.cdi_spec("575.57.08", [f"GPU-{i}-FAKE-UUID" for i in range(4)]))
    listed = run(ctk, "cdi", "list", "--spec-dir", str(spec.parent))
    assert [listed.stderr.strip(), *listed.stdout.splitlines()] == [line.rstrip() for line in recorded]
