# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a rolling upgrade stands: Ansible's batches for a serial value, and lines for people. Pure functions.

batches() follows ansible-core's PlaybookExecutor._get_serialized_batches and pct_to_int: a percentage is
int(pct / 100 * hosts) and at least 1, a list's last size repeats, and 0 or less puts every host left in one batch.
"""

from __future__ import annotations

# Outcomes that count as finished well: upgraded in this run, or at the target already.
GOOD = ("done", "at-target")


def _size(value, total):
    text = str(value).strip()
    if text.endswith("%"):
        return int(float(text[:-1]) / 100.0 * total) or 1
    return int(text)


def batches(hosts, serial):
    """The hosts of each batch, in order, as ansible-playbook makes them for `serial` (a count, "N%" or a list)."""
    sizes = serial if isinstance(serial, (list, tuple)) else [serial]
    left, found, item = list(hosts), [], 0
    while left:
        size = _size(sizes[item], len(hosts))
        if size <= 0:
            found.append(left)
            break
        found.append(left[:size])
        left = left[size:]
        item = min(item + 1, len(sizes) - 1)
    return found


def _names(hosts, most=4):
    return ", ".join(hosts) if len(hosts) <= most else f"{hosts[0]}…{hosts[-1]} ({len(hosts)} hosts)"


def progress(hosts, batch, serial, outcomes):
    """ "batch 3 of 10: gpu-21…gpu-30 (10 hosts); 20 of 100 done, 1 failed, 79 to go": before a batch starts.
    outcomes: {host: outcome} of the hosts this run has finished (done, at-target, failed/<step>, ...)."""
    groups = batches(hosts, serial)
    number = next((i for i, group in enumerate(groups, 1) if batch and batch[0] in group), 0)
    finished = {h: outcomes[h] for h in hosts if outcomes.get(h)}
    good = sum(o in GOOD for o in finished.values())
    bad = len(finished) - good
    return (
        f"batch {number} of {len(groups)}: {_names(list(batch))}; {good} of {len(hosts)} done, {bad} failed, "
        f"{len(hosts) - len(finished)} to go"
    )


def summary(hosts, outcomes):
    """The hosts by outcome at the end of a run (or where it stopped): [(outcome, [hosts])], not reached last."""
    by = {}
    for host in hosts:
        by.setdefault(outcomes.get(host) or "not reached", []).append(host)
    order = sorted(by, key=lambda o: (o == "not reached", o not in GOOD, o))
    return [f"{o}: {', '.join(by[o])}" for o in order]


def slurm_names(hosts, hostvars):
    """Each host's Slurm NodeName: node_drain_slurm_node_name where the inventory sets it, else the short host name."""
    return [hostvars[h].get("node_drain_slurm_node_name") or hostvars[h].get("inventory_hostname_short") for h in hosts]


def batch_job(batch, steps, names, step):
    """The job across a batch's upgraded nodes (gpufleet_upgrade_multinode): {nodes, submitter, reservation, skip}.
    nodes: the Slurm names of the batch's hosts now at `step` (steps: host -> the step its upgrade is at; names: host
    -> its NodeName), in batch order; submitter: the first of those hosts, which runs scontrol and srun; reservation:
    the hold's name, from its node; skip: why no job runs (fewer than two nodes), else ""."""
    hosts = [h for h in batch if steps.get(h) == step]
    nodes = [names.get(h) or h for h in hosts]
    skip = ""
    if not nodes:
        skip = "no node of this batch reached the job across nodes"
    elif len(nodes) == 1:
        skip = (
            f"{nodes[0]} is this batch's only node at the job across nodes, which needs two: a gpufleet_upgrade_serial "
            "of 2 or more pairs them"
        )
    return {
        "nodes": nodes,
        "submitter": hosts[0] if hosts else "",
        "reservation": f"gpufleet-upgrade-{nodes[0]}" if nodes else "",
        "skip": skip,
    }


def unreachable_as_failed(result):
    """Turn a task result that found its host unreachable into a failed one (in place; plugins/strategy/rollout.py),
    marked gpufleet_unreachable, and the same for each loop item that did. True when it changed the result."""
    if not isinstance(result, dict):
        return False
    loop = result.get("results")
    items = [r for r in loop if isinstance(r, dict)] if isinstance(loop, list) else []
    lost = False
    for part in [result, *items]:
        if part.get("unreachable"):
            part.update(
                unreachable=False,
                failed=True,
                gpufleet_unreachable=True,
                msg=f"the host stopped answering: {str(part.get('msg') or 'unreachable').strip()}",
            )
            lost = True
    if lost and not result.get("gpufleet_unreachable"):  # a loop: the task as a whole failed the same way
        result.update(failed=True, gpufleet_unreachable=True, msg="the host stopped answering during the loop")
    return lost
