# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's gres.conf for a node's GPUs, from what NVML and sysfs say: pure functions.

gres.conf(5): `Name=gpu Type=<type> File=/dev/nvidia<minor> Cores=<core ids>`; slurmd checks every File= exists
(it waits, then exits: "can't stat gres.conf file"), and registers that many GPUs; slurmctld drains a node that
registers fewer than its slurm.conf `Gres=gpu:<type>:<n>` ("gres/gpu count reported lower than configured"). With
AutoDetect=nvml slurmd names the type after NVML's device name, lowercased with spaces as underscores
("nvidia_a100-sxm4-40gb"), and a configured type matches when it is a substring of that, so short types such as
"a100" work both ways.
"""

from __future__ import annotations

import re

_VENDOR_WORDS = {"nvidia", "tesla", "geforce", "quadro"}


def gres_type(name):
    """A short Slurm GPU type from NVML's name: "NVIDIA A100-SXM4-40GB" -> "a100", "NVIDIA H100 80GB HBM3" -> "h100",
    "Tesla T4" -> "t4", "NVIDIA GeForce RTX 4090" -> "rtx_4090", "NVIDIA RTX A6000" -> "rtx_a6000": the model's words
    up to the first that holds a digit, joined by underscores (a substring of AutoDetect's type)."""
    words = [w for w in re.split(r"\s+", (name or "").strip().lower()) if w and w not in _VENDOR_WORDS]
    kept = []
    for word in words:
        first = word.split("-", 1)[0]
        kept.append(first)
        if any(c.isdigit() for c in first):
            break
    return re.sub(r"[^a-z0-9_.]", "", "_".join(kept)) or "gpu"


def parse_cpulist(text):
    """sysfs' "0-15,64-79" -> [0..15, 64..79]; "" -> []."""
    cpus = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        low, _dash, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def core_index(topology):
    """{cpu: Slurm's core index}: cores numbered in (socket, core id) order, every hardware thread of a core mapped to
    its core. topology: {cpu: (physical_package_id, core_id)} from /sys/devices/system/cpu/cpu*/topology."""
    cores = sorted(set(topology.values()))
    number = {pair: i for i, pair in enumerate(cores)}
    return {cpu: number[pair] for cpu, pair in topology.items()}


def ranges(numbers):
    """[0,1,2,3,8] -> "0-3,8"."""
    out, run = [], []
    for n in sorted(set(numbers)):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [n]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def gres_lines(gpus, gtype, cores_by_gpu=None):
    """One gres.conf line per GPU (each with its own cores): gpus are gpu_facts' entries (minor_number, name)."""
    lines = []
    for gpu in sorted(gpus, key=lambda g: g["minor_number"]):
        line = f"Name=gpu Type={gtype} File=/dev/nvidia{gpu['minor_number']}"
        cores = (cores_by_gpu or {}).get(gpu["minor_number"])
        if cores:
            line += f" Cores={ranges(cores)}"
        lines.append(line)
    return lines


def gres_conf(node, gpus, gtype, cores_by_gpu=None, *, autodetect=False, extra=()):
    """The file's text: for this node only (NodeName=), AutoDetect=nvml or one line per GPU, then the site's other
    GRES lines (shard, mps, ...) as given."""
    head = [
        "# Written by gpufleet.stack (slurm_gres) from NVML's view of this node; slurmd reads it at start.",
        f"# slurm.conf's node line must say Gres=gpu:{gtype}:{len(gpus)}.",
    ]
    if autodetect:
        lines = [f"NodeName={node} AutoDetect=nvml Name=gpu Type={gtype}"]
    else:
        lines = [f"NodeName={node} {line}" for line in gres_lines(gpus, gtype, cores_by_gpu)]
    return "\n".join([*head, *lines, *extra]) + "\n"


def gres_string(gpus, gtype):
    """The node's Gres= for slurm.conf: "gpu:a100:8"."""
    return f"gpu:{gtype}:{len(gpus)}"
