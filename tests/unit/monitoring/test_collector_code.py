"""The gpu_monitoring role installs the collector's module_utils by list: the list is every module the collector
imports, directly or not, so the node never lacks one (an ImportError would stop every metric)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
IMPORT = re.compile(r"plugins\.module_utils(?:\.(_\w+)| import (_\w+))")


def closure(start):
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        text = (MODULE_UTILS / f"{name}.py").read_text()
        todo.extend(a or b for a, b in IMPORT.findall(text))
    return {f"{name}.py" for name in seen}


def test_the_role_installs_every_module_the_collector_imports():
    listed = yaml.safe_load((ROOT / "roles" / "gpu_monitoring" / "vars" / "main.yml").read_text())
    assert set(listed["__gpu_monitoring_module_utils"]) == closure("_health_collector")
