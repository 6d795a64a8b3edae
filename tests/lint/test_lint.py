"""Static checks, in the order a reviewer reads them: yamllint, ansible-lint, ruff, ansible-test sanity.

Each runs the real tool over the checkout; a failure shows the tool's own output.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def check(argv, cwd=ROOT, env=None):
    proc = subprocess.run(argv, check=False, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(map(str, argv))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_yamllint():
    check([BIN / "yamllint", "--strict", "."])


def test_ansible_lint():
    check([BIN / "ansible-lint", "--profile", "production", "--nocolor"])


def test_ruff():
    check([BIN / "ruff", "check", "."])
    check([BIN / "ruff", "format", "--check", "--diff", "."])


def _conditions(node):
    """Every task's `that:`, `when:`, `failed_when:`, `changed_when:` and `until:` items anywhere in a YAML tree."""
    if isinstance(node, list):
        for item in node:
            yield from _conditions(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("that", "when", "failed_when", "changed_when", "until"):
                yield from (value if isinstance(value, list) else [value])
            else:
                yield from _conditions(value)


def test_conditions_are_strings():
    """A condition that YAML reads as a mapping (an unquoted `: ` inside it) fails only when Ansible reaches it,
    which in a Molecule scenario can be twenty minutes in (kernel_layer, 2026-12-05)."""
    import yaml  # pylint: disable=import-outside-toplevel

    files = subprocess.run(["git", "ls-files", "*.yml"], cwd=ROOT, check=True, capture_output=True, text=True)
    bad = []
    for rel in files.stdout.split():
        try:
            tree = yaml.safe_load((ROOT / rel).read_text())
        except yaml.YAMLError:
            continue  # yamllint reports it
        bad += [f"{rel}: {c!r}" for c in _conditions(tree) if not isinstance(c, (str, bool))]
    assert not bad, "conditions that are not strings (quote them):\n" + "\n".join(bad)


def _ansible_test_pip_version():
    from ansible_test._internal import python_requirements  # pylint: disable=import-outside-toplevel

    return python_requirements.get_venv_packages(type("P", (), {"version": "3.11"})())["pip"]


@pytest.fixture(scope="module")
def collection_copy(tmp_path_factory):
    """The collection as ansible-test wants it: under ansible_collections/gpufleet/stack, without the
    collections/ link back to the checkout (a directory symlink, and not part of the built collection)."""
    dest = tmp_path_factory.mktemp("sanity") / "ansible_collections" / "gpufleet" / "stack"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\n")
    for rel in filter(None, files):
        src = ROOT / rel
        if rel.startswith("collections/") or not src.exists():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel, follow_symlinks=False)
    return dest


def test_ansible_test_sanity(collection_copy):
    cache = Path.home() / ".ansible/test/cache" / f"get_pip_{_ansible_test_pip_version().replace('.', '_')}.py"
    cache.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests/sanity/get_pip_bootstrap.py", cache)
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    check(
        [BIN / "ansible-test", "sanity", "--python", "3.11", "--requirements", "--color", "no"],
        cwd=collection_copy,
        env=env,
    )
