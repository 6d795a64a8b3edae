# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed step of one host's upgrade records and says (playbooks/tasks/upgrade_failed.yml): pure functions.

The outcomes: failed/<step or gate> (the node stays drained with the reason), blocked/drain (GPU processes no job
owns: node_drain already keeps the node drained with them as the reason), skipped/drain (jobs outlived the drain
timeout: node_drain gave the node back), reboot-required/reboot (installed, waiting for a reboot the run may not do),
unreachable/<step> (the host stopped answering in that step: plugins/strategy/rollout.py turns Ansible's unreachable
into a failure marked gpufleet_unreachable; nothing more is done on the host, the scheduler keeps it drained).
"""

from __future__ import annotations

FINISHED = ("done", "running")


def outcome(status, step):
    """One word for the report: done, running, or status/step (failed/gpus, blocked/drain)."""
    return status if status in FINISHED else f"{status}/{step}"


def failure(task_name, result, step, *, skip=None, status=None, drain=None, lost=False, delegate="", others=()):
    """{status, step, outcome, message, mark_failed, drain_failure, node_state, lost, slurm_host} of a failed step.

    task_name/result: the failed task and its result; step: the upgrade step it was in; skip: {status, message} when
    the drain step decided to skip the node; status: reboot-required when the run stopped for a reboot; drain: the
    node_drain_status of this host (None before the drain ran); lost: the host does not answer any more (also when the
    result is marked gpufleet_unreachable); delegate: node_drain_slurm_delegate_to ("" runs scontrol on the node
    itself); others: the run's other hosts that still answer, where scontrol runs for a lost node without a delegate
    (every Slurm node has slurm.conf and the munge key). slurm_host is where node_drain's Slurm commands run."""
    result = result if isinstance(result, dict) else {}
    drain = drain if isinstance(drain, dict) else {}
    msg = str(result.get("msg") or "failed")[:300]
    gate = result.get("failed_gate")
    lost = bool(lost or result.get("gpufleet_unreachable"))
    if lost:  # the host stopped answering: whatever the step had decided, nothing more happens on it
        skip, gate, status = None, None, "unreachable"
    # A gate's message already names it (failed/gpus: ...); so do the skip and the reboot stop.
    message = msg if (gate or skip or (status and not lost)) else f"{task_name or 'a task'}: {msg}"
    blocked = bool(drain.get("blocked")) and step == "drain" and not lost
    final_status = skip["status"] if skip else ("blocked" if blocked else (status or "failed"))
    final_step = gate or step or "drain"
    # node_drain keeps a blocked node drained itself and gives back a skipped one. A failure in the drain step marks
    # the node only once this run drained it (a failed scontrol drained nothing); every later step changed it. A lost
    # node is marked in its scheduler only, from another host (Kubernetes: the controller, node_drain's default);
    # without a scheduler, or with no host left to run scontrol on, it keeps the drain it had.
    mark = not skip and not blocked and (final_step != "drain" or bool(drain.get("drained")))
    backend = drain.get("backend", "none")
    slurm_host = delegate or (next(iter(others), "") if lost else "")
    unmarkable = lost and (backend == "none" or (backend == "slurm" and not slurm_host))
    kept = f" and stays drained in {backend}" if backend != "none" and (mark or drain.get("drained")) else ""
    if mark and unmarkable and backend == "slurm":
        kept += (
            " with the reason its drain gave (no host of this run answers to run scontrol on for it: set "
            "node_drain_slurm_delegate_to to the slurmctld host)"
        )
    mark = mark and not unmarkable
    verb = "lost the node" if lost else "failed"
    drain_failure = message if final_status == "reboot-required" else f"upgrade {verb} at {final_step}: {message}"
    if lost:
        node_state = "the node stopped answering" + kept
    elif final_status == "skipped":
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
        "lost": lost,
        "slurm_host": slurm_host,
    }
