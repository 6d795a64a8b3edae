"""`ansible-playbook site.yml` checks the desired stack against the compatibility matrix on the controller before
any host is touched (tests/integration/_unreachable.py: a host that shows UNREACHABLE when contacted). A wrong
desired stack must stop the run with the user's fix in the message and no UNREACHABLE; the sandbox's desired stack
must pass the preflight, after which the play does try the host.
"""

import re
import subprocess
import sys

import pytest
import yaml
from _unreachable import PLAYBOOK_BIN as PLAYBOOK
from _unreachable import ROOT, run

SANDBOX_STACK = yaml.safe_load((ROOT / "inventories/sandbox/group_vars/all.yml").read_text())["gpufleet_stack"]


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            dict(SANDBOX_STACK, driver="570.133.20", cuda="13.0", cudnn="8.9.7"),
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
    rc, out = run(tmp_path, ansible_env, {"gpufleet_stack": stack})
    assert rc != 0, out
    assert re.search(r"\d+ incompatibilit(y|ies) in gpufleet_stack", out), out
    for text in expected:
        assert text in out, f"missing {text!r} in:\n{out}"
    assert "UNREACHABLE" not in out, f"a host was contacted:\n{out}"
    assert "Gathering Facts" not in out and "Report the node" not in out, out


def test_sandbox_stack_passes_preflight_then_reaches_for_hosts(tmp_path, ansible_env):
    rc, out = run(tmp_path, ansible_env, {"gpufleet_stack": SANDBOX_STACK})
    assert "Check every host's inventory variables and desired stack" in out
    assert "ok: [gpu-x -> localhost]" in out, out
    assert "incompatibilit" not in out
    # the next play does contact the host, which is unreachable by design
    assert "UNREACHABLE" in out and rc != 0, out


def test_inventory_rows_extend_the_matrix(tmp_path, ansible_env):
    """gpufleet_compat_matrix_extra adds rows without editing the collection: a newer driver branch and toolkit
    than the shipped matrix knows are `unknown`, which fails only with strict; the site's rows make them known.
    """
    stack = dict(SANDBOX_STACK, driver="600.10.01", cuda="13.4", cudnn="9.20.0", nccl="2.28.3")
    group_vars = {"gpufleet_stack": stack, "gpufleet_stack_strict": True}
    rc, out = run(tmp_path, ansible_env, group_vars)
    assert "no Table 3 row for CUDA 13.4" in out and "driver 600.10.01: its branch is not in the matrix" in out, out
    assert "UNREACHABLE" not in out and rc != 0, out
    extra = [
        {
            "id": "cuda-13.4",
            "kind": "cuda_driver",
            "cuda": "13.4",
            "min_driver": "600.10.01",
            "source": "CUDA 13.4 release notes, Table 3 (site copy)",
            "read": "2027-03-01",
        },
        {
            "id": "branch-600",
            "kind": "branch",
            "branch": "600",
            "max_cuda": "13.4",
            "source": "site",
            "read": "2027-03-01",
        },
    ]
    rc, out = run(tmp_path, ansible_env, dict(group_vars, gpufleet_compat_matrix_extra=extra))
    assert "incompatibilit" not in out, out
    assert "ok: [gpu-x -> localhost]" in out and "UNREACHABLE" in out and rc != 0, out


def test_warnings_and_unknowns_show_without_verbose_once_per_distinct_stack(tmp_path, ansible_env):
    """Three hosts share a stack that runs only through CUDA minor-version compatibility and names a torch release
    the matrix does not know: each verdict is printed once, naming the hosts, with no -v; not strict, so the run
    goes on to the hosts."""
    stack = dict(SANDBOX_STACK, driver="570.133.20", cuda="12.9", framework="torch==1.13.1")
    rc, out = run(tmp_path, ansible_env, {"gpufleet_stack": stack}, hosts=("gpu-a", "gpu-b", "gpu-c"))
    warnings = [line for line in out.splitlines() if line.startswith("[WARNING]: gpu-a, gpu-b, gpu-c: ")]
    assert len(warnings) >= 2, out
    assert (
        sum("warning [driver_cuda] CUDA toolkit 12.9 runs on driver 570.133.20 only through" in w for w in warnings)
        == 1
    )
    unknown = [w for w in warnings if "unknown [framework_cuda] torch 1.13.1 is not in the matrix" in w]
    assert len(unknown) == 1 and "gpufleet_compat_matrix_extra" in unknown[0], out
    assert "UNREACHABLE" in out and rc != 0, out


def test_a_role_run_alone_names_the_inventory_variable_its_default_took(tmp_path, ansible_env):
    """The roles check their settings against the same schema: a value that came through a role default is named
    with the inventory variable it came from, one set on the role is named as set. On this machine (local
    connection), which the role only reads: the check stops it before its install stage."""
    play = tmp_path / "role.yml"
    task = {
        "name": "The nccl role alone",
        "ansible.builtin.include_role": {"name": "gpufleet.stack.nccl", "tasks_from": "preflight"},
        "vars": {"nccl_settings": {"NCCL_DEBUG": "WARN\nNCCL_P2P_DISABLE=1"}},
    }
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    extra = tmp_path / "vars.yml"
    extra.write_text(yaml.safe_dump({"gpufleet_stack": dict(SANDBOX_STACK, nccl="2.26")}))
    argv = [str(PLAYBOOK), "-i", "localhost,", "-c", "local", str(play), "-e", f"@{extra}"]
    argv += ["-e", f"ansible_python_interpreter={sys.executable}"]
    proc = subprocess.run(argv, cwd=ROOT, env=ansible_env, capture_output=True, text=True, check=False, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert 'nccl_version (from gpufleet_stack.nccl) is "2.26"' in out, out
    assert 'nccl_settings.NCCL_DEBUG is "WARN\\nNCCL_P2P_DISABLE=1": it holds a control character' in out, out
