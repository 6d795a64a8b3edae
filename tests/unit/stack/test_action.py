"""stack_assert without `versions:` runs stack_facts on the host (here: localhost) and checks `expect` pins."""

import json
import subprocess
import sys
import zipfile

import pytest
import yaml

from .conftest import ROOT

PLAYBOOK_BIN = ROOT / ".venv" / "bin" / "ansible-playbook"


def play(tmp_path, env, task_args, check=False):
    book = tmp_path / "play.yml"
    book.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Assert on localhost",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {"name": "Assert", "gpufleet.stack.stack_assert": task_args, "register": "out"},
                        {
                            "name": "Dump",
                            "ansible.builtin.copy": {
                                "content": "{{ out | to_json }}",
                                "dest": str(tmp_path / "out.json"),
                            },
                            "check_mode": False,
                        },
                    ],
                }
            ]
        )
    )
    argv = [
        str(PLAYBOOK_BIN),
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(book),
    ] + (["--check"] if check else [])
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    out = tmp_path / "out.json"
    return proc.returncode, proc.stdout + proc.stderr, json.loads(out.read_text()) if out.exists() else None


@pytest.fixture
def venv(tmp_path, torch_cpu_wheel):
    site = tmp_path / "venv/lib/python3.11/site-packages"
    with zipfile.ZipFile(torch_cpu_wheel) as z:
        for name in z.namelist():
            if name.endswith(".dist-info/METADATA") or name == "torch/version.py":
                z.extract(name, site)
    return tmp_path / "venv"


def test_detects_on_host_and_passes_matching_pins(tmp_path, ansible_env, venv):
    rc, out, result = play(
        tmp_path, ansible_env, {"python_envs": [str(venv)], "expect": {"framework": "torch==2.13.0"}}, check=True
    )
    # This machine's own stack is also checked; whatever it is, the verdict must follow the checks.
    violations = [c for c in result["checks"] if c["status"] == "violation"]
    assert result["compatible"] is (not violations) and (rc == 0) is (not violations), out
    installed = result["ansible_facts"]["gpufleet_installed"]
    assert installed["frameworks"]["torch"][0]["version"] == "2.13.0+cpu"
    rules = {c["rule"]: c for c in result["checks"]}
    assert rules["expect"]["status"] == "ok" and "host has 2.13.0+cpu" in rules["expect"]["message"]
    assert rules["framework_cuda"]["status"] == "ok"  # a CPU build needs no driver


def test_pins_the_host_does_not_meet_fail_with_every_difference(tmp_path, ansible_env, venv):
    rc, out, _err = play(
        tmp_path, ansible_env, {"python_envs": [str(venv)], "expect": {"framework": "torch==2.7.1", "cudnn": "9.8.0"}}
    )
    assert rc != 0
    assert "2 incompatibilities in the stack installed on the host" in out, out
    assert "desired torch 2.7.1, host has 2.13.0+cpu" in out
    assert "desired cudnn 9.8.0, host has absent" in out


def test_bad_pin_is_named_before_detection(tmp_path, ansible_env):
    rc, out, _err = play(tmp_path, ansible_env, {"expect": {"driver": "~570"}})
    assert rc != 0 and "expect.driver '~570'" in out, out


def test_the_matrix_says_its_date_and_a_bad_max_age_is_named(tmp_path, ansible_env):
    rc, out, result = play(tmp_path, ansible_env, {"versions": {"driver": "580.159.03"}, "matrix_max_age": 180})
    shipped = yaml.safe_load((ROOT / "data" / "compat_matrix.yml").read_text())["as_of"]
    assert rc == 0 and result["matrix_as_of"] == shipped, out
    # Arabic-Indic digits int() would read as 180, a bool, zero and ten years and a day: each named with the fix.
    for bad in ["\u0661\u0668\u0660", True, 0, 3651]:
        rc, out, _result = play(tmp_path, ansible_env, {"versions": {"driver": "580.159.03"}, "matrix_max_age": bad})
        assert rc != 0 and "gpufleet_compat_matrix_max_age (matrix_max_age) is" in out, out
        assert "give whole days from 1 to 3650" in out
