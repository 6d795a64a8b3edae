# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for gpufleet.stack.inventory_check (documented in plugins/modules/inventory_check.py).

Runs once, on the controller, for every host of the play: reads each host's variables from hostvars, checks them
against data/inventory_schema.yml and the roles' argument_specs, then checks each distinct desired stack against
the compatibility matrix once. No host is contacted.
"""

from __future__ import annotations

import functools
import glob
import json
import os

import yaml
from ansible.errors import AnsibleActionFail, AnsibleError, AnsibleUndefinedVariable
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.stack.plugins.module_utils._common import schema as sc
from ansible_collections.gpufleet.stack.plugins.module_utils._compat import engine
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import inventory as inv
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.data_files import (
    AGE_VAR,
    EXTRA_VAR,
    DataError,
    matrix_data,
    max_age_days,
    read_yaml,
)

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCHEMA_FILE = os.path.join(ROOT, "data", "inventory_schema.yml")
UNKNOWN_HINT = (
    "unknown to the compatibility matrix: check the version, or add a row for it to gpufleet_compat_matrix_extra "
    "(the row kinds are described at the top of data/compat_matrix.yml)"
)

ARGUMENT_SPEC = {
    "playbook": {"type": "str", "choices": ["site", "upgrade", "facts", "monitoring", "validate"]},
    "hosts": {"type": "list", "elements": "str"},
    "role": {"type": "str"},
    "skip": {"type": "list", "elements": "str", "default": []},
    "os_families": {"type": "list", "elements": "str", "default": []},
    "distributions": {"type": "list", "elements": "str", "default": []},
    "os_fix": {"type": "str", "default": ""},
    "gather_subset": {"type": "list", "elements": "str", "default": ["min"]},
}


@functools.lru_cache(maxsize=1)
def load_schema():
    return read_yaml(SCHEMA_FILE)


@functools.lru_cache(maxsize=1)
def load_role_specs():
    """{role: its argument_specs options} of every role in the collection."""
    specs = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        specs[path.split(os.sep)[-3]] = read_yaml(path)["argument_specs"]["main"]["options"]
    return specs


def host_values(templar, hostvars, host, prefixes, later, *, skip=frozenset()):
    """({name: value} of the collection's variables the inventory sets for host, [problems templating them],
    {name: what it waits for}). Templated with the host's variables and hostvars, as a play would. A value that
    waits for what only the play knows (inv.later_pattern: facts, role variables) is left to its role's check on the
    host rather than refused; any other undefined name is a problem (a typo)."""
    values, problems, deferred = {}, [], {}
    raw = hostvars.raw_get(host)
    env = templar.copy_with_new_env(available_variables={**raw, "hostvars": hostvars})
    # What the collection sets itself (skip: the schema's not_checked, the cached facts gpufleet_gpu and
    # gpufleet_installed among them, tens of KiB a host) is neither templated nor checked.
    for name in [n for n in raw if inv.wanted(n, prefixes) and n not in skip]:
        try:
            values[name] = env.template(raw[name])
        except AnsibleUndefinedVariable as err:
            waits = later.search(json.dumps(raw[name], default=str))
            if waits:
                deferred[name] = waits.group(1)
            else:
                problems.append(f"{name} cannot be evaluated: {sc.redact(str(err)).splitlines()[0]}")
        except AnsibleError as err:
            problems.append(f"{name} cannot be evaluated: {sc.redact(str(err)).splitlines()[0]}")
    return values, problems, deferred


def matrix_problems(groups):
    """(problems by host, warnings): each distinct (stack, extra rows, strict, max age) checked once."""
    problems, warnings = {}, []
    if not groups:
        return problems, warnings  # facts.yml, rollback: no stack to check, no matrix to read
    data = matrix_data()
    for (stack, extra, strict, max_age), hosts in groups.values():
        try:
            matrix = engine.build_matrix(data, extra)
        except engine.MatrixError as err:
            for host in hosts:
                problems.setdefault(host, []).append(f"{EXTRA_VAR}: {err}")
            continue
        try:
            checks = engine.evaluate(matrix, engine.from_versions(stack), max_age=max_age_days(None, max_age))
        except engine.InputError as err:
            for host in hosts:
                problems.setdefault(host, []).append(f"gpufleet_stack: {err}")
            continue
        ok, message = engine.verdict(checks, strict=strict, what="gpufleet_stack")
        for host in hosts if not ok else []:
            problems.setdefault(host, []).append(message.replace("\n- ", "\n    - "))
        for check in checks if ok else []:
            if check["status"] in ("warning", "unknown"):
                unknown = check["status"] == "unknown" and EXTRA_VAR not in check["message"]
                hint = f"; {UNKNOWN_HINT}" if unknown else ""
                warnings.append(
                    f"{inv.hosts_text(hosts)}: {check['status']} [{check['rule']}] {check['message']}{hint}"
                )
    return problems, warnings


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC,
            mutually_exclusive=[("playbook", "role")],
            required_one_of=[("playbook", "role")],
        )
        try:
            schema, role_specs = load_schema(), load_role_specs()
        except (OSError, yaml.YAMLError, KeyError) as err:
            raise AnsibleActionFail(
                f"inventory_check: cannot read {SCHEMA_FILE} or the roles' argument_specs: {err}"
            ) from err
        if args["role"]:
            return self.check_role(result, schema, role_specs, args, task_vars)
        hosts = args["hosts"] or task_vars.get("ansible_play_hosts_all") or []
        prefixes, later = inv.role_prefixes(role_specs), inv.later_pattern(role_specs)
        skip = frozenset(schema["not_checked"])
        problems, stacks, deferred = {}, {}, {}
        for host in hosts:
            values, problems[host], waits = host_values(
                self._templar, task_vars["hostvars"], host, prefixes, later, skip=skip
            )
            for name, fact in waits.items():
                deferred.setdefault((name, fact), []).append(host)
            problems[host] += inv.host_name_problems(host)
            problems[host] += inv.check_host(schema, role_specs, values, args["playbook"], deferred=set(waits))
            # A host with problems (a malformed gpufleet_stack_strict among them) is not matched against the matrix.
            if not problems[host] and "gpufleet_stack" in values and inv.needs_stack(schema, values, args["playbook"]):
                strict = sc.is_true(values.get("gpufleet_stack_strict", False))
                age = values.get(AGE_VAR)
                stacks[host] = (values["gpufleet_stack"], values.get(EXTRA_VAR) or [], strict, age)
        groups = inv.distinct(stacks)
        try:
            found, warnings = matrix_problems(groups)
        except DataError as err:
            raise AnsibleActionFail(str(err)) from err
        for host, more in found.items():
            problems[host] += more
        result.update(changed=False, hosts=len(hosts), stacks=len(groups))
        warnings += [
            f"{inv.hosts_text(h)}: {name} uses {fact}, which is known only when the play runs on the host: its role "
            "checks it there"
            for (name, fact), h in deferred.items()
        ]
        if warnings:
            result["warnings"] = warnings
        message = inv.report(problems)
        if message:
            result.update(failed=True, msg=message)
        else:
            result["msg"] = f"{len(hosts)} hosts checked, {len(groups)} distinct desired stacks"
        return result

    def check_role(self, result, schema, role_specs, args, task_vars):
        """A role's variables as the role sees them (its defaults templated), for a role run alone or from a
        playbook: a value the role's default took from an inventory variable is named with it
        (nccl_version (from gpufleet_stack.nccl)); one set another way is named as it was set."""
        options = role_specs.get(args["role"], {})
        names = [n for n in schema["role_variables"] if n.startswith(f"{args['role']}_") and n not in args["skip"]]
        failure, problems, gathered = self.os_problems(args, task_vars)
        if failure:
            return dict(result, **failure)
        if gathered is not None:
            result["ansible_facts"] = gathered
        for name in names:
            raw = task_vars.get(name)
            try:
                value = self._templar.template(raw)
            except AnsibleError as err:
                problems.append(f"{name} cannot be evaluated: {sc.redact(str(err)).splitlines()[0]}")
                continue
            from_default = name in options and raw == options[name].get("default")
            where = inv.role_variable_where(schema, name, from_default)
            spec = sc.resolve_like(schema, schema["role_variables"][name])
            problems += sc.check(spec, value, where, schema["formats"])
        result.update(changed=False, checked=names)
        if problems:
            result.update(
                failed=True, msg=f"{args['role']} on {task_vars['inventory_hostname']}: " + "; ".join(problems)
            )
        else:
            result["msg"] = f"{len(names)} variables of {args['role']} checked"
        return result

    def os_problems(self, args, task_vars):
        """(setup's failed result or None, [problem] when the host's OS is not one the role supports, the facts
        gathered here or None). The role's minimal facts are gathered here, once, when the play has none, rather
        than by a task of its own."""
        if not (args["os_families"] or args["distributions"]):
            return None, [], None
        facts, gathered = task_vars.get("ansible_facts") or {}, None
        needed = ["os_family"] + (["virtualization_type"] if "virtual" in args["gather_subset"] else [])
        if any(key not in facts for key in needed):
            result = self._execute_module(
                module_name="ansible.builtin.setup",
                module_args={"gather_subset": args["gather_subset"]},
                task_vars=task_vars,
            )
            if result.get("failed"):
                return result, [], None
            facts = gathered = result.get("ansible_facts", {})

        def fact(key):  # setup's form (ansible_os_family) or the play's (os_family)
            return facts.get(f"ansible_{key}", facts.get(key, "?"))

        if (args["os_families"] and fact("os_family") not in args["os_families"]) or (
            args["distributions"] and fact("distribution") not in args["distributions"]
        ):
            release = f"{fact('distribution')} {fact('distribution_major_version')}"
            return None, [f"{release}: {args['os_fix'] or 'this role does not support it'}"], gathered
        return None, [], gathered
