"""execution-environment.yml: `ansible-builder create` makes the build context of an EE holding this checkout's
collection tarball, its dependencies and NVML's bindings at the release the pynvml role pins."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_ansible_builder_creates_the_context(tmp_path):
    shutil.copy(ROOT / "execution-environment.yml", tmp_path)
    shutil.copytree(ROOT / "execution-environment", tmp_path / "execution-environment")
    build = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", tmp_path / "build"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    create = subprocess.run(
        [BIN / "ansible-builder", "create", "-f", "execution-environment.yml", "--context", "ctx"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert create.returncode == 0, create.stdout + create.stderr
    ctx = tmp_path / "ctx"
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    assert (ctx / "_build" / "collections" / f"gpufleet-stack-{version}.tar.gz").is_file()
    galaxy = yaml.safe_load((ctx / "_build" / "requirements.yml").read_text())["collections"]
    assert galaxy[0] == {"name": f"/tmp/gpufleet-collection/gpufleet-stack-{version}.tar.gz", "type": "file"}
    assert {"community.general", "community.docker", "ansible.posix"} <= {c["name"] for c in galaxy}
    dockerfile = (ctx / "Dockerfile").read_text()
    core = re.search(r"^ansible-core==(\S+)", (ROOT / "requirements.in").read_text(), re.M).group(1)
    assert f"ansible-core=={core}" in dockerfile  # the line CI tests
    pinned = yaml.safe_load((ROOT / "roles/pynvml/defaults/main.yml").read_text())["pynvml_version"]
    assert f"nvidia-ml-py=={pinned} -d /opt/gpufleet/wheels" in dockerfile  # the wheel the role checks
    assert "jmespath" in (ctx / "_build" / "requirements.txt").read_text()
