# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every host's inventory values against data/inventory_schema.yml, and one report of every problem. Pure functions:
the action plugin gpufleet.stack.inventory_check reads the values and the files."""

from __future__ import annotations

import json
import re

from ansible_collections.gpufleet.stack.plugins.module_utils._common import schema as sc

MAX_HOSTS_NAMED = 4
# An inventory host name becomes a Slurm NodeName, file names on the controller (fact cache, upgrade records) and
# rows of the reports: a name, an FQDN or an IP address, nothing a shell, a file system or a page reads differently.
HOST_NAME = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_.:-]{0,252}")


def host_name_problems(host):
    """The inventory's own name for a host, checked as a value is."""
    if isinstance(host, str) and HOST_NAME.fullmatch(host) and ".." not in host:
        return []
    return [
        f"the inventory host name {sc.shown(host)} is not a host name: it becomes a Slurm node name, file names on "
        "the controller and rows of the reports, so it may hold only letters, digits, '.', '_', '-' and ':' and "
        "must not start with '-' or '.'; name the host so and set its address in ansible_host"
    ]


def role_prefixes(role_specs):
    return tuple(f"{role}_" for role in role_specs)


def argspec_to_spec(option):
    """A role's argument_specs option as a schema spec: its type, element type and choices."""
    types = {"str": "str", "bool": "bool", "int": "int", "list": "list", "dict": "dict", "path": "path"}
    spec = {"type": types.get(option.get("type", "str"), "any")}
    if spec["type"] == "str":
        spec["number_ok"] = True  # Ansible turns a number into the string a str option wants
    if option.get("choices") and spec["type"] in ("str", "int"):
        spec["choices"] = option["choices"]
    if spec["type"] == "list":
        spec["elements"] = argspec_to_spec({"type": option.get("elements", "raw"), "choices": option.get("choices")})
    return spec


def spec_for(schema, role_specs, name):
    """(spec, None) for a variable the collection reads; ("skip", None) for one it sets itself; (None, known)."""
    if name in schema["variables"]:
        return schema["variables"][name], None
    if name in schema["role_variables"]:
        return sc.resolve_like(schema, schema["role_variables"][name]), None
    for options in role_specs.values():
        if name in options:
            return argspec_to_spec(options[name]), None
    if name in schema["not_checked"]:
        return "skip", None
    known = [*schema["variables"], *(n for options in role_specs.values() for n in options)]
    return None, known


def role_variable_where(schema, name, from_default):
    """How to name a role variable in a message: with the inventory variable its default took the value from
    (schema `from`, or the `like` it borrows its spec from) when the role's default is in use, else itself."""
    spec = schema["role_variables"][name]
    source = spec.get("from") or spec.get("like")
    return f"{name} (from {source})" if from_default and source else name


def wanted(name, prefixes):
    """Whether a host variable is one of this collection's (gpufleet_* or a role's prefix, role_prefixes())."""
    return name.startswith("gpufleet_") or name.startswith(prefixes)


def later_pattern(role_specs):
    """What an undefined value may wait for, legitimately: a fact (ansible_*), `vars`, or a role's variable, all
    known only when the play runs on the host. Any other undefined name is a typo."""
    names = sorted(n for options in role_specs.values() for n in options)
    return re.compile(r"\b(ansible_\w+|vars\b|" + "|".join(map(re.escape, names)) + r")\b")


def needs_stack(schema, values, playbook):
    """Whether the playbook needs the host's desired stack: upgrade.yml in rollback mode returns each host to the
    stack recorded on it instead."""
    rollback = playbook == "upgrade" and values.get("gpufleet_upgrade_mode") == "rollback"
    return schema["playbooks"][playbook]["stack"] and not rollback


def check_host(schema, role_specs, values, playbook, deferred=frozenset()):
    """Every problem of one host's variables (only those the inventory sets: {name: value}); `deferred` names
    variables that are set but wait for facts, so they cannot be checked here."""
    problems = []
    for name in sorted(values):
        spec, known = spec_for(schema, role_specs, name)
        if spec == "skip":
            continue
        if spec is None:
            problems.append(
                f"{name} is not a variable of this collection{sc.did_you_mean(name, known)}: rename or remove it "
                "(data/inventory_schema.yml and each role's meta/argument_specs.yml list them)"
            )
            continue
        problems += sc.check(spec, values[name], name, schema["formats"])
    if needs_stack(schema, values, playbook) and "gpufleet_stack" not in deferred:
        problems += _needs(schema, values, deferred)
    return problems + _switch_needs(schema, values, deferred)


def _switch_needs(schema, values, deferred):
    """A switch set true needs what it works through (a spec's `needs`: {variable: [allowed values] or "set"}):
    upgrade.yml's job across nodes needs Slurm and the training environment's Python."""
    problems = []
    for name, spec in schema["variables"].items():
        needs = spec.get("needs") or {}
        if name not in values or not sc.is_true(values[name]) or sc.check(spec, values[name], name, schema["formats"]):
            continue
        for other, allowed in needs.items():
            if other in deferred:
                continue
            value = values.get(other, (schema["variables"].get(other) or {}).get("default", ""))
            if allowed == "set" and value in ("", None, [], {}):
                problems.append(
                    f"{name} is true, which needs {other}, and {other} is not set: set it, or {name}: false"
                )
            elif allowed != "set" and value not in allowed:
                wanted = " or ".join(allowed)
                problems.append(
                    f"{name} is true, which needs {other}: {wanted}, and {other} is {sc.shown(value)}: set {other}: "
                    f"{wanted}, or {name}: false"
                )
    return problems


def _needs(schema, values, deferred):
    """Every listed component has the stack key it installs from, or its role's own variable is set."""
    if "gpufleet_components" in deferred:
        return []  # built from facts: which components is known only on the host
    stack = values.get("gpufleet_stack", {})
    components = values.get("gpufleet_components", schema["variables"]["gpufleet_components"]["default"])
    if not isinstance(stack, dict) or (not stack and "gpufleet_stack" in values) or not isinstance(components, list):
        return []  # already reported by the type checks
    channel = values.get("gpufleet_nvidia_channel", "network")
    problems = []
    # Others (unknown names, lists, dictionaries): refused by the type check.
    for component in (c for c in components if isinstance(c, str) and c in schema["component_roles"]):
        own_channel = values.get(f"{schema['component_roles'][component]}_channel", channel)
        skips = schema["distro_skips"].get(component, []) if own_channel == "distro" else []
        for path, role_variable in schema["component_needs"].get(component, {}).items():
            key = path.split(".", 1)[1]
            if path in skips:
                continue
            if key not in stack and role_variable not in values and role_variable not in deferred:
                what = (
                    "gpufleet_stack has no" if "gpufleet_stack" in values else "gpufleet_stack is not set, so it has no"
                )
                problems.append(
                    f"{what} {key}, which the component {component} (gpufleet_components) installs from: add "
                    f"gpufleet_stack.{key} (or set {role_variable}), or leave {component} out of gpufleet_components"
                )
    return problems


def hosts_text(hosts):
    hosts = sorted(hosts)
    if len(hosts) <= MAX_HOSTS_NAMED:
        return ", ".join(hosts)
    return f"{', '.join(hosts[:MAX_HOSTS_NAMED])} and {len(hosts) - MAX_HOSTS_NAMED} more"


def grouped(problems_by_host):
    """[(hosts, message)]: each distinct message once, with every host that has it, in first-seen order."""
    seen = {}
    for host, problems in problems_by_host.items():
        for problem in problems:
            seen.setdefault(problem, []).append(host)
    return [(hosts, problem) for problem, hosts in seen.items()]


def report(problems_by_host):
    """The one failure message for every problem of every host, or None."""
    groups = grouped(problems_by_host)
    if not groups:
        return None
    hosts = {h for h, problems in problems_by_host.items() if problems}
    problems = f"{len(groups)} problem{'s' if len(groups) != 1 else ''}"
    head = (
        f"{problems} in the inventory of {len(hosts)} host{'s' if len(hosts) != 1 else ''}"
        " (checked on the controller; no host was contacted):"
    )
    return head + "\n" + "\n".join(f"- {hosts_text(h)}: {p}" for h, p in groups)


def distinct(items_by_host):
    """{json key: (item, [hosts])}: hosts that share one item (a desired stack) are evaluated once."""
    out = {}
    for host, item in items_by_host.items():
        try:
            key = json.dumps(item, sort_keys=True, default=str)
        except TypeError:  # keys of mixed types cannot be sorted
            key = repr(item)
        out.setdefault(key, (item, []))[1].append(host)
    return out
