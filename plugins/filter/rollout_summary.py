# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A rolling upgrade's hosts by outcome (module_utils/_controller/rollout.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_summary
short_description: The hosts of a rolling upgrade by outcome, the ones it did not reach last
version_added: "0.2.0"
description:
  - One line per outcome, C(done), C(at-target), C(failed/<step>), C(blocked/drain), C(skipped/drain),
    C(reboot-required/reboot), and C(not reached) for hosts of batches that never started.
options:
  _input:
    description: Every host of the rolling play.
    type: list
    elements: str
    required: true
  outcomes:
    description: Host to outcome.
    type: dict
    required: true
"""

EXAMPLES = r"""
msg: "{{ hosts | gpufleet.stack.rollout_summary(outcomes) }}"
"""

RETURN = r"""
_value:
  description: The lines.
  type: list
  elements: str
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.rollout import summary


class FilterModule:
    def filters(self):
        return {"rollout_summary": summary}
