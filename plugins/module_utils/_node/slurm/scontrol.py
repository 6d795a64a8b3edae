# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's view of a node, read from `scontrol show node` / `squeue` / `scontrol listpids` output: pure functions.

Formats are Slurm 22.05's (Debian 12's slurm-wlm), recorded from the sandbox cluster in tests/unit/slurm/fixtures:
`State=BASE+FLAG+FLAG` (IDLE, MIXED, ALLOCATED, DOWN ... with DRAIN, COMPLETING, NOT_RESPONDING, INVALID_REG ...),
`Reason=<text> [<user>@<time>]` last, `Gres=gpu:<type>:<count>` with an optional `(S:<sockets>)` suffix.
"""

from __future__ import annotations

import re

# Base states with no job on the node (sinfo's "drained" rather than "draining" once DRAIN is set).
FREE_BASES = frozenset({"IDLE", "DOWN", "FUTURE", "UNKNOWN"})
# Job states that still occupy a node (squeue --states).
BUSY_JOB_STATES = "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED"
SQUEUE_FORMAT = "%i|%u|%j|%T|%M"
# States and flags after which the node does not take jobs: the scheduler has not taken it back.
UNAVAILABLE = ("DOWN", "DRAIN", "FAIL", "INVALID", "INVALID_REG", "NOT_RESPONDING", "FUTURE", "UNKNOWN", "POWERED_DOWN")
# A hold that keeps every job but ours off nodes being checked (scontrol create reservation Flags=).
RESERVATION_FLAGS = ("MAINT", "IGNORE_JOBS")
# Slurm keeps a reason on one line; long texts are cut so sinfo and the recap stay readable.
REASON_MAX = 240

_REASON_RE = re.compile(r"(?:^|\s)Reason=(.*?)(?: \[([^\]]*)\])?\s*$", re.M)
_GRES_RE = re.compile(r"^([^:(]+)(?::([^:(]+))?(?::(\d+))?")


def parse_node(text):
    """`scontrol show node NAME` (either layout) -> {name, state, base, flags, reason, reason_by, gres, gres_gpus,
    slurmd_start}. Values with spaces (OS=Linux 6.1 #1 SMP) are kept whole; Reason runs to its [user@time]."""
    text = text or ""
    reason, reason_by = "", ""
    match = _REASON_RE.search(text)
    if match:
        reason, reason_by = match.group(1).strip(), match.group(2) or ""
        text = text[: match.start()] + text[match.end() :]
    fields = _fields(text)
    state = fields.get("State", "UNKNOWN")
    # sinfo-style suffixes (* not responding, ~ powered off, # powering up) can trail the base in some outputs.
    parts = state.rstrip("*~#!%$@^-").split("+")
    flags = parts[1:] + (["NOT_RESPONDING"] if state.endswith("*") and "NOT_RESPONDING" not in parts else [])
    gres = fields.get("Gres", "")
    return {
        "name": fields.get("NodeName", ""),
        "state": state,
        "base": parts[0],
        "flags": flags,
        "reason": reason,
        "reason_by": reason_by,
        "gres": "" if gres == "(null)" else gres,
        "gres_gpus": gres_gpu_count(gres),
        "slurmd_start": fields.get("SlurmdStartTime", ""),
    }


def _fields(text):
    """Key=Value tokens of scontrol's show output; a value with spaces (OS=Linux 6.1 #1 SMP) is kept whole."""
    fields, key = {}, None
    for token in text.split():
        if "=" in token:
            key, value = token.split("=", 1)
            fields[key] = value
        elif key is not None:
            fields[key] += " " + token
    return fields


def parse_reservation(text):
    """`scontrol show reservation NAME` -> {name, nodes, flags, users, state, end}: nodes as Slurm writes them (a
    hostlist, mn-gpu[1-2]); None when the text holds no reservation (Slurm says "Reservation NAME not found")."""
    fields = _fields(text or "")
    if not fields.get("ReservationName"):
        return None
    listed = {key: [v for v in fields.get(key, "").split(",") if v and v != "(null)"] for key in ("Flags", "Users")}
    return {
        "name": fields["ReservationName"],
        "nodes": fields.get("Nodes", ""),
        "flags": listed["Flags"],
        "users": listed["Users"],
        "state": fields.get("State", ""),
        "end": fields.get("EndTime", ""),
    }


def reservation_fields(name, nodes, minutes, users):
    """scontrol create reservation's fields for a hold on `nodes` from now: MAINT (no job but those of `users`, and
    made even on nodes that are drained or in another reservation) and IGNORE_JOBS (made even where a job is
    still ending)."""
    return [
        f"ReservationName={name}",
        f"Nodes={','.join(nodes)}",
        "StartTime=now",
        f"Duration={minutes}",
        f"Users={','.join(users)}",
        f"Flags={','.join(RESERVATION_FLAGS)}",
    ]


def gres_gpu_count(gres):
    """GPUs in a Gres string: "gpu:a100:8(S:0-1),gpu:t4:2" -> 10, "gpu:4" -> 4, "(null)" or "" -> 0."""
    total = 0
    for item in (gres or "").split(","):
        match = _GRES_RE.match(item.strip())
        if not match or match.group(1) != "gpu":
            continue
        second, third = match.group(2), match.group(3)
        if third is not None:
            total += int(third)
        elif second is not None and second.isdigit():
            total += int(second)
        else:
            total += 1  # "gpu" or "gpu:type" alone means one
    return total


def is_drained(node):
    return "DRAIN" in node["flags"]


def is_ours(node, prefix):
    """Drained with a reason that starts with our prefix: our drain, which resume may undo."""
    return is_drained(node) and node["reason"].startswith(prefix)


def is_free(node):
    """No job on the node: IDLE/DOWN/... and not COMPLETING (sinfo's "drained" once DRAIN is set)."""
    return node["base"] in FREE_BASES and "COMPLETING" not in node["flags"]


def drain_action(node, reason, prefix):
    """What draining with `reason` takes: drain, renew (our drain, another reason), keep (someone else's drain:
    their reason stays and resume will leave the node drained), or none (already drained so)."""
    if not is_drained(node):
        return "drain"
    if not is_ours(node, prefix):
        return "keep"
    return "none" if node["reason"] == reason else "renew"


def one_line_reason(text):
    """A reason Slurm keeps: newlines, tabs and every other control character folded (a terminal escape in a GPU's
    name would otherwise reach every admin's sinfo), at most REASON_MAX characters."""
    text = re.sub(r"[\s\x00-\x1f\x7f-\x9f]+", " ", text or "").strip()
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 3] + "..."


def parse_squeue(out):
    """squeue --noheader --format=%i|%u|%j|%T|%M -> [{id, user, name, state, time}]."""
    jobs = []
    for line in (out or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 5 and parts[0]:
            jobs.append({key: parts[i] for i, key in enumerate(("id", "user", "name", "state", "time"))})
    return jobs


def describe_jobs(jobs):
    """ "job 12 (train, user ana, RUNNING for 3:04), job 13 (...)": what a timeout message names."""
    return ", ".join(f"job {j['id']} ({j['name']}, user {j['user']}, {j['state']} for {j['time']})" for j in jobs)


def parse_listpids(out):
    """`scontrol listpids` on the node -> {pid: job id} of the processes Slurm tracks for its jobs."""
    owned = {}
    for line in (out or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            owned[int(parts[0])] = parts[1]
    return owned


def readiness_problems(node, expected_gpus=None):
    """Why the scheduler has not taken the node back (empty: it has): not registered or responding, DOWN, DRAIN,
    INVALID (Slurm's "gres/gpu count reported lower than configured (7 < 8)"), or a configured GPU count that
    differs from what the node has."""
    problems = []
    bad = [s for s in [node["base"], *node["flags"]] if s in UNAVAILABLE]
    if bad:
        why = f" ({node['reason']})" if node["reason"] else ""
        problems.append(f"Slurm shows {node['name'] or 'the node'} {node['state']}{why}")
    if not node["slurmd_start"] or node["slurmd_start"] == "None":
        problems.append("slurmd has not registered (SlurmdStartTime=None)")
    if expected_gpus is not None and node["gres_gpus"] != expected_gpus:
        problems.append(
            f"Slurm counts {node['gres_gpus']} GPUs (Gres={node['gres'] or '(null)'}), the node has {expected_gpus}"
        )
    return problems


def stray_processes(processes, owned):
    """GPU processes no Slurm job owns: [{gpu, pid, name, used_memory_mib}] whose pid is not in owned."""
    return [p for p in processes if p.get("pid") not in owned]


def describe_processes(processes):
    """ "pid 4242 (python3, 30000 MiB) on GPU 5, ...": what a stray refusal names."""
    parts = []
    for p in processes:
        memory = f", {p['used_memory_mib']} MiB" if p.get("used_memory_mib") is not None else ""
        parts.append(f"pid {p['pid']} ({p.get('name') or 'unknown'}{memory}) on GPU {p.get('gpu')}")
    return ", ".join(parts)
