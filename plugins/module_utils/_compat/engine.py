# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compatibility engine's one door: the matrix, a stack, the checks and the verdict. PRIVATE to the collection.

The controller (stack_assert, inventory_check, tools/verdict-table) imports this module only:
  matrix = build_matrix(data, extra)                  # the sourced rows, checked (MatrixError names the bad row)
  stack = from_versions(versions) | from_installed(facts), with stack["gpus"] = gpus(items)   (InputError)
  check_expect(expect)                                # the desired pins, checked before any comparison
  checks = evaluate(matrix, stack, expect, today)     # every rule, in a stable order
  ok, message = verdict(checks, strict)
Behind it: matrix (the rows), inputs (the stack's shape), rules (driver, CUDA, cuDNN, NCCL, Fabric Manager, lifecycle,
security, toolkit), rules_fw (frameworks, Horovod) and rules_gpu (the GPUs). Pure functions; nothing here runs on a
node.
"""

from __future__ import annotations

import datetime

from ansible_collections.gpufleet.stack.plugins.module_utils._common import versions as v
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import rules as r
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import rules_fw, rules_gpu
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.inputs import (
    InputError,
    check_expect,
    from_installed,
    from_versions,
    gpus,
    parse_framework,
)
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.matrix import MatrixError
from ansible_collections.gpufleet.stack.plugins.module_utils._compat.matrix import build as build_matrix

__all__ = [
    "MAX_AGE_DAYS",
    "InputError",
    "MatrixError",
    "build_matrix",
    "check_expect",
    "evaluate",
    "from_installed",
    "from_versions",
    "gpus",
    "verdict",
]

MAX_AGE_DAYS = r.MAX_AGE_DAYS  # evaluate's default: days after the matrix's as_of before every verdict warns


def rule_expect(stack, expect):
    """Host findings against the desired pins (exact, branch or range)."""
    out = []
    for key, pin in (expect or {}).items():
        if key == "framework":
            want = parse_framework(pin, "expect.framework")
            have = [f for f in stack["frameworks"] if f["name"] == want["name"]]
            ok = any(v.matches(want["version"], f["version"].split("+")[0]) for f in have)
            what, found = f"{want['name']} {want['version']}", ", ".join(f["version"] for f in have) or "absent"
        else:
            have = stack.get(key)
            values = have if isinstance(have, list) else [have] if have else []
            pins = pin if isinstance(pin, list) else [pin]
            ok = all(any(v.matches(p, x) for x in values) for p in pins)
            what, found = f"{key} {', '.join(map(str, pins))}", ", ".join(values) or "absent"
        out.append(
            r.check(
                "expect",
                r.OK if ok else r.VIOLATION,
                f"desired {what}, host has {found}"
                + ("" if ok else ": converge the host (playbooks/site.yml) or change the desired stack"),
            )
        )
    return out


def rule_driver_loaded(stack):
    out = []
    for driver in stack.get("notes") or []:
        out.append(
            r.check(
                "driver_loaded",
                r.VIOLATION,
                f"the loaded driver {driver.get('loaded_version')} differs "
                f"from the installed {driver.get('package_version') or driver.get('library_version')} "
                "(driver/library version mismatch): reboot the host, or unload and reload the nvidia "
                "kernel modules",
                driver.get("loaded_source"),
            )
        )
    return out


def evaluate(matrix, stack, expect=None, today=None, max_age=MAX_AGE_DAYS):
    """Every check, in a stable order; `today` (ISO date, default the clock) decides a driver branch's end of life
    and whether the matrix is older than max_age days."""
    today = today or datetime.date.today().isoformat()
    return (
        r.rule_matrix_age(matrix, today, max_age)
        + r.rule_driver_cuda(matrix, stack)
        + r.rule_driver_branch(matrix, stack)
        + r.rule_driver_lifecycle(matrix, stack, today)
        + r.rule_driver_flavor(matrix, stack)
        + r.rule_driver_security(matrix, stack)
        + rule_driver_loaded(stack)
        + r.rule_cudnn(matrix, stack)
        + r.rule_nccl(matrix, stack)
        + rules_fw.rule_framework(matrix, stack)
        + rules_fw.rule_horovod(matrix, stack)
        + r.rule_fabricmanager(matrix, stack)
        + r.rule_container_toolkit(matrix, stack)
        + rules_gpu.rule_gpu(matrix, stack)
        + rule_expect(stack, expect)
    )


def verdict(checks, strict=False, what="the GPU stack"):
    """(compatible, failure message or None): violations always fail, unknowns only when strict."""
    bad = [c for c in checks if c["status"] == r.VIOLATION or (strict and c["status"] == r.UNKNOWN)]
    if not bad:
        return True, None
    lines = [f"- [{c['rule']}] {c['message']}" for c in bad]
    head = f"{len(bad)} incompatibilit{'y' if len(bad) == 1 else 'ies'} in {what}"
    return False, head + ":\n" + "\n".join(lines)
