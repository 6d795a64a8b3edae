# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for gpufleet.stack.stack_assert (documented in plugins/modules/stack_assert.py).

An action plugin, not a module, because the matrix file ships with the collection on the controller and
`versions:` must be checkable before any host is contacted. Without `versions:` it runs stack_facts on the host.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import data_files as files

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


def load_matrix(extra):
    try:
        return engine.build_matrix(files.matrix_data(), extra)
    except files.DataError as err:
        raise AnsibleActionFail(str(err)) from err
    except engine.MatrixError as err:
        raise AnsibleActionFail(f"matrix_extra ({files.EXTRA_VAR}): {err}") from err


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
            extra = self._templar.template(task_vars.get(files.EXTRA_VAR)) or []
        matrix = load_matrix(extra)
        try:
            max_age = files.max_age_days(args["matrix_max_age"], self._templar.template(task_vars.get(files.AGE_VAR)))
        except files.DataError as err:
            raise AnsibleActionFail(str(err)) from err
        try:
            engine.check_expect(args["expect"])
            if args["versions"] is not None:
                stack = engine.from_versions(args["versions"])
            elif args["installed"] is not None:
                # Facts gathered on the host in this play (gpu_facts stack: true): judged here, no module run.
                stack = engine.from_installed(args["installed"])
            else:
                facts = self._execute_module(
                    module_name="gpufleet.stack.stack_facts",
                    module_args={"python_envs": args["python_envs"]},
                    task_vars=task_vars,
                )
                if facts.get("failed"):
                    return dict(result, **facts)
                result["ansible_facts"] = facts.get("ansible_facts", {})
                stack = engine.from_installed(result["ansible_facts"].get("gpufleet_installed"))
            if args["gpus"] is not None:
                stack["gpus"] = engine.gpus(args["gpus"])
        except engine.InputError as err:
            raise AnsibleActionFail(str(err)) from err
        checks = engine.evaluate(matrix, stack, args["expect"], max_age=max_age)
        what = "the given versions (versions:)" if stack["origin"] == "versions" else "the stack installed on the host"
        compatible, message = engine.verdict(checks, strict=args["strict"], what=what)
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
