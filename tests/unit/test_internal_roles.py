"""The internal roles (nvidia_repo, pynvml) refuse a play that lists them, and run once per host per run however
often the collection's roles include them: the guard is theirs, not each caller's."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
SETTINGS = "Check the role's settings against the collection's schema"
SHORT = {
    role: yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())["argument_specs"]["main"][
        "short_description"
    ]
    for role in ("pynvml", "nvidia_repo")
}


def run(tmp_path, env, plays, parent_tasks=None):
    """ansible-playbook on localhost (local connection); parent_tasks become the tasks of a role named parent."""
    if parent_tasks is not None:
        tasks = tmp_path / "roles" / "parent" / "tasks"
        tasks.mkdir(parents=True)
        (tasks / "main.yml").write_text(yaml.safe_dump(parent_tasks))
    book = tmp_path / "play.yml"
    book.write_text(yaml.safe_dump(plays))
    argv = [str(PLAYBOOK), "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}"]
    env = dict(env, ANSIBLE_ROLES_PATH=str(tmp_path / "roles"))
    proc = subprocess.run(
        [*argv, str(book)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr


def play(**fields):
    return [{"name": "Play", "hosts": "localhost", "gather_facts": False, **fields}]


@pytest.mark.parametrize("role", ["pynvml", "nvidia_repo"])
def test_a_play_listing_an_internal_role_is_refused(tmp_path, ansible_env, role):
    rc, out = run(tmp_path, ansible_env, play(roles=[f"gpufleet.stack.{role}"]))
    assert rc == 2 and f"gpufleet.stack.{role} is internal to the collection" in out, out
    # Refused before anything of the role ran (Ansible validates the listed role's arguments first).
    assert re.findall(r"TASK \[(.*?)\]", out) == [
        f"gpufleet.stack.{role} : Validating arguments against arg spec 'main' - {SHORT[role]}",
        f"gpufleet.stack.{role} : Refuse direct use",
    ], out


def test_pynvml_runs_once_per_host_however_often_it_is_included(tmp_path, ansible_env):
    include = {
        "name": "Bindings",
        "ansible.builtin.include_role": {"name": "gpufleet.stack.pynvml", "rolespec_validate": False},
        "vars": {"pynvml_install": False},
    }
    rc, out = run(tmp_path, ansible_env, play(roles=["parent"]), [include, include])
    assert rc == 0, out
    assert out.count("TASK [gpufleet.stack.pynvml : Refuse direct use]") == 2, out
    assert out.count("TASK [gpufleet.stack.pynvml : Check the role's settings against the collection's schema]") == 1, (
        out
    )


def test_a_bad_pynvml_version_is_named_by_its_variable(tmp_path, ansible_env):
    include = {
        "name": "Bindings",
        "ansible.builtin.include_role": {"name": "gpufleet.stack.pynvml", "rolespec_validate": False},
        "vars": {"pynvml_install": False, "pynvml_version": "13.580.x; rm -rf /"},
    }
    rc, out = run(tmp_path, ansible_env, play(roles=["parent"]), [include])
    assert rc == 2 and "pynvml_version" in out and "13.580.x; rm -rf /" in out, out


def test_nvidia_repo_ends_at_once_when_its_repositories_are_set_up_in_this_run(tmp_path, ansible_env):
    done = {"name": "Set up earlier in the run", "ansible.builtin.set_fact": {"__nvidia_repo_done": ["cuda"]}}
    include = {
        "name": "Repository",
        "ansible.builtin.include_role": {"name": "gpufleet.stack.nvidia_repo", "rolespec_validate": False},
        "vars": {"nvidia_repo_enable": ["cuda"], "nvidia_repo_channel": "network"},
    }
    rc, out = run(tmp_path, ansible_env, play(roles=["parent"]), [done, include])
    assert rc == 0, out
    assert "gpufleet.stack.nvidia_repo : Refuse direct use" in out and "OS data" not in out, out
    assert "Check the role's settings" not in out and "Repositories" not in out, out
