"""module_utils in two wings (plugins/module_utils/README.md): the node's code and the controller's never import each
other, the compatibility engine has one door, plugins import no other plugin, and the gpu_monitoring role installs
every module the health collector imports."""

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
MODULE_UTILS = PLUGINS / "module_utils"
PREFIX = "ansible_collections.gpufleet.stack.plugins."

# What each package below module_utils may import (itself always).
ALLOWED = {
    "_common": set(),
    "_node": {"_common"},
    "_compat": {"_common"},
    "_controller": {"_common", "_compat.engine"},
}
# What each plugin type may import: modules run on the hosts; the rest on the controller.
PLUGIN_ALLOWED = {
    "modules": {"_node", "_common"},
    "action": {"_controller", "_compat.engine", "_common"},
    "filter": {"_controller", "_compat.engine", "_common"},
    "inventory": {"_controller", "_common"},
    "lookup": {"_controller", "_common"},
    "strategy": {"_controller", "_common"},
}


def imports(path):
    """The collection names one Python file imports, as dotted paths below plugins. ("module_utils._node.kernels")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
            base = node.module[len(PREFIX) :]
            # `from ..._node.gpu import gather` imports a module: the name is part of the path.
            for alias in node.names:
                sub = MODULE_UTILS.joinpath(*base.split(".")[1:], f"{alias.name}.py")
                found.add(f"{base}.{alias.name}" if sub.is_file() else base)
        elif isinstance(node, ast.Import):
            found |= {a.name[len(PREFIX) :] for a in node.names if a.name.startswith(PREFIX)}
    return found


def allowed(target, rules):
    """Whether module_utils target (e.g. "_compat.rules") is under one of rules' packages or modules."""
    return any(target == rule or target.startswith(rule + ".") for rule in rules)


def module_name(path):
    return ".".join(path.relative_to(MODULE_UTILS).with_suffix("").parts)


def test_every_module_utils_file_lies_in_a_wing_and_every_package_has_an_empty_init():
    loose = sorted(p.name for p in MODULE_UTILS.glob("*.py"))
    assert loose == []
    for directory in [d for d in MODULE_UTILS.rglob("*") if d.is_dir() and d.name != "__pycache__"]:
        init = directory / "__init__.py"
        assert init.is_file() and init.read_text() == "", directory


def crossings(paths, rules):
    """ "<file> imports <name>" for each collection import of paths that rules do not allow."""
    found = []
    for path in paths:
        for target in sorted(imports(path)):
            if not target.startswith("module_utils."):
                found.append(f"{path.name} imports the plugin {target}")
            elif not allowed(target.removeprefix("module_utils."), rules):
                found.append(f"{path.name} imports {target}")
    return found


@pytest.mark.parametrize("wing", sorted(ALLOWED))
def test_a_wing_imports_only_itself_and_what_lies_below_it(wing):
    assert crossings(sorted((MODULE_UTILS / wing).rglob("*.py")), {wing} | ALLOWED[wing]) == []


@pytest.mark.parametrize("kind", sorted(PLUGIN_ALLOWED))
def test_plugins_import_their_side_of_module_utils_and_no_other_plugin(kind):
    assert crossings(sorted((PLUGINS / kind).glob("*.py")), PLUGIN_ALLOWED[kind]) == []


def test_a_crossing_is_seen(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu import gather\n"
        "from ansible_collections.gpufleet.stack.plugins.module_utils._compat import rules\n"
        "from ansible_collections.gpufleet.stack.plugins.module_utils._compat.engine import evaluate\n"
        "from ansible_collections.gpufleet.stack.plugins.action.stack_assert import load_matrix\n"
    )
    assert crossings([probe], {"_controller"} | ALLOWED["_controller"]) == [
        "probe.py imports the plugin action.stack_assert",
        "probe.py imports module_utils._compat.rules",
        "probe.py imports module_utils._node.gpu.gather",
    ]


def closure(start):
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = MODULE_UTILS.joinpath(*name.split(".")).with_suffix(".py")
        todo.extend(t.removeprefix("module_utils.") for t in imports(path) if t.startswith("module_utils."))
    return seen


def test_the_monitoring_role_installs_every_module_the_health_collector_imports():
    listed = yaml.safe_load((ROOT / "roles" / "gpu_monitoring" / "vars" / "main.yml").read_text())
    packages = listed["__gpu_monitoring_code_packages"]
    needed = closure("_node.health.collector")
    assert "_common.versions" in needed and "_node.gpu.gather" in needed
    assert sorted(n for n in needed if n.split(".")[0] not in packages) == []
    script = (ROOT / "roles" / "gpu_monitoring" / "files" / "gpufleet-gpu-health").read_text()
    assert "plugins.module_utils._node.health.collector import" in script


def registered(role):
    """The names a role's tasks and handlers register."""
    names = set()
    for path in [*(role / "tasks").glob("*.yml"), *(role / "handlers").glob("*.yml")]:
        names |= set(re.findall(r"^\s*register:\s*(\w+)", path.read_text(), re.M))
    return names


@pytest.mark.parametrize(
    "role", sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "vars" / "main.yml").is_file())
)
def test_no_role_variable_reads_a_registered_result(role):
    """A role's decisions are a task in its stage file or a module/filter call named there: no vars/main.yml
    expression reads what a task registered (where a reader would have to find which task, when)."""
    text = (ROOT / "roles" / role / "vars" / "main.yml").read_text()
    assert sorted(n for n in registered(ROOT / "roles" / role) if re.search(rf"\b{n}\b", text)) == []


def test_only_the_seam_knows_the_nvml_simulator():
    """_node/gpu/source.py is where the sandbox's NVML simulator is recognised and read (its marker symbols, its
    profile, its variables); the rest of the collection asks the seam."""
    marks = ("gpufleet_nvml_sim", "GPUFLEET_NVML_SIM", "nvml-sim/profile")
    knowing = sorted(
        str(p.relative_to(ROOT)) for p in PLUGINS.rglob("*.py") if any(mark in p.read_text() for mark in marks)
    )
    assert knowing == ["plugins/module_utils/_node/gpu/source.py"]
