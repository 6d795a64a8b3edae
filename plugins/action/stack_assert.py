# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for gpufleet.stack.stack_assert (documented in plugins/modules/stack_assert.py).

An action plugin, not a module, because the matrix file ships with the collection on the controller and
`versions:` must be checkable before any host is contacted. Without `versions:` it runs stack_facts on the host.
"""

from __future__ import annotations

import functools
import os

import yaml
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.stack.plugins.module_utils import _matrix as mx
from ansible_collections.gpufleet.stack.plugins.module_utils import _stack_inputs as si
from ansible_collections.gpufleet.stack.plugins.module_utils import _stack_rules_fw as rules

MATRIX_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "compat_matrix.yml")
EXTRA_VAR = "gpufleet_compat_matrix_extra"
AGE_VAR = "gpufleet_compat_matrix_max_age"

ARGUMENT_SPEC = {
    "versions": {"type": "dict"},
    "installed": {"type": "dict"},
    "expect": {"type": "dict"},
    "strict": {"type": "bool", "default": False},
    "matrix_extra": {"type": "list", "elements": "dict"},
    "matrix_max_age": {"type": "raw"},  # checked by max_age_days: ASCII digits only, 1-3650
    "python_envs": {"type": "list", "elements": "path", "default": []},
    "gpus": {"type": "list", "elements": "raw"},
}


# libyaml's parser where PyYAML has it: the same safe constructor, about 10x faster than the pure-Python one. Ansible
# forks a worker per task and host, so the data files are parsed once per task that reads them (the matrix by the
# play's preflight and by each stack_assert, the schema and the roles' argument specs by every role's own check).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path):
    """A data file shipped with the collection, parsed as yaml.safe_load would."""
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=_SAFE_LOADER)  # a safe loader, C or Python


@functools.lru_cache(maxsize=4)
def _read_matrix(path, mtime):  # pylint: disable=unused-argument  # mtime keys the cache: an edited file is re-read
    return read_yaml(path)


def matrix_data(path=MATRIX_FILE):
    """The shipped matrix file, parsed once per worker process (this action runs per host in verification).
    mx.build copies what it takes, so the cached data is never changed."""
    try:
        return _read_matrix(path, os.stat(path).st_mtime_ns)
    except (OSError, yaml.YAMLError) as err:
        raise AnsibleActionFail(f"cannot read the compatibility matrix {os.path.normpath(path)}: {err}") from err


def load_matrix(extra, path=MATRIX_FILE):
    data = matrix_data(path)
    try:
        return mx.build(data, extra)
    except mx.MatrixError as err:
        raise AnsibleActionFail(f"matrix_extra ({EXTRA_VAR}): {err}") from err


def max_age_days(given, inventory):
    """The days after the matrix's as_of before verdicts warn (matrix_max_age, else the inventory's
    gpufleet_compat_matrix_max_age, else 180); the inventory schema checks the variable before any host."""
    value = given if given is not None else inventory
    if value in (None, ""):
        return rules.MAX_AGE_DAYS
    if isinstance(value, bool) or not str(value).isascii() or not str(value).isdigit() or not 1 <= int(value) <= 3650:
        raise AnsibleActionFail(f"{AGE_VAR} (matrix_max_age) is {value!r}: give whole days from 1 to 3650, e.g. 180")
    return int(value)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC, mutually_exclusive=[("versions", "installed")]
        )
        extra = args["matrix_extra"]
        if extra is None:
            extra = self._templar.template(task_vars.get(EXTRA_VAR)) or []
        matrix = load_matrix(extra)
        max_age = max_age_days(args["matrix_max_age"], self._templar.template(task_vars.get(AGE_VAR)))
        try:
            si.check_expect(args["expect"])
            if args["versions"] is not None:
                stack = si.from_versions(args["versions"])
            elif args["installed"] is not None:
                # Facts gathered on the host in this play (gpu_facts stack: true): judged here, no module run.
                stack = si.from_installed(args["installed"])
            else:
                facts = self._execute_module(
                    module_name="gpufleet.stack.stack_facts",
                    module_args={"python_envs": args["python_envs"]},
                    task_vars=task_vars,
                )
                if facts.get("failed"):
                    return dict(result, **facts)
                result["ansible_facts"] = facts.get("ansible_facts", {})
                stack = si.from_installed(result["ansible_facts"].get("gpufleet_installed"))
            if args["gpus"] is not None:
                stack["gpus"] = si.gpus(args["gpus"])
        except si.InputError as err:
            raise AnsibleActionFail(str(err)) from err
        checks = rules.evaluate(matrix, stack, args["expect"], max_age=max_age)
        what = "the given versions (versions:)" if stack["origin"] == "versions" else "the stack installed on the host"
        compatible, message = rules.verdict(checks, strict=args["strict"], what=what)
        result.update(
            changed=False, compatible=compatible, checks=checks, evaluated=stack, matrix_as_of=matrix["as_of"]
        )
        # Printed without -v, once per distinct text however many hosts share it (a branch past its end of life, a
        # toolkit with a published CVE ...).
        warned = [f"[{c['rule']}] {c['message']}" for c in checks if c["status"] == "warning"]
        if warned:
            result["warnings"] = result.get("warnings", []) + warned
        if message:
            result.update(failed=True, msg=message)
        else:
            counts = {s: sum(c["status"] == s for c in checks) for s in ("ok", "warning", "unknown")}
            result["msg"] = "compatible: " + ", ".join(f"{n} {s}" for s, n in counts.items())
        return result
