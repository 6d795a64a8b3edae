# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade playbook's one-word outcome of a host (module_utils/_controller/upgrade.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: upgrade_outcome
short_description: One word for a host's upgrade state, for the report
version_added: "0.2.0"
description:
  - C(done) and C(running) as they are; any other status with its step, C(failed/gpus), C(blocked/drain).
options:
  _input:
    description: The status (done, running, failed, blocked, skipped, reboot-required).
    type: str
    required: true
  step:
    description: The step or gate it stopped at.
    type: str
    required: true
"""

EXAMPLES = r"""
outcome: "{{ 'failed' | gpufleet.stack.upgrade_outcome('gpus') }}"  # failed/gpus
"""

RETURN = r"""
_value:
  description: The outcome.
  type: str
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.upgrade import outcome


class FilterModule:
    def filters(self):
        return {"upgrade_outcome": outcome}
