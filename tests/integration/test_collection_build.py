"""The built collection tarball installs and works like the checkout."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(argv, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, argv))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    dest = tmp_path_factory.mktemp("collections")
    # No ansible.cfg from the checkout (its collections/ link would make gpufleet.stack look installed):
    # only the installed copy may resolve gpufleet.stack.
    empty_cfg = out / "ansible.cfg"
    empty_cfg.write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest), ANSIBLE_CONFIG=str(empty_cfg))
    run([BIN / "ansible-galaxy", "collection", "build", "--output-path", out, ROOT], env=env)
    tarball = next(out.glob("gpufleet-stack-*.tar.gz"))
    run([BIN / "ansible-galaxy", "collection", "install", "--offline", "-p", dest, tarball], env=env)
    return {"tarball": tarball, "path": dest / "ansible_collections" / "gpufleet" / "stack", "env": env}


def test_tarball_leaves_out_the_test_harness(installed):
    with tarfile.open(installed["tarball"]) as tar:
        names = tar.getnames()
    assert "MANIFEST.json" in names
    assert "playbooks/site.yml" in names
    for private in ("sandbox/", "molecule/", "tests/", "collections/", ".venv/"):
        assert not [n for n in names if n.startswith(private)], f"{private} must not ship"


def test_manifest_names_the_collection(installed):
    manifest = json.loads((installed["path"] / "MANIFEST.json").read_text())
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == ("gpufleet", "stack", "0.1.0")


def test_ansible_doc_lists_the_installed_collection(installed):
    run([BIN / "ansible-doc", "-l", "gpufleet.stack"], env=installed["env"])


def installed_playbook(installed, tmp_path, name, *args):
    """A playbook shipped in the tarball, addressed by FQCN, against the controller itself (local connection)."""
    argv = [BIN / "ansible-playbook", f"gpufleet.stack.{name}", "-i", "localhost,", "-c", "local"]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}", "-e", f"gpufleet_report_dir={tmp_path}", *args]
    return run(argv, env=installed["env"], cwd=tmp_path)


def test_installed_site_playbook_resolves_and_preflights(installed, tmp_path):
    # Only the preflight tag: the rest of site.yml installs the GPU stack, never on the machine running the tests.
    # It proves the playbook and its tasks resolve from the installed collection and the matrix ships with it.
    stack = {"gpufleet_stack": {"driver": "570.133.20", "cuda": "12.8", "cudnn": "9.8.0", "nccl": "2.26.2"}}
    proc = installed_playbook(installed, tmp_path, "site", "--tags", "preflight", "-e", json.dumps(stack))
    assert "Check every host's inventory variables and desired stack" in proc.stdout
    assert "failed=0" in proc.stdout
    listed = installed_playbook(installed, tmp_path, "site", "--list-tasks").stdout
    assert "NVIDIA driver and Fabric Manager" in listed and "Fail the hosts that do not match" in listed
    assert "Roll the upgrade in batches" in installed_playbook(installed, tmp_path, "upgrade", "--list-tasks").stdout


def test_installed_facts_playbook_runs(installed, tmp_path):
    # Read-only: GPU and stack facts of the controller (no GPU here) and the report.
    proc = installed_playbook(installed, tmp_path, "facts")
    assert "failed=0" in proc.stdout
    assert (tmp_path / "fleet-report.json").is_file()
