# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job across an upgrade batch's nodes (module_utils/_controller/rollout.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: batch_job
short_description: The nodes of an upgrade batch that run the job across nodes, and the hold's name
version_added: "0.9.0"
description:
  - C({nodes, submitter, reservation, skip}) for upgrade.yml's job across nodes (gpufleet_upgrade_multinode) - the
    Slurm names (C(node_drain_slurm_node_name), else the short host name) of the batch's hosts whose upgrade is at
    O(step), in batch order; the first of those hosts, which holds the nodes and submits the job; the reservation
    holding them (C(gpufleet-upgrade-<first node>)); and why no job runs when fewer than two are there.
options:
  _input:
    description: The batch (C(ansible_play_batch)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars), for each host's upgrade step and Slurm name.
    type: raw
    required: true
  step:
    description: The step the hosts must be at.
    type: str
    required: true
"""

EXAMPLES = r"""
__job: "{{ ansible_play_batch | gpufleet.stack.batch_job(hostvars, 'multinode') }}"
"""

RETURN = r"""
_value:
  description: C(nodes) (list), C(submitter) (str), C(reservation) (str), C(skip) (str, empty when the job runs).
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.rollout import batch_job, slurm_names


def _batch_job(batch, hostvars, step):
    steps = {h: hostvars[h].get("__gpufleet_step") for h in batch}
    return batch_job(batch, steps, dict(zip(batch, slurm_names(batch, hostvars), strict=True)), step)


class FilterModule:
    def filters(self):
        return {"batch_job": _batch_job}
