"""`ansible-playbook site.yml` checks the desired stack on the controller before any host is touched.

The inventory's only host points at 127.0.0.1 port 1 over ssh: contacting it would show UNREACHABLE. A wrong
desired stack must stop the run with the user's fix in the message and no UNREACHABLE (no host contacted);
the sandbox's desired stack must pass the preflight, after which the play does try the host (the control case
proving the host would have been reported UNREACHABLE had it been contacted).
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SANDBOX_STACK = yaml.safe_load((ROOT / "inventories/sandbox/group_vars/all.yml").read_text())["gpufleet_stack"]
PLAYBOOK_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "ansible-playbook"


def playbook(tmp_path, env, group_vars):
    inv = tmp_path / "inventory"
    (inv / "group_vars").mkdir(parents=True, exist_ok=True)
    (inv / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    "hosts": {
                        "gpu-x": {
                            "ansible_host": "127.0.0.1",
                            "ansible_port": 1,
                            "ansible_connection": "ssh",
                            "ansible_ssh_common_args": "-o ConnectTimeout=3",
                        }
                    }
                }
            }
        )
    )
    (inv / "group_vars" / "all.yml").write_text(yaml.safe_dump(group_vars))
    binary = str(PLAYBOOK_BIN) if PLAYBOOK_BIN.exists() else shutil.which("ansible-playbook")
    proc = subprocess.run(
        [binary, "-i", str(inv), "site.yml", "-e", f"gpufleet_report_dir={tmp_path / 'report'}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            dict(SANDBOX_STACK, cuda="13.0", cudnn="8.9.7"),
            [
                "CUDA toolkit 13.0 needs driver >= 580.65.06 but the driver is 570.133.20",
                "cuDNN 8.9.7 has no build for CUDA 13.0",
                "choose cuDNN >=9.13 for CUDA 13.0",
            ],
        ),
        (
            dict(SANDBOX_STACK, driver="520.61.05"),
            ["CUDA toolkit 12.8 needs driver >= 570.26 but the driver is 520.61.05: upgrade the driver"],
        ),
    ],
    ids=["cudnn8-with-cuda13", "driver-too-old"],
)
def test_wrong_stack_stops_before_any_host(tmp_path, ansible_env, stack, expected):
    rc, out = playbook(tmp_path, ansible_env, {"gpufleet_stack": stack})
    assert rc != 0, out
    assert "incompatibilit" in out and "in the given versions (versions:)" in out, out
    for text in expected:
        assert text in out, f"missing {text!r} in:\n{out}"
    assert "UNREACHABLE" not in out, f"a host was contacted:\n{out}"
    assert "Gathering Facts" not in out and "Report the node" not in out, out


def test_sandbox_stack_passes_preflight_then_reaches_for_hosts(tmp_path, ansible_env):
    rc, out = playbook(tmp_path, ansible_env, {"gpufleet_stack": SANDBOX_STACK})
    assert "Check gpufleet_stack against the compatibility matrix" in out
    assert "ok: [gpu-x -> localhost]" in out, out
    assert "incompatibilit" not in out
    # the next play does contact the host, which is unreachable by design
    assert "UNREACHABLE" in out and rc != 0, out


def test_inventory_rows_extend_the_matrix(tmp_path, ansible_env):
    """gpufleet_compat_matrix_extra adds rows without editing the collection: a newer driver branch and toolkit
    than the shipped matrix knows are `unknown`, which fails only with strict; the site's rows make them known.
    """
    stack = dict(SANDBOX_STACK, driver="600.10.01", cuda="13.2", cudnn="9.20.0", nccl="2.28.3")
    group_vars = {"gpufleet_stack": stack, "gpufleet_stack_strict": True}
    rc, out = playbook(tmp_path, ansible_env, group_vars)
    assert "no Table 3 row for CUDA 13.2" in out and "driver 600.10.01: its branch is not in the matrix" in out, out
    assert "UNREACHABLE" not in out and rc != 0, out
    extra = [
        {
            "id": "cuda-13.2",
            "kind": "cuda_driver",
            "cuda": "13.2",
            "min_driver": "600.10.01",
            "source": "CUDA 13.2 release notes, Table 3 (site copy)",
            "read": "2027-03-01",
        },
        {
            "id": "branch-600",
            "kind": "branch",
            "branch": "600",
            "max_cuda": "13.2",
            "source": "site",
            "read": "2027-03-01",
        },
    ]
    rc, out = playbook(tmp_path, ansible_env, dict(group_vars, gpufleet_compat_matrix_extra=extra))
    assert "incompatibilit" not in out, out
    assert "ok: [gpu-x -> localhost]" in out and "UNREACHABLE" in out and rc != 0, out
