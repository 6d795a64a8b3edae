# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a rolling upgrade stands before a batch (module_utils/_controller/rollout.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout_progress
short_description: One line saying where a rolling upgrade stands before a batch
version_added: "0.2.0"
description:
  - C(batch 3 of 10, gpu-21…gpu-30 (10 hosts); 20 of 100 done, 1 failed, 79 to go), from the play's hosts, the current
    batch, the serial setting (batches made as ansible-playbook makes them) and the outcomes recorded so far.
options:
  _input:
    description: Every host of the play (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  batch:
    description: The current batch (C(ansible_play_batch)).
    type: list
    elements: str
    required: true
  serial:
    description: The play's serial, a count, C(N%) or a list of them.
    type: raw
    required: true
  outcomes:
    description: Host to outcome (done, at-target, failed/<step> ...) of the hosts finished so far.
    type: dict
    required: true
"""

EXAMPLES = r"""
msg: "{{ ansible_play_hosts_all | gpufleet.stack.rollout_progress(ansible_play_batch, [1, '10%'], outcomes) }}"
"""

RETURN = r"""
_value:
  description: The line.
  type: str
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.rollout import progress


class FilterModule:
    def filters(self):
        return {"rollout_progress": progress}
