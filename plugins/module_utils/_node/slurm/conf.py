# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm's configuration as a GPU node needs it: pure functions. PRIVATE to the collection.

What a node's jobs get depends on settings in two files the collection does not own: slurm.conf (the site's, read
through `scontrol show config`) and cgroup.conf (merged key by key). Recorded output of Debian 12's Slurm 22.05.8:
tests/fixtures/slurm/show-config-*.txt.

- Device isolation: cgroup.conf `ConstrainDevices=yes` confines a job to the /dev/nvidiaN of its GPUs, and only
  takes effect with slurm.conf `TaskPlugin` including task/cgroup (cgroup.conf(5), "ConstrainDevices").
- Locked memory: by default (`PropagateResourceLimits = ALL`) srun copies the submitting shell's limits into the
  job, so a login node's 64 KiB memlock reaches the ranks however high slurmd's is; SchedMD's FAQ ("Why is my MPI
  job failing due to the locked memory (memlock) limit being too low?") answers
  `PropagateResourceLimitsExcept=MEMLOCK`. `scontrol show config` then prints `PropagateResourceLimits = (null)`.
"""

from __future__ import annotations

import re

_SHOW_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_()]*)\s*=\s?(.*)$")
_NULL = "(null)"


def parse_show_config(text):
    """{key: value} from `scontrol show config` ("TaskPlugin              = task/affinity,task/cgroup"); "(null)" is
    kept as is. Headings and the trailing "Slurmctld(primary) at ... is UP" are not settings."""
    config = {}
    for line in (text or "").splitlines():
        found = _SHOW_LINE.match(line.rstrip())
        if found and " at " not in found.group(1):
            config[found.group(1)] = found.group(2).strip()
    return config


def _names(value):
    """ "task/affinity,task/cgroup" -> {"task/affinity", "task/cgroup"}; "(null)" -> set()."""
    return {part.strip().lower() for part in (value or "").split(",") if part.strip() and part.strip() != _NULL}


def propagated_limits(config):
    """The limits srun copies from the submitting shell into a job, upper case. Only one of the two settings is in
    force: PropagateResourceLimitsExcept (every limit but those; scontrol then prints PropagateResourceLimits as
    "(null)"), else PropagateResourceLimits (ALL, NONE or a list)."""
    every = {"AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK"}
    excepted = {name.upper() for name in _names(config.get("PropagateResourceLimitsExcept", ""))}
    if excepted:
        return every - excepted
    chosen = {name.upper() for name in _names(config.get("PropagateResourceLimits", "ALL"))}
    return every if "ALL" in chosen else (set() if "NONE" in chosen else chosen & every)


def memlock_problem(config):
    """Why jobs would not get slurmd's memlock limit, or "" when they do."""
    if "PropagateResourceLimits" not in config:
        return "scontrol show config printed no PropagateResourceLimits line: not a Slurm configuration"
    if "MEMLOCK" not in propagated_limits(config):
        return ""
    return (
        f"slurm.conf propagates the submitting shell's memlock limit into jobs (PropagateResourceLimits = "
        f"{config.get('PropagateResourceLimits')}, PropagateResourceLimitsExcept = "
        f"{config.get('PropagateResourceLimitsExcept', _NULL)}): a job started from a login shell gets that shell's "
        "limit (often 64 KiB), not slurmd's, and RDMA registration fails. Add PropagateResourceLimitsExcept=MEMLOCK "
        "to slurm.conf (SchedMD's FAQ, https://slurm.schedmd.com/faq.html#memlock)"
    )


def device_constraint_problem(config):
    """Why cgroup.conf's ConstrainDevices=yes would have no effect, or "" when it takes effect."""
    if "TaskPlugin" not in config:
        return "scontrol show config printed no TaskPlugin line: not a Slurm configuration"
    if "task/cgroup" in _names(config["TaskPlugin"]):
        return ""
    return (
        f"slurm.conf has TaskPlugin = {config['TaskPlugin']}: without task/cgroup, ConstrainDevices=yes in "
        "cgroup.conf confines nothing and every job can open every GPU. Set TaskPlugin=task/cgroup (with "
        "task/affinity if you use it) and ProctrackType=proctrack/cgroup in slurm.conf (cgroup.conf(5))"
    )


_CONF_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*=")


def merge_keys(text, settings):
    """cgroup.conf-style text with each key of `settings` set to its value: a line setting the key (Slurm's keys are
    case-insensitive) is replaced in place, later repeats of it dropped, a missing key appended; every other line,
    comments included, is kept. Returns the new text (ending in a newline)."""
    wanted = {key.lower(): (key, value) for key, value in settings.items()}
    seen = set()
    lines = []
    for line in (text or "").splitlines():
        found = _CONF_LINE.match(line)
        key = found.group(1).lower() if found else None
        if key in wanted:
            if key not in seen:
                lines.append("=".join(wanted[key]))
                seen.add(key)
            continue
        lines.append(line)
    lines.extend("=".join(wanted[key]) for key in wanted if key not in seen)
    return "\n".join(lines) + "\n"


def show_config(module, tool):
    """`scontrol show config` parsed, or None where scontrol is not installed (a node set up before its Slurm);
    fails the module, named `tool`, when scontrol cannot answer (slurmctld down, munge key wrong)."""
    scontrol = module.get_bin_path("scontrol")
    if not scontrol:
        return None
    rc, out, err = module.run_command([scontrol, "show", "config"])
    if rc != 0:
        module.fail_json(msg=f"{tool}: scontrol show config failed ({rc}): {(err or out).strip()[:500]}")
    return parse_show_config(out)
