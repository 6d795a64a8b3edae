# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job across nodes through Slurm (gpufleet.stack.multinode_validate): commands, parsing, verdicts. Pure functions.
PRIVATE to the collection.

Checks end as validate's do: passed, failed, or refused with the reason (it cannot run on these nodes).
- allreduce: one rank per node (srun), torch.distributed all-reduce; every rank must report, each from its own node,
  with the right sum.
- rdma_bw: perftest's ib_write_bw between the first two nodes, where both have an RDMA device
  (/sys/class/infiniband); refused where one has none.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpufleet.stack.plugins.module_utils._node.validate import result

MARK = "GPUFLEET-MULTINODE "
# A rank's line is bounded; its text fields are cut and stripped of control characters before they reach a report.
MAX_LINE = 4096
_TEXT = re.compile(r"[\x00-\x1f\x7f]")
_NUMBERS = ("rank", "world", "bytes", "seconds", "algbw_gbs", "busbw_gbs", "value", "expected")
# perftest's result row: #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]
_PERFTEST_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


def srun_argv(srun, nodes, command, *, job_name="gpufleet-multinode", time_limit_min=10, partition="", reservation=""):
    """srun with one task on each of `nodes`, all of them or none (srun waits for the allocation); in `reservation`
    where the nodes are held for it (an upgrade's batch: no other job lands there meanwhile)."""
    argv = [srun, f"--nodes={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}"]
    argv += [f"--job-name={job_name}", f"--time={time_limit_min}", "--export=ALL", "--kill-on-bad-exit=1"]
    if partition:
        argv.append(f"--partition={partition}")
    if reservation:
        argv.append(f"--reservation={reservation}")
    return argv + list(command)


def _clean(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value
    return _TEXT.sub("?", str(value))[:500]


def parse_ranks(text):
    """The ranks' reports from srun's output: [{rank, world, node, ok, ...}], each field bounded; lines that are not
    a rank's report, or do not parse, are left out (their absence is what the verdict reports)."""
    ranks = []
    for line in (text or "").splitlines():
        start = line.find(MARK)
        if start < 0 or len(line) > MAX_LINE:
            continue
        try:
            found = json.loads(line[start + len(MARK) :])
        except ValueError:
            continue
        if not isinstance(found, dict) or not isinstance(found.get("rank"), int):
            continue
        clean = {key: _clean(value) for key, value in found.items() if isinstance(key, str) and len(key) < 40}
        if any(key in clean and not isinstance(clean[key], (int, float)) for key in _NUMBERS):
            continue
        ranks.append(clean)
    return sorted(ranks, key=lambda r: r["rank"])


def allreduce_check(ranks, nodes, rc=0, stderr=""):
    """The verdict on the ranks' reports for a job over `nodes` (Slurm node names)."""
    if len(nodes) < 2:
        return result("allreduce", "refused", f"a job across nodes needs two or more nodes; got {list(nodes)}")
    data = {"nodes": list(nodes), "ranks": ranks}
    if not ranks:
        tail = _clean((stderr or "").strip()[-400:])
        return result("allreduce", "failed", f"no rank reported (srun exit {rc}): {tail}", **data)
    problems = []
    seen = sorted(r.get("node") for r in ranks)
    if sorted(nodes) != seen:
        problems.append(f"ranks ran on {seen}, not one on each of {sorted(nodes)}")
    for rank in ranks:
        if rank.get("error"):
            problems.append(f"rank {rank['rank']} on {rank.get('node')}: {rank['error']}")
        elif not rank.get("ok"):
            problems.append(
                f"rank {rank['rank']} on {rank.get('node')}: sum {rank.get('value')}, expected {rank.get('expected')}"
            )
        if rank.get("world") != len(nodes):
            problems.append(f"rank {rank['rank']} saw a world of {rank.get('world')}, not {len(nodes)}")
    if problems:
        return result("allreduce", "failed", "; ".join(problems), **data)
    first = ranks[0]
    return result(
        "allreduce",
        "passed",
        f"{first.get('backend')} all-reduce of {first.get('bytes')} bytes across {len(nodes)} nodes: every rank has "
        f"the sum {first.get('value')}; bus bandwidth {min(r.get('busbw_gbs', 0) for r in ranks)} GB/s "
        f"(torch {first.get('torch')})",
        busbw_gbs=min(r.get("busbw_gbs", 0) for r in ranks),
        backend=first.get("backend"),
        **data,
    )


def parse_rdma_devices(text):
    """{node: [devices]} from lines "NODE dev1 dev2" (one per node: its /sys/class/infiniband entries)."""
    found = {}
    for line in (text or "").splitlines():
        words = line.split()
        if words:
            found[words[0]] = sorted(words[1:])
    return found


def rdma_refusal(devices, nodes):
    """Why ib_write_bw cannot run between the first two nodes, or "" when both have an RDMA device."""
    if len(nodes) < 2:
        return "a bandwidth test between nodes needs two nodes"
    missing = [node for node in nodes[:2] if not devices.get(node)]
    if missing:
        return (
            f"no RDMA device on {', '.join(missing)} (/sys/class/infiniband is empty): no InfiniBand or RoCE NIC "
            "with its driver loaded, so there is no RDMA path to measure"
        )
    return ""


def parse_perftest(text):
    """perftest's bandwidth row -> {"bytes", "iterations", "peak_gbits", "average_gbits", "mpps"}, or None."""
    for line in (text or "").splitlines():
        found = _PERFTEST_ROW.match(line)
        if found:
            size, iters, peak, average, rate = found.groups()
            return {
                "bytes": int(size),
                "iterations": int(iters),
                "peak_gbits": float(peak),
                "average_gbits": float(average),
                "mpps": float(rate),
            }
    return None


def rdma_check(devices, nodes, out="", rc=0):
    """The ib_write_bw verdict from both sides' output: refused without devices, failed without a result row, else
    passed with the figure."""
    refusal = rdma_refusal(devices, nodes)
    if refusal:
        return result("rdma_bw", "refused", refusal, devices=devices)
    row = parse_perftest(out)
    if row is None or rc != 0:
        tail = _clean((out or "").strip()[-400:])
        return result("rdma_bw", "failed", f"ib_write_bw gave no result (exit {rc}): {tail}", devices=devices)
    return result(
        "rdma_bw",
        "passed",
        f"ib_write_bw {nodes[0]} <- {nodes[1]}: {row['average_gbits']} Gb/s average at {row['bytes']} bytes",
        devices=devices,
        **row,
    )
