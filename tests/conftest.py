"""Shared pytest setup: import the collection from this checkout as ansible_collections.gpufleet.stack."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# collections/ansible_collections/gpufleet/stack links back to the checkout root.
sys.path.insert(0, str(ROOT / "collections"))
# Every ansible and ansible-playbook these tests start (Molecule's included) keeps its module_utils walks here
# (tests/harness/gpufleet_ansiballz_cache.py); the venv's .pth from `make venv` reads the variable.
os.environ.setdefault("GPUFLEET_ANSIBALLZ_CACHE", str(ROOT / ".cache" / "ansiballz"))
# The modules these tests run on the controller itself (the `ansible` CLI with -c local, Molecule's create and destroy)
# keep their compiled module_utils as the nodes do (sandbox/pycode/gpufleet_pycode.py), in a cache of the controller's
# own: never code that a node wrote.
os.environ.setdefault("GPUFLEET_PYCODE_CACHE", str(ROOT / ".cache" / "pycode"))
Path(os.environ["GPUFLEET_PYCODE_CACHE"]).mkdir(mode=0o700, parents=True, exist_ok=True)


def ansible_environment(workdir):
    """Environment for running ansible/ansible-playbook from this checkout in a test: the checkout's ansible.cfg,
    the toolchain first on PATH, no colour, and a fact cache of the test's own (never the checkout's .cache/)."""
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(Path(workdir) / "facts"),
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    )


@pytest.fixture
def ansible_env(tmp_path):
    return ansible_environment(tmp_path)


@pytest.fixture(scope="module")
def ansible_env_module(tmp_path_factory):
    """ansible_env for a module-scoped fixture (one fact cache for the module's runs)."""
    return ansible_environment(tmp_path_factory.mktemp("ansible"))


@pytest.fixture
def run_module(ansible_env):
    """Run one module on localhost through the `ansible` CLI, as a user's ad-hoc command would:
    run_module("gpufleet.stack.repo_key", {...}, "--check") gives (rc, the result as a dict); raw=True gives
    (rc, the default callback's text, which is where --diff shows)."""

    def run(module, args, *flags, raw=False):
        proc = subprocess.run(
            [
                Path(sys.executable).parent / "ansible",
                "localhost",
                "-c",
                "local",
                "-i",
                "localhost,",
                *([] if raw else ["-o"]),  # the one-line callback prints no diff
                "-e",
                f"ansible_python_interpreter={sys.executable}",
                "-m",
                module,
                "-a",
                json.dumps(args),
                *flags,
            ],
            env=ansible_env,
            capture_output=True,
            text=True,
            check=False,
        )
        out = proc.stdout
        if raw:
            return proc.returncode, out
        return proc.returncode, json.loads(out[out.index("{") :]) if "{" in out else {"msg": out + proc.stderr}

    return run


@pytest.fixture
def nvml_bindings(ansible_env):
    """install(inventory): what the playbooks do before gpu_facts (roles/pynvml), ad hoc on every host of the
    inventory. Sandbox nodes come without pynvml: the collection must put it there. The role is internal: this
    stands in for the collection's playbooks, which say so with __gpufleet_internal."""

    def install(inventory):
        role = ["-m", "ansible.builtin.include_role", "-a", "name=gpufleet.stack.pynvml"]
        role += ["-e", '{"__gpufleet_internal": true}']
        proc = subprocess.run(
            [Path(sys.executable).parent / "ansible", "all", "-i", inventory, "-o", *role],
            env=ansible_env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr

    return install


# --- side by side: `make test` runs pytest with xdist (-n 2) -----------------------------------------------------
# tests/integration/test_molecule.py is one unit of work, handed out first: one worker takes it whole (its Molecule
# scenarios share Docker and the mirror and run in order, in the lanes test_molecule.py sets), while the other worker
# takes everything else: the lint and unit tests one by one, and each other integration module whole (their
# module-scoped fixtures run once). Those use their own mirrors, ports and node names, so they can run beside the
# scenarios; they used to run after them on the scenarios' worker, and the scenarios are the run's critical path.
# (A scheduler of our own: xdist 3.8's loadgroup marks do not group under pytest 9, which ignores the node id it sets.)
# tests/integration/test_molecule.py's lane table (its SUMMARY); the controller prints it, since an xdist worker's
# report is not shown.
MOLECULE_SUMMARY = ROOT / ".cache" / "molecule-logs" / "summary.txt"
# A worker that has run all its tests says so in WORKER_DONE.<its id>: test_molecule.py then opens a lane of scenarios
# on the core that worker leaves.
WORKER_DONE = MOLECULE_SUMMARY.with_name("worker-done")
MOLECULE_TESTS = "tests/integration/test_molecule.py"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling  # pylint: disable=import-outside-toplevel

    class ScenariosApart(LoadScopeScheduling):
        """Units of work in collection order (pytest_collection_modifyitems puts the scenarios first): the
        scenarios, each integration module, each other test."""

        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return path if path.startswith("tests/integration/") else nodeid

    config.option.loadscopereorder = False  # by size would put test_inventory_schema's 101 cases first
    return ScenariosApart(config, log)


def pytest_collection_modifyitems(config, items):
    """Under xdist, the scenarios first: the worker that takes them starts them at once."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: not item.nodeid.startswith(MOLECULE_TESTS))


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller, or a run without xdist
        MOLECULE_SUMMARY.unlink(missing_ok=True)
        for mark in WORKER_DONE.parent.glob(f"{WORKER_DONE.name}.*"):
            mark.unlink()


def pytest_sessionfinish(session):
    """A worker's session ends when the scheduler has no more work for it."""
    if hasattr(session.config, "workerinput"):
        WORKER_DONE.parent.mkdir(parents=True, exist_ok=True)
        WORKER_DONE.with_name(f"{WORKER_DONE.name}.{session.config.workerinput['workerid']}").touch()


def pytest_terminal_summary(terminalreporter, config):
    if hasattr(config, "workerinput") or not MOLECULE_SUMMARY.exists():
        return
    terminalreporter.section("molecule scenarios by lane")
    for line in MOLECULE_SUMMARY.read_text().splitlines():
        terminalreporter.write_line(line)
