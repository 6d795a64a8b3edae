"""What the collection ships is current: every stack a newcomer meets first (the sandbox's and the example inventory's
gpufleet_stack, the demo's upgrade target, the README's stack examples) passes the matrix with no violation, no
warning and no unknown, judged today: a branch that reaches its end of life, a security bulletin the matrix learns or a
matrix left too long unrefreshed makes this fail, naming the file to update."""

import datetime
import json
import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si

ROOT = Path(__file__).resolve().parents[3]
# The GPUs `make demo` simulates (its PROFILE): the sandbox's stacks are judged against them too.
DEMO_PROFILE = ROOT / "sandbox" / "nvml-sim" / "profiles" / "a100-sxm4-40gb-x8-nvswitch.json"


def readme_stacks():
    """Each ```yaml block of README.md that declares gpufleet_stack."""
    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    found = [yaml.safe_load(b)["gpufleet_stack"] for b in blocks if b.startswith("gpufleet_stack:")]
    return [(f"README.md, stack example {i + 1}", s) for i, s in enumerate(found)]


def shipped():
    demo_gpu = json.loads(DEMO_PROFILE.read_text())["gpus"][0]["name"]
    stacks = []
    for path in ("inventories/sandbox/group_vars/all.yml", "inventories/example/group_vars/all.yml",
                 "sandbox/upgrade-target.yml"):  # fmt: skip
        stack = yaml.safe_load((ROOT / path).read_text())["gpufleet_stack"]
        stacks.append((path, stack))
        if "example" not in path:
            stacks.append((f"{path} on the demo's {demo_gpu}", dict(stack, gpu=demo_gpu)))
    return stacks + readme_stacks()


SHIPPED = shipped()


def test_the_readme_shows_a_stack_and_every_shipped_one_names_the_toolkit():
    assert readme_stacks(), "README.md has a ```yaml block that starts with gpufleet_stack:"
    assert all(stack.get("container_toolkit") for _where, stack in SHIPPED), "the toolkit is pinned, not defaulted"


@pytest.mark.parametrize(("where", "stack"), SHIPPED, ids=[w for w, _s in SHIPPED])
def test_every_shipped_stack_is_ok_today(matrix, where, stack):
    today = datetime.date.today().isoformat()
    checks = rules.evaluate(matrix, si.from_versions(stack), today=today)
    not_ok = [f"{c['status']} [{c['rule']}] {c['message']}" for c in checks if c["status"] != "ok"]
    assert not not_ok, f"{where} ships a stack that is not current on {today}: update it\n" + "\n".join(not_ok)


def test_the_demo_moves_the_driver_and_both_ends_are_in_the_mirror():
    """The upgrade target changes the driver (else the demo's upgrade shows nothing), and the offline mirror carries
    every driver and toolkit version a shipped stack names (else `make demo` fails at apt)."""
    sandbox = dict(SHIPPED)["inventories/sandbox/group_vars/all.yml"]
    target = dict(SHIPPED)["sandbox/upgrade-target.yml"]
    assert sandbox["driver"] != target["driver"]
    catalog = (ROOT / "sandbox" / "mirror" / "catalog.py").read_text()
    for where, stack in SHIPPED:
        for key in ("driver", "container_toolkit"):
            if re.fullmatch(r"\d+\.\d+\.\d+", str(stack[key])):
                assert f'"{stack[key]}":' in catalog, f"{where}: {key} {stack[key]} is not in sandbox/mirror/catalog.py"
