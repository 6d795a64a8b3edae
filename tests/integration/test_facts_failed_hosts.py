"""A host whose facts cannot be gathered is not reported healthy from its cached facts (issue 30): playbooks/facts.yml
records when and why in the fact cache, the report shows that host critical with the reason and the age of the facts
it still shows, the run fails, and the next successful gathering clears the record. Runs on this machine under the
NVML simulator; the lost host is one whose SSH port refuses."""

import json
import sys

from _facts_run import facts_playbook

LOCAL = f"ansible_connection: local, ansible_python_interpreter: {sys.executable}"
GONE = (
    "ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_ssh_common_args: '-o ConnectTimeout=5'"
)


def facts_run(tmp_path, env, gone_vars):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(f"all:\n  hosts:\n    node-a: {{{LOCAL}}}\n    node-b: {{{gone_vars}}}\n")
    proc = facts_playbook(inventory, tmp_path / "report", env, "t4-x1", check=False)
    report = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    return proc, {row["host"]: row for row in report["rows"]}


def test_a_lost_host_is_critical_with_why_until_it_is_gathered_again(tmp_path, ansible_env):
    proc, rows = facts_run(tmp_path, ansible_env, LOCAL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows["node-b"]["health"] == "ok" and rows["node-b"]["facts_at"]
    first = rows["node-b"]["facts_at"]

    proc, rows = facts_run(tmp_path, ansible_env, GONE)
    assert proc.returncode != 0 and "UNREACHABLE" in proc.stdout, proc.stdout
    lost = rows["node-b"]
    assert lost["health"] == "critical" and lost["facts_at"] == first, lost
    assert lost["findings"][0]["what"].startswith("facts could not be gathered at "), lost["findings"]
    assert "unreachable, or a step before gpu_facts failed" in lost["findings"][0]["what"]
    assert f"the facts shown are from {first}" in lost["findings"][0]["what"]
    assert rows["node-a"]["health"] == "ok"
    (cache,) = (tmp_path / "facts").glob("*node-b")  # ansible-core names the file with its own prefix
    assert "unreachable, or a step before gpu_facts failed" in cache.read_text()

    proc, rows = facts_run(tmp_path, ansible_env, LOCAL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rows["node-b"]["health"] == "ok" and rows["node-b"]["findings"] == []
