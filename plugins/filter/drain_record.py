# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_drain role's record of a drain (module_utils/_controller/drain.py), as a filter."""

from __future__ import annotations

DOCUMENTATION = r"""
name: drain_record
short_description: The record of a drain kept on the host, updated for one event
version_added: "0.2.0"
description:
  - From the record read from the host (or an empty dict), returns the record after a drain (C(drained)), a failure
    (C(failed)) or a refusal over GPU processes no job owns (C(blocked)). A rerun of the same drain keeps its times.
options:
  _input:
    description: The record on the host, or C({}).
    type: dict
    required: true
  event:
    description: drained, failed or blocked.
    type: str
    required: true
  drain:
    description:
      - The drain, C(backend) (none, slurm or kubernetes), C(node) (its name in the scheduler), C(reason) (as the
        scheduler shows it), C(ours) (resume may undo it), C(jobs) (ids running at the request), C(failure) (event
        failed), C(blocked) (event blocked).
    type: dict
    required: true
  now:
    description: The time to record, C(%Y-%m-%dT%H:%M:%SZ).
    type: str
    required: true
"""

EXAMPLES = r"""
record: "{{ old | gpufleet.stack.drain_record('drained', drain, now_utc) }}"
# drain: {backend: slurm, node: gpu-1, reason: "gpufleet: upgrade", ours: true, jobs: ["12"]}
"""

RETURN = r"""
_value:
  description: C(by), C(backend), C(node), C(reason), C(drained_by_us), C(requested_at), C(jobs_at_request),
    C(drained_at), C(failure) and C(failed_at), C(blocked) and C(blocked_at).
  type: dict
"""

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.drain import drain_record


class FilterModule:
    def filters(self):
        return {"drain_record": drain_record}
