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


ROLE_NAMES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())
PRIVATE = re.compile(r"\b__(" + "|".join(sorted(ROLE_NAMES, key=len, reverse=True)) + r")_\w+")


def private_reads(files, owner):
    """'path:line: name' for each private variable of a role other than owner (__<role>_*) that files name."""
    found = []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found += [
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {m.group(0)}"
                for m in PRIVATE.finditer(line)
                if m.group(1) != owner
            ]
    return found


@pytest.mark.parametrize("owner", [*ROLE_NAMES, "playbooks"])
def test_a_roles_private_variables_stay_inside_it(owner):
    """A role's __<role>_* variables are its own: another role or a playbook reads what it sets as a public fact
    (nvidia_driver_running_version, gpufleet_multinode), and an internal role (nvidia_repo, pynvml) keeps its own
    once-per-run guard rather than each caller reading it."""
    base = ROOT / "playbooks" if owner == "playbooks" else ROOT / "roles" / owner
    files = sorted(p for p in base.rglob("*") if p.suffix in (".yml", ".j2") and p.is_file())
    assert files and private_reads(files, owner) == []


def test_a_private_read_is_seen(tmp_path):
    probe = tmp_path / "tasks.yml"
    probe.write_text("- when: not __pynvml_done | default(false)\n- debug: {var: __nccl_own}\n")
    assert private_reads([probe], "nccl") == [f"{probe}:1: __pynvml_done"]


def role_inclusions(node):
    """(what includes, the role, its rolespec_validate) for each role a task list or play list includes or lists."""
    if isinstance(node, list):
        for item in node:
            yield from role_inclusions(item)
    elif isinstance(node, dict):
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
            if key in node:
                yield node.get("name"), node[key].get("name"), node[key].get("rolespec_validate")
        for entry in node.get("roles") or []:
            yield "roles:", entry.get("role") if isinstance(entry, dict) else entry, None
        for value in node.values():
            yield from role_inclusions(value)


def test_the_collection_validates_its_roles_settings_one_way():
    """Each role checks its settings against the schema itself (inventory_check role=...); Ansible's argument-spec
    validation, a second validator with other messages, runs only for a role a user lists in a play of their own."""
    files = [*sorted((ROOT / "roles").rglob("*.yml")), *sorted((ROOT / "playbooks").rglob("*.yml"))]
    found = [(str(p.relative_to(ROOT)), *i) for p in files for i in role_inclusions(yaml.safe_load(p.read_text()))]
    assert len(found) > 20 and [f for f in found if f[3] is not False] == []
    assert list(role_inclusions([{"roles": ["gpufleet.stack.cudnn"]}])) == [("roles:", "gpufleet.stack.cudnn", None)]


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_every_role_checks_its_settings_against_the_schema_itself(role):
    """Every role has settings the schema declares. Run from site.yml or listed in a play of a user's own, the role
    checks the values it will use (its defaults templated) against data/inventory_schema.yml, with the play's own
    validator and messages."""
    declared = yaml.safe_load((ROOT / "data" / "inventory_schema.yml").read_text())["role_variables"]
    assert any(n.startswith(f"{role}_") for n in declared)
    tasks = "\n".join(p.read_text() for p in sorted((ROOT / "roles" / role / "tasks").glob("*.yml")))
    assert re.search(rf"gpufleet\.stack\.inventory_check:\n\s+role: {role}\n", tasks)
