# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade playbook's record of a host's outcome (module_utils/_controller/upgrade.py), as filters."""

from __future__ import annotations

DOCUMENTATION = r"""
name: upgrade_failure
short_description: What a failed step of a host's upgrade records, and whether the node is marked failed
version_added: "0.2.0"
description:
  - From the failed task's name, its result and the upgrade step, returns the outcome (C(failed/<gate or step>),
    C(blocked/drain), C(skipped/drain), C(reboot-required/reboot), C(unreachable/<step>)), the message, whether
    node_drain's mark_failed runs and the drain reason it gets.
options:
  _input:
    description: The failed task's name.
    type: str
    required: true
  result:
    description: The failed task's result (its C(msg), and C(failed_gate) for the readiness gate).
    type: dict
    required: true
  step:
    description: The upgrade step that failed (drain, install, reboot, gate, verify, scheduler).
    type: str
    required: true
  skip:
    description: C(status) and C(message) when the drain step skipped the node.
    type: dict
  status:
    description: C(reboot-required) when the run stopped for a reboot it may not do.
    type: str
  drain:
    description: The host's C(node_drain_status).
    type: dict
  lost:
    description:
      - The host does not answer any more (the rescue pings it). The outcome is then C(unreachable/<step>), and
        nothing more is done on the host.
    type: bool
    default: false
  delegate:
    description: C(node_drain_slurm_delegate_to); empty runs Slurm's commands on the node itself.
    type: str
    default: ""
  others:
    description:
      - The run's other hosts that still answer. Slurm's commands for a lost node run on the first of them when no
        delegate is set (every Slurm node has slurm.conf and the munge key); with none, the node keeps its drain.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
failure: "{{ ansible_failed_task.name | gpufleet.stack.upgrade_failure(ansible_failed_result, 'gate') }}"
"""

RETURN = r"""
_value:
  description:
    - C(status), C(step), C(outcome), C(message), C(mark_failed), C(drain_failure), C(node_state), C(lost).
    - C(slurm_host), where node_drain's Slurm commands run (empty for the node itself).
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.upgrade import failure


class FilterModule:
    def filters(self):
        return {"upgrade_failure": failure}
