"""The inventory checker (_controller/inventory.py) at its edges: a role's argument_specs turned into schema specs
type by type, what counts as one of the collection's variables, what an undefined value may wait for, rollback's
stack, and whole messages."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import inventory as inv

from .test_schema import ROLE_SPECS, SCHEMA


def test_a_bad_host_name_is_refused_with_the_whole_reason_and_fix():
    assert inv.host_name_problems("gpu-01.example.com") == []
    assert inv.host_name_problems("10.0.0.1") == []
    assert inv.host_name_problems("a..b") != []
    (problem,) = inv.host_name_problems("-rf")
    assert problem == (
        'the inventory host name "-rf" is not a host name: it becomes a Slurm node name, file names on the '
        "controller and rows of the reports, so it may hold only letters, digits, '.', '_', '-' and ':' and must not "
        "start with '-' or '.'; name the host so and set its address in ansible_host"
    )


@pytest.mark.parametrize(
    ("option", "spec"),
    [
        ({}, {"type": "str", "number_ok": True}),  # argument_specs' default type is str
        ({"type": "str", "choices": ["a", "b"]}, {"type": "str", "number_ok": True, "choices": ["a", "b"]}),
        ({"type": "int", "choices": [1, 2]}, {"type": "int", "choices": [1, 2]}),
        ({"type": "bool", "choices": [True]}, {"type": "bool"}),  # choices kept for str and int only
        ({"type": "path"}, {"type": "path"}),
        ({"type": "dict"}, {"type": "dict"}),
        ({"type": "raw"}, {"type": "any"}),
        ({"type": "float"}, {"type": "any"}),  # a type the schema has no check for: not judged
        ({"type": "list"}, {"type": "list", "elements": {"type": "any"}}),
        (
            {"type": "list", "elements": "str", "choices": ["x", "y"]},
            {"type": "list", "elements": {"type": "str", "number_ok": True, "choices": ["x", "y"]}},
        ),
        ({"type": "list", "elements": "int"}, {"type": "list", "elements": {"type": "int"}}),
    ],
)
def test_argument_specs_become_schema_specs(option, spec):
    assert inv.argspec_to_spec(option) == spec


def test_a_role_option_is_checked_by_the_spec_its_argument_specs_give():
    role, options = next((r, o) for r, o in ROLE_SPECS.items() if o)
    name = next(n for n in options if n not in SCHEMA["variables"] and n not in SCHEMA["role_variables"])
    assert inv.spec_for(SCHEMA, ROLE_SPECS, name) == (inv.argspec_to_spec(options[name]), None), role


def test_which_variables_are_the_collections():
    prefixes = inv.role_prefixes({"nccl": {}, "rdma": {}})
    assert prefixes == ("nccl_", "rdma_")
    assert inv.wanted("gpufleet_stack", prefixes)
    assert inv.wanted("nccl_settings", prefixes) and inv.wanted("rdma_peermem", prefixes)
    assert not inv.wanted("gpufleetstack", prefixes)
    assert not inv.wanted("ncclx", prefixes)
    assert not inv.wanted("ansible_host", prefixes)


def test_what_an_undefined_value_may_wait_for():
    pattern = inv.later_pattern({"nccl": {"nccl_settings": {}, "nccl.x": {}}, "rdma": {"rdma_peermem": {}}})
    for text in ("{{ ansible_default_ipv4.address }}", "{{ vars['x'] }}", "{{ nccl_settings }}", "{{ rdma_peermem }}",
                 "{{ nccl.x }}"):  # fmt: skip
        assert pattern.search(text), text
    for text in ("{{ gpufleet_typo }}", "{{ myvars }}", "{{ varsity }}", "{{ nccl_settings2 }}", "{{ ncclx }}"):
        assert not pattern.search(text), text


def test_only_upgrades_rollback_does_without_a_stack():
    assert inv.needs_stack(SCHEMA, {}, "upgrade") is True
    assert inv.needs_stack(SCHEMA, {"gpufleet_upgrade_mode": "rollback"}, "upgrade") is False
    assert inv.needs_stack(SCHEMA, {"gpufleet_upgrade_mode": "upgrade"}, "upgrade") is True
    site = inv.needs_stack(SCHEMA, {"gpufleet_upgrade_mode": "rollback"}, "site")
    assert site == bool(SCHEMA["playbooks"]["site"]["stack"])


def test_an_unknown_variable_is_named_with_where_the_known_ones_are_listed():
    problems = inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_stak": {}}, "facts")
    assert problems[0].startswith("gpufleet_stak is not a variable of this collection (did you mean gpufleet_stack?)")
    assert problems[0].endswith(
        ": rename or remove it (data/inventory_schema.yml and each role's meta/argument_specs.yml list them)"
    )
    # Variables the collection sets itself are not the user's to get wrong.
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_gpu": "anything"}, "facts") == []


def test_a_switch_names_each_setting_it_needs():
    name, spec = next((n, s) for n, s in SCHEMA["variables"].items() if s.get("needs"))
    needs = spec["needs"]
    problems = inv.check_host(SCHEMA, ROLE_SPECS, {name: True}, "facts")
    for other, allowed in needs.items():
        if allowed == "set":
            assert f"{name} is true, which needs {other}, and {other} is not set: set it, or {name}: false" in problems
        else:
            start = f"{name} is true, which needs {other}: {' or '.join(allowed)}, and {other} is "
            assert any(p.startswith(start) for p in problems), problems
    # Deferred (set, but waiting for facts): not judged here.
    assert inv.check_host(SCHEMA, ROLE_SPECS, {name: True}, "facts", deferred=frozenset(needs)) == []


def test_up_to_four_hosts_are_named_then_how_many_more():
    assert inv.hosts_text(["d", "b", "a", "c"]) == "a, b, c, d"
    assert inv.hosts_text(["e", "d", "b", "a", "c"]) == "a, b, c, d and 1 more"
    assert inv.hosts_text(["one"]) == "one"


def test_the_reports_head_counts_problems_and_hosts_in_the_singular_and_plural():
    one = inv.report({"gpu-01": ["x is bad"]})
    assert one == (
        "1 problem in the inventory of 1 host (checked on the controller; no host was contacted):\n- gpu-01: x is bad"
    )
    two = inv.report({"gpu-01": ["x is bad", "y is bad"], "gpu-02": ["x is bad"], "gpu-03": []})
    assert two.splitlines() == [
        "2 problems in the inventory of 2 hosts (checked on the controller; no host was contacted):",
        "- gpu-01, gpu-02: x is bad",
        "- gpu-01: y is bad",
    ]


def test_hosts_with_one_stack_are_evaluated_once_whatever_its_key_order():
    found = inv.distinct({"a": {"driver": "570", "cuda": "12.8"}, "b": {"cuda": "12.8", "driver": "570"}, "c": {}})
    assert [hosts for _item, hosts in found.values()] == [["a", "b"], ["c"]]
    mixed = inv.distinct({"a": {1: "x", "k": "y"}, "b": {1: "x", "k": "y"}})  # keys json cannot sort
    assert [hosts for _item, hosts in mixed.values()] == [["a", "b"]]
