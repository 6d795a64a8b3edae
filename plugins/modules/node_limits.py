#!/usr/bin/python
# Copyright: (c) 2026, gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_limits
short_description: Locked-memory and open-file limits for RDMA, for logins, services and Slurm's jobs
version_added: "0.3.0"
description:
  - >-
    O(action=write) writes a limits.d file (logins through PAM) and a C([Service]) drop-in for each unit in
    O(units) (C(LimitMEMLOCK=), C(LimitNOFILE=)), and with O(slurm_check) refuses a Slurm configuration that copies
    the submitting shell's memlock limit into jobs (C(PropagateResourceLimits) without
    C(PropagateResourceLimitsExcept=MEMLOCK)), which would leave slurmd's limit unused.
  - >-
    O(action=verify) reads the limits each running unit of O(units) really holds (C(/proc/PID/limits)) and fails
    when one is below the wanted limits: systemd sets the closest limit it may when it lacks C(CAP_SYS_RESOURCE)
    (a container), so a drop-in alone proves nothing.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  action:
    description: Write the files (and check Slurm), or verify the running units.
    type: str
    choices: [write, verify]
    default: write
  memlock:
    description: Locked memory, C(unlimited) or KiB.
    type: str
    default: unlimited
  nofile:
    description: Open files, 1024 to 1048576.
    type: int
    default: 1048576
  limits_file:
    description: The limits.d file for logins.
    type: path
    default: /etc/security/limits.d/90-gpufleet-rdma.conf
  units:
    description: Services that get a drop-in (and are verified); a unit that is not installed is left out.
    type: list
    elements: str
    default: [slurmd]
  dropin_name:
    description: The drop-in's file name in C(/etc/systemd/system/UNIT.service.d/).
    type: str
    default: gpufleet-rdma-limits.conf
  slurm_check:
    description: With O(action=write), check C(scontrol show config) when scontrol is installed.
    type: bool
    default: true
  header:
    description: A comment put first in each file.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - name: limits.conf(5)
    description: Limits for PAM sessions, in KiB.
    link: https://man7.org/linux/man-pages/man5/limits.conf.5.html
  - name: SchedMD FAQ, memlock
    description: Why jobs get the submitting shell's memlock, and PropagateResourceLimitsExcept=MEMLOCK.
    link: https://slurm.schedmd.com/faq.html#memlock
"""

EXAMPLES = r"""
- name: Locked memory unlimited for logins and slurmd
  gpufleet.stack.node_limits:
    memlock: unlimited
    nofile: 1048576
  notify: Restart slurmd

- name: Check slurmd holds them
  gpufleet.stack.node_limits:
    action: verify
"""

RETURN = r"""
files:
  description: The files written or found current.
  returned: action=write
  type: list
  elements: str
units:
  description: The units given a drop-in (write) or checked (verify); units not installed are left out.
  returned: always
  type: list
  elements: str
slurm:
  description: What the Slurm check found (C(ok), C(no scontrol), C(not checked)).
  returned: action=write
  type: str
held:
  description: "The limits each running unit holds: C({unit: {memlock: [soft, hard], nofile: [soft, hard]}})."
  returned: action=verify
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node import limits as lim
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import read, write
from ansible_collections.gpufleet.stack.plugins.module_utils._node.gpu.host import read_text
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm.conf import memlock_problem, show_config


def installed_units(module, units):
    """The services systemd knows (LoadState=loaded), named without ".service"."""
    found = []
    for unit in (u[: -len(".service")] if u.endswith(".service") else u for u in units):
        rc, out, _err = module.run_command(["systemctl", "show", "--property=LoadState", "--value", unit])
        if rc == 0 and out.strip() == "loaded":
            found.append(unit)
    return found


def slurm_state(module):
    config = show_config(module, "node_limits")
    if config is None:
        return "no scontrol"
    problem = memlock_problem(config)
    if problem:
        module.fail_json(msg=f"node_limits: {problem}; or set rdma_slurm_check: false to skip this check")
    return "ok"


def do_write(module, memlock, nofile):
    p = module.params
    units = installed_units(module, p["units"])
    wanted = {p["limits_file"]: lim.limits_conf(memlock, nofile, p["header"])}
    dropin = lim.systemd_dropin(memlock, nofile, p["header"])
    wanted.update({f"/etc/systemd/system/{unit}.service.d/{p['dropin_name']}": dropin for unit in units})
    slurm = slurm_state(module) if p["slurm_check"] else "not checked"
    changed = []
    for path, text in wanted.items():
        if read(path)[0] != text.encode():
            changed.append(path)
            if not module.check_mode:
                write(module, path, text.encode(), 0o644)
    module.exit_json(changed=bool(changed), files=sorted(wanted), changed_files=changed, units=units, slurm=slurm)


def do_verify(module, memlock, nofile):
    units = installed_units(module, module.params["units"])
    held, problems = {}, []
    for unit in units:
        rc, out, _err = module.run_command(["systemctl", "show", "--property=MainPID", "--value", unit])
        pid = out.strip() if rc == 0 else ""
        if not pid.isdigit() or pid == "0":
            problems.append(f"{unit} is not running")
            continue
        limits = lim.parse_proc_limits(read_text(f"/proc/{pid}/limits"))
        held[unit] = {key: list(value) for key, value in limits.items()}
        problems.extend(f"{unit} (pid {pid}): {gap}" for gap in lim.shortfalls(limits, memlock, nofile))
    if problems:
        pid1 = lim.parse_proc_limits(read_text("/proc/1/limits"))
        cause = (
            "PID 1 may raise limits (CAP_SYS_RESOURCE): look for a LimitMEMLOCK=/LimitNOFILE= drop-in that sorts after "
            f"{module.params['dropin_name']} (systemctl cat UNIT)"
            if lim.has_cap_sys_resource(read_text("/proc/1/status"))
            else f"PID 1 lacks CAP_SYS_RESOURCE (a container?) and holds memlock {pid1.get('memlock')} and nofile "
            f"{pid1.get('nofile')} (soft, hard): systemd set the closest limits it could. Raise the container's "
            "limits (docker run --ulimit), or set rdma_memlock_limit/rdma_nofile_limit within them"
        )
        module.fail_json(msg=f"node_limits: limits not held: {'; '.join(problems)}. {cause}", held=held, units=units)
    module.exit_json(changed=False, held=held, units=units)


def main():
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "choices": ["write", "verify"], "default": "write"},
            "memlock": {"type": "str", "default": lim.UNLIMITED},
            "nofile": {"type": "int", "default": lim.NR_OPEN},
            "limits_file": {"type": "path", "default": "/etc/security/limits.d/90-gpufleet-rdma.conf"},
            "units": {"type": "list", "elements": "str", "default": ["slurmd"]},
            "dropin_name": {"type": "str", "default": "gpufleet-rdma-limits.conf"},
            "slurm_check": {"type": "bool", "default": True},
            "header": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    try:
        memlock = lim.parse_kib(module.params["memlock"], "memlock")
        nofile = lim.parse_count(module.params["nofile"], "nofile")
    except ValueError as err:
        module.fail_json(msg=f"node_limits: {err}")
    (do_verify if module.params["action"] == "verify" else do_write)(module, memlock, nofile)


if __name__ == "__main__":
    main()
