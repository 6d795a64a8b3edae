# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health loop's decision: drain a Slurm node on a critical finding, resume only what it drained: pure functions.

Ownership is the reason's prefix, as LBNL NHC does it (its reasons start "NHC:" and it resumes only nodes whose
reason does; https://github.com/mej/nhc, `nhc.conf` MARK_OFFLINE and node-mark-online). A node an admin drained, or
that an upgrade drained (its reason starts with the upgrade's own prefix), is never resumed here; while it is drained
for another reason, the loop leaves that reason alone too, so the admin's note is not overwritten.
"""

from __future__ import annotations

from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm.scontrol import (
    drain_action,
    is_drained,
    is_ours,
    one_line_reason,
)

PREFIX = "gpufleet-health:"
# Critical findings that do not stop the node from running jobs now, so they are reported and alerted on but do not
# drain: the next boot's kernel lacking the nvidia module matters at the next reboot, and the upgrade's kernel guard
# refuses that reboot.
NOT_DRAINING = ("the kernel that boots next",)


def draining_findings(findings, ignore=()):
    """The critical findings that drain: not in NOT_DRAINING, and not matching any of the user's ignore texts."""
    skip = tuple(NOT_DRAINING) + tuple(ignore)
    return [f for f in findings if f.get("severity") == "critical" and not any(text in f["what"] for text in skip)]


def _describe(item):
    """The finding without its current value: a reason that changed with every reading (95 C, then 96 C) would be
    renewed on every run, and each renewal resets Slurm's record of when and by whom the node was drained."""
    where = "node" if item.get("gpu") is None else f"GPU {item['gpu']}"
    threshold = item.get("threshold")
    limit = f" (limit {threshold})" if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else ""
    return f"{where}: {item['what']}{limit}"


def reason_for(findings, prefix=PREFIX):
    """ "gpufleet-health: GPU 3: temperature at or over the card's slowdown threshold (limit 89); +1 more" """
    first = _describe(findings[0])
    more = f"; +{len(findings) - 1} more" if len(findings) > 1 else ""
    return one_line_reason(f"{prefix} {first}{more}")


def decide(node, findings, prefix=PREFIX, ignore=()):
    """What the loop does with Slurm node `node` (scontrol.parse_node) given this run's findings.

    -> {action: drain|renew|resume|keep|none, reason, why, drained_by_us}. drain/renew/resume change Slurm; keep and
    none do not; drained_by_us says whether the node is out of service by the loop's drain after this decision.
    renew updates our own drain's reason when the findings changed (sinfo then says why the node is out now)."""
    critical = draining_findings(findings, ignore)
    theirs = _someone_elses(node, prefix)
    if critical and theirs:
        why = f"critical, but {theirs}: left alone"
        return {"action": "keep", "reason": reason_for(critical, prefix), "why": why, "drained_by_us": False}
    if critical:
        reason = reason_for(critical, prefix)
        action = drain_action(node, reason, prefix)
        why = {
            "drain": "critical finding on a node Slurm has not drained",
            "renew": "still critical; our drain's reason updated to the findings of this run",
            "keep": f"critical, but drained by someone else ({node['reason']}): their drain and reason stand",
            "none": "still critical; already drained by the health loop for this reason",
        }[action]
        return {"action": action, "reason": reason, "why": why, "drained_by_us": action != "keep"}
    if is_ours(node, prefix) and not theirs:
        why = "no critical finding: resuming our own drain"
        return {"action": "resume", "reason": node["reason"], "why": why, "drained_by_us": False}
    if is_drained(node):
        why = "healthy, but drained by someone else: left drained"
        return {"action": "none", "reason": node["reason"], "why": why, "drained_by_us": False}
    return {"action": "none", "reason": "", "why": "healthy and not drained", "drained_by_us": False}


def _someone_elses(node, prefix):
    """Why the node is someone else's to bring back, or "": DOWN or FAIL (an admin's or slurmctld's), or any reason
    that is not ours (an admin's note on a node, drained or not, is theirs)."""
    if node["base"] == "DOWN" or "FAIL" in node["flags"]:
        return f"Slurm has it {node['state']}" + (f" ({node['reason']})" if node["reason"] else "")
    if node["reason"] and not node["reason"].startswith(prefix):
        return f"it carries someone else's reason ({node['reason']})"
    return ""


def scontrol_argv(node_name, decision):
    """The scontrol call for a decision that changes Slurm, or None."""
    if decision["action"] in ("drain", "renew"):
        return ["scontrol", "update", f"NodeName={node_name}", "State=DRAIN", f"Reason={decision['reason']}"]
    if decision["action"] == "resume":
        return ["scontrol", "update", f"NodeName={node_name}", "State=RESUME"]
    return None
