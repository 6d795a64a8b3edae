#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: systemd_units
short_description: Several systemd units enabled (and started), read and fixed in one module run
version_added: "0.1.0"
description:
  - Reads every unit of O(units) (C(systemctl is-enabled), C(is-active)) and enables, and with O(started) starts,
    only those that are not yet. C(ansible.builtin.systemd_service) costs a module run per unit even when nothing
    changes.
  - O(daemon_reload) reloads systemd first (after a drop-in changed); the reload alone is not reported as a change.
  - A unit systemd does not know fails the module, naming it; in check mode it is reported as one to enable (its
    package's install may itself be only predicted).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  units:
    description: Unit names (C(nvidia-persistenced.service)).
    type: list
    elements: str
    required: true
  started:
    description:
      - Start the units that are not active. false leaves them as they are (a unit whose C(ConditionPathExists)
        is unmet stays inactive after a start, so asking would report a change on every run).
    type: bool
    default: false
  daemon_reload:
    description:
      - Run C(systemctl daemon-reload) first. Before it, the C(/dev/char) links of the NVIDIA device nodes are made
        where missing, so the reload does not cut running containers off their GPUs (nvidia-container-toolkit#48).
    type: bool
    default: false
  start_when_exists:
    description:
      - With O(started), start only when this path exists, read when the module runs (the units'
        C(ConditionPathExists), e.g. C(/dev/nvidiactl), which a driver install may just have made).
    type: path
  restarted:
    description:
      - Units to restart when active (their drop-in changed, so the running process has the old settings); a unit
        that is not active is started instead, when O(started).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Reads and reports what it would enable or start; changes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: ansible.builtin.systemd_service
"""

EXAMPLES = r"""
- name: Enable the GPU units, start them where the driver's device exists
  gpufleet.stack.systemd_units:
    units: [nvidia-persistenced.service, nvidia-fabricmanager.service]
    started: "{{ device_present }}"
"""

RETURN = r"""
units:
  description:
    - "Each unit: C(name), C(enabled) and C(active) as read, and C(actions) taken (C(enable), C(start),
      C(restart))."
  returned: always
  type: list
  elements: dict
dev_char_links:
  description: The C(/dev/char) links made before the daemon-reload (would be, in check mode).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.dev_char import ensure_links


def read_states(module, systemctl, units):
    """{unit: (is-enabled answer, is-active answer)}; a unit systemd does not know is 'not-found'."""
    states = {}
    for unit in units:
        _rc, enabled, _err = module.run_command([systemctl, "is-enabled", unit])
        _rc, active, _err = module.run_command([systemctl, "is-active", unit])
        states[unit] = (enabled.strip() or "not-found", active.strip() or "unknown")
    return states


def actions(enabled, active, started):
    """What a unit needs: enable unless enabled (static and alias units count as enabled), start when asked."""
    todo = [] if enabled in ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated") else ["enable"]
    return todo + (["start"] if started and active != "active" else [])


def main():
    module = AnsibleModule(
        argument_spec={
            "units": {"type": "list", "elements": "str", "required": True},
            "started": {"type": "bool", "default": False},
            "daemon_reload": {"type": "bool", "default": False},
            "restarted": {"type": "list", "elements": "str", "default": []},
            "start_when_exists": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params
    systemctl = module.get_bin_path("systemctl", required=True)
    links = []
    if p["daemon_reload"]:
        links = ensure_links(check_mode=module.check_mode)
        if not module.check_mode:
            module.run_command([systemctl, "daemon-reload"], check_rc=True)
    results = []
    start = p["started"] and (not p["start_when_exists"] or os.path.exists(p["start_when_exists"]))
    for unit, (enabled, active) in read_states(module, systemctl, p["units"]).items():
        if enabled == "not-found" and not module.check_mode:
            module.fail_json(msg=f"systemd has no unit {unit} (is its package installed?)", units=results)
        todo = actions(enabled, active, start)
        if unit in p["restarted"] and active == "active":
            todo.append("restart")
        for verb in todo if not module.check_mode else []:
            rc, out, err = module.run_command([systemctl, verb, unit])
            if rc != 0:
                module.fail_json(msg=f"systemctl {verb} {unit} failed ({rc}): {(err or out).strip()}", units=results)
        results.append({"name": unit, "enabled": enabled, "active": active, "actions": todo})
    module.exit_json(changed=bool(links) or any(r["actions"] for r in results), units=results, dev_char_links=links)


if __name__ == "__main__":
    main()
