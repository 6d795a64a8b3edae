# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed step of one host's upgrade records and says (playbooks/tasks/upgrade_failed.yml): pure functions.

The outcomes: failed/<step or gate> (the node stays drained with the reason), blocked/drain (GPU processes no job
owns: node_drain already keeps the node drained with them as the reason), skipped/drain (jobs outlived the drain
timeout: node_drain gave the node back), reboot-required/reboot (installed, waiting for a reboot the run may not do).
"""

from __future__ import annotations

FINISHED = ("done", "running")


def outcome(status, step):
    """One word for the report: done, running, or status/step (failed/gpus, blocked/drain)."""
    return status if status in FINISHED else f"{status}/{step}"


def failure(task_name, result, step, *, skip=None, status=None, drain=None):
    """{status, step, message, mark_failed, drain_failure, node_state} of a failed step.

    task_name/result: the failed task and its result; step: the upgrade step it was in; skip: {status, message} when
    the drain step decided to skip the node; status: reboot-required when the run stopped for a reboot; drain: the
    node_drain_status of this host (None before the drain ran)."""
    result = result if isinstance(result, dict) else {}
    drain = drain if isinstance(drain, dict) else {}
    msg = str(result.get("msg") or "failed")[:300]
    gate = result.get("failed_gate")
    # A gate's message already names it (failed/gpus: ...); so do the skip and the reboot stop.
    message = msg if (gate or status or skip) else f"{task_name or 'a task'}: {msg}"
    blocked = bool(drain.get("blocked")) and step == "drain"
    final_status = skip["status"] if skip else ("blocked" if blocked else (status or "failed"))
    final_step = gate or step or "drain"
    # node_drain keeps a blocked node drained itself and gives back a skipped one. A failure in the drain step marks
    # the node only once this run drained it (a failed scontrol drained nothing); every later step changed it.
    mark = not skip and not blocked and (final_step != "drain" or bool(drain.get("drained")))
    drain_failure = message if final_status == "reboot-required" else f"upgrade failed at {final_step}: {message}"
    if final_status == "skipped":
        node_state = "the node is back in its scheduler, unless someone else had drained it"
    elif mark or blocked or drain.get("drained"):
        node_state = "the node stays drained"
    else:
        node_state = "the node was not drained"
    return {
        "status": final_status,
        "step": final_step,
        "outcome": outcome(final_status, final_step),
        "message": message,
        "mark_failed": mark,
        "drain_failure": drain_failure,
        "node_state": node_state,
    }
