# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_drain role's record of a drain on the host (node_drain_state_file): what a rerun, resume and people read.

Written once per drain: a rerun of the same drain keeps its first times, so the file (and the task) does not change.
"""

from __future__ import annotations


def _same_drain(old, backend, node, reason):
    return bool(old) and (old.get("backend"), old.get("node"), old.get("reason")) == (backend, node, reason)


def drain_record(old, event, drain, now):
    """The record after event: drained (the node is out of scheduling and its jobs ended), failed (what failed, kept
    on the node's drain) or blocked (GPU processes no job owns). drain: {backend, node, reason, ours, jobs?,
    failure?, blocked?}."""
    old = old if isinstance(old, dict) else {}
    backend, node, reason, ours = drain["backend"], drain["node"], drain["reason"], drain["ours"]
    jobs, failure, blocked = drain.get("jobs"), drain.get("failure"), drain.get("blocked")
    if event == "drained":
        if _same_drain(old, backend, node, reason):
            return dict(old, drained_at=old.get("drained_at") or now)
        return {
            "by": "gpufleet.stack.node_drain",
            "backend": backend,
            "node": node,
            "reason": reason,
            "drained_by_us": bool(ours),
            "requested_at": now,
            "jobs_at_request": list(jobs or []),
            "drained_at": now,
            "failure": None,
            "blocked": None,
        }
    if event not in ("failed", "blocked"):
        raise ValueError(f"drain_record: event {event!r} is not drained, failed or blocked")
    base = old if old.get("node") == node else drain_record({}, "drained", drain, now)
    what = failure if event == "failed" else blocked
    key, at = ("failure", "failed_at") if event == "failed" else ("blocked", "blocked_at")
    return dict(
        base,
        reason=reason,
        drained_by_us=bool(ours),
        **{key: what, at: base.get(at) if base.get(key) == what else now},
    )
