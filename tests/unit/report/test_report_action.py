"""The fleet_report action's own pieces: the JSON file's layout and templating each shared inventory value once."""

import json

from ansible_collections.gpufleet.stack.plugins.action.fleet_report import (
    _host_data,
    _report_json,
    _templating_once,
    _without_times,
)


class CountingTemplar:
    def __init__(self):
        self.calls = 0

    def template(self, value):
        self.calls += 1
        return {"templated": value} if isinstance(value, dict) else value


def test_the_json_report_is_the_same_document_with_one_host_per_line():
    rows = [
        {"host": f"gpu-{i}", "drift": ["CUDA 12.8 not installed (have none)"], "gpus": [{"temp": 31}]} for i in (1, 2)
    ]
    text = _report_json("2026-12-02 09:00 UTC", {"hosts": 2, "ok": 0}, rows)
    assert json.loads(text) == {"generated": "2026-12-02 09:00 UTC", "summary": {"hosts": 2, "ok": 0}, "rows": rows}
    assert [line for line in text.splitlines() if '"host": ' in line] == [
        json.dumps(row, sort_keys=True) + "," * (i == 0) for i, row in enumerate(rows)]  # fmt: skip


def test_an_empty_fleet_is_still_valid_json():
    assert json.loads(_report_json("now", {"hosts": 0}, []))["rows"] == []


def test_a_group_value_shared_by_every_host_is_templated_once():
    templar, group_stack, own_stack = CountingTemplar(), {"driver": "{{ driver }}"}, {"driver": "570.133.20"}
    template = _templating_once(templar)
    results = [template(group_stack) for _host in range(5000)] + [template(own_stack), template(None)]
    assert templar.calls == 3
    assert results[0] == {"templated": group_stack} and results[5000] == {"templated": own_stack}


def test_plain_values_are_templated_each_time():
    templar = CountingTemplar()
    template = _templating_once(templar)
    assert [template("{{ x }}"), template("{{ x }}")] == ["{{ x }}", "{{ x }}"] and templar.calls == 2


def test_newer_facts_alone_are_not_a_change():
    """Every gathering stamps a row's facts time: a converged fleet's second run must still be idempotent."""
    before = [{"host": "gpu-1", "health": "ok", "facts_at": "2026-12-06T04:00:00Z"}]
    fresher = [{"host": "gpu-1", "health": "ok", "facts_at": "2026-12-06T05:00:00Z"}]
    hotter = [{"host": "gpu-1", "health": "critical", "facts_at": "2026-12-06T05:00:00Z"}]
    assert _without_times(before) == _without_times(fresher)
    assert _without_times(before) != _without_times(hotter)
    assert _without_times(None) is None


class RawHostvars(dict):
    def raw_get(self, host):
        return self[host]


def test_the_outcomes_playbooks_keep_as_host_variables_reach_the_report():
    """set_fact (cacheable) outcomes are host variables in the run that set them and facts in the cache after: the
    report reads both, the job across nodes among them (it was left out, and no row showed it)."""
    multinode = {"status": "passed", "nodes": ["gpu-1", "gpu-2"], "checks": [], "reservation": ""}
    hostvars = RawHostvars(
        {"gpu-1": {"ansible_facts": {"gpufleet_validation": {"status": "passed"}}, "gpufleet_multinode": multinode}}
    )
    data = _host_data(hostvars, "gpu-1", lambda value: value)
    assert data["ansible_facts"] == {"gpufleet_validation": {"status": "passed"}, "gpufleet_multinode": multinode}
