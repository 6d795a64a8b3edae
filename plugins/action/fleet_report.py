# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of gpufleet.stack.fleet_report: hostvars (cached facts) in, report files out."""

from __future__ import annotations

import datetime
import json
import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.report import build_rows, summary
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.report_render import (
    render_html,
    render_markdown,
)

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "dest": {"type": "path", "required": True},
}
# Facts the report reads: GPU and stack facts, and the outcome of site.yml's verification and of upgrade.yml.
REPORTED_FACTS = (
    "gpufleet_gpu",
    "gpufleet_installed",
    "gpufleet_verify",
    "gpufleet_upgrade",
    "gpufleet_validation",
    # The last job across nodes the host took part in (validate.yml; upgrade.yml's gpufleet_upgrade_multinode).
    "gpufleet_multinode",
    # playbooks/facts.yml's record of a host whose facts could not be gathered (cleared by gpu_facts).
    "gpufleet_gather_failed",
)
FILES = ("fleet-report.json", "fleet-report.md", "fleet-report.html")


def _host_data(hostvars, host, template):
    """Only what the report reads. The host's variables are taken raw (hostvars.raw_get): templating every host's
    facts (tens of KiB each) is what made a report of 5,000 hosts take a minute; facts hold no templates, and the two
    inventory values that may are templated alone."""
    hv = hostvars.raw_get(host)
    facts = hv.get("ansible_facts") or {}
    return {
        # set_fact (cacheable) results such as gpufleet_verify are host variables, not ansible_facts.
        "ansible_facts": {k: facts[k] if k in facts else hv.get(k) for k in REPORTED_FACTS if k in facts or k in hv},
        "gpufleet_stack": template(hv.get("gpufleet_stack")),
        # Drift is measured against what the listed components install, as verification does.
        "gpufleet_components": template(hv.get("gpufleet_components")),
    }


def _templating_once(templar):
    """templar.template, once per distinct value object: hosts of one group share their group's value (the same
    object in every host's raw variables), so 5,000 hosts in a few groups template a few values, not 10,000. Each
    value is templated with the report task's variables either way; the memo keeps the value alive so its id stays
    its own."""
    memo = {}

    def template(value):
        if value is None or isinstance(value, (str, int, float, bool)):
            return templar.template(value)
        if id(value) not in memo:
            memo[id(value)] = (value, templar.template(value))
        return memo[id(value)][1]

    return template


def _without_times(rows):
    """Rows without when each host's facts are from (None stays None: no report yet)."""
    return None if rows is None else [{k: v for k, v in row.items() if k != "facts_at"} for row in rows]


def _report_json(generated, summary_, rows):
    """The JSON report with one host per line: readable, diffable, and written by json's C encoder (indent=2 takes
    the pure-Python one, 4x slower for 5,000 hosts)."""
    lines = ",\n".join(json.dumps(row, sort_keys=True) for row in rows)
    head = json.dumps({"generated": generated, "summary": summary_}, sort_keys=True)[:-1]
    return f'{head}, "rows": [\n{lines}\n]}}\n'


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        hostvars = task_vars["hostvars"]
        unknown = [h for h in args["hosts"] if h not in hostvars]
        if unknown:
            raise AnsibleActionFail(f"hosts names {', '.join(unknown)}, not in the inventory: pass groups['all']")
        template = _templating_once(self._templar.copy_with_new_env(available_variables=task_vars))
        rows = build_rows({h: _host_data(hostvars, h, template) for h in args["hosts"]})
        dest = os.path.abspath(args["dest"])  # relative to where ansible-playbook runs
        json_path = os.path.join(dest, FILES[0])
        previous = None
        if os.path.exists(json_path):
            with open(json_path, encoding="utf-8") as stream:
                previous = json.load(stream).get("rows")
        result.update(
            # A row's facts time moves on every gathering: the files follow it, but only a change in what the fleet
            # is counts as changed (a converged fleet's second run is idempotent).
            changed=_without_times(previous) != _without_times(rows),
            summary=summary(rows),
            files=[os.path.join(dest, name) for name in FILES],
            unhealthy=[r["host"] for r in rows if r["health"] in ("critical", "warning")],
            drifted=[r["host"] for r in rows if r["drift"]],
        )
        if self._task.check_mode or previous == rows:
            return result
        generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        os.makedirs(dest, exist_ok=True)
        contents = (
            _report_json(generated, result["summary"], rows),
            render_markdown(rows, generated),
            render_html(rows, generated),
        )
        for name, text in zip(FILES, contents, strict=True):
            with open(os.path.join(dest, name), "w", encoding="utf-8") as stream:
                stream.write(text)
        return result
