"""Real NVIDIA files for stack_facts tests: NCCL and cuDNN from NVIDIA's PyPI wheels, torch's CPU wheel metadata;
and the shipped compatibility matrix, built, for the rule tests (`matrix`).

The wheels are downloaded once with pip into .cache/wheels (gitignored) and unpacked into .cache/unpacked;
without them (no network, no cache) the tests that need them are skipped, saying what they would check.
"""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

ROOT = Path(__file__).resolve().parents[3]
WHEELS = ROOT / ".cache" / "wheels"
UNPACKED = ROOT / ".cache" / "unpacked"
# Small enough for CI (166 MB and 508 MB) and real releases: NCCL 2.19.3 uses the >= 2.9 version encoding
# (21903), cuDNN 9.6.0 the cuDNN 9 encoding (90600).
NCCL = ("nvidia-nccl-cu12", "2.19.3", "nvidia_nccl_cu12-2.19.3-py3-none-manylinux1_x86_64.whl")
CUDNN = ("nvidia-cudnn-cu12", "9.6.0.74", "nvidia_cudnn_cu12-9.6.0.74-py3-none-manylinux_2_27_x86_64.whl")
MATRIX = ROOT / "data" / "compat_matrix.yml"
TORCH_CPU = WHEELS / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"  # make setup (Makefile: wheels)


def _wheel(dist, version, filename):
    path = WHEELS / filename
    if not path.exists():
        WHEELS.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(WHEELS),
                "--index-url",
                "https://pypi.org/simple",
                f"{dist}=={version}",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or not path.exists():
            pytest.skip(
                f"{dist} {version} wheel not cached and not downloadable ({proc.stderr.strip()[-200:]}): "
                "would check stack_facts reads its real headers, library names and version call"
            )
    return path


def _unpack(wheel, members):
    """Unpack only the files the tests need (the cuDNN wheel holds 1.5 GB of kernels) into the cache."""
    dest = UNPACKED / wheel.name
    for name in members:
        if not (dest / name).exists():
            with zipfile.ZipFile(wheel) as z:
                z.extract(name, dest)
    return dest


@pytest.fixture(scope="session")
def nccl_wheel():
    wheel = _wheel(*NCCL)
    return _unpack(
        wheel,
        ["nvidia/nccl/include/nccl.h", "nvidia/nccl/lib/libnccl.so.2", "nvidia_nccl_cu12-2.19.3.dist-info/METADATA"],
    )


@pytest.fixture(scope="session")
def cudnn_wheel():
    wheel = _wheel(*CUDNN)
    # libcudnn.so.9 is a small dispatcher; cudnnGetVersion needs libcudnn_graph.so.9 beside it.
    return _unpack(
        wheel,
        [
            "nvidia/cudnn/include/cudnn_version.h",
            "nvidia/cudnn/include/cudnn_version_v9.h",
            "nvidia/cudnn/lib/libcudnn.so.9",
            "nvidia/cudnn/lib/libcudnn_graph.so.9",
            "nvidia_cudnn_cu12-9.6.0.74.dist-info/METADATA",
        ],
    )


@pytest.fixture(scope="session")
def torch_cpu_wheel():
    assert TORCH_CPU.exists(), f"{TORCH_CPU} is absent: make setup (its wheels target) puts it there"
    return TORCH_CPU


def place(src, dest):
    """Put a real file into the test tree: a hard link when the filesystem allows, else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        dest.hardlink_to(src)
    except OSError:
        shutil.copyfile(src, dest)
    return dest


@pytest.fixture(scope="module")
def matrix():
    """The shipped compatibility matrix (data/compat_matrix.yml), built and checked: one per test module."""
    return mx.build(yaml.safe_load(MATRIX.read_text()))
