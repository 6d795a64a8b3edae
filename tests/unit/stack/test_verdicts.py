"""docs/verdicts.md: at least 40 real stacks, each with the verdict docs/stacks.yml expects, and the page as the rules
render it now (tools/verdict-table)."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine as rules
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import inputs as si

ROOT = Path(__file__).resolve().parents[3]
DOC = yaml.safe_load((ROOT / "docs" / "stacks.yml").read_text())
STACKS, AS_OF = DOC["stacks"], str(DOC["as_of"])
ORDER = ("violation", "unknown", "warning", "ok")


def test_at_least_40_stacks_of_every_verdict():
    assert len(STACKS) >= 40
    assert {s["expect"] for s in STACKS} == set(ORDER)


@pytest.mark.parametrize("stack", STACKS, ids=[s["why"] for s in STACKS])
def test_each_stack_gets_its_verdict(matrix, stack):
    checks = rules.evaluate(matrix, si.from_versions(stack["versions"]), today=AS_OF)
    worst = next((s for s in ORDER if any(c["status"] == s for c in checks)), "ok")
    assert worst == stack["expect"], [c for c in checks if c["status"] == worst]


def test_the_page_is_what_the_rules_give_now():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "verdict-table"), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
