#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_reservation
short_description: Hold Slurm nodes for a check in a maintenance reservation, and end the hold
version_added: "0.9.0"
description:
  - "O(state=present): C(scontrol create reservation) on O(nodes) from now for O(duration) minutes with
    C(Flags=MAINT,IGNORE_JOBS) and C(Users=) O(users): once the nodes are resumed, only a job that names the
    reservation (C(srun --reservation=)) and runs as one of O(users) lands there. A reservation of that name on other
    nodes is moved to O(nodes); one on the same nodes is left as it is."
  - "O(state=absent): C(scontrol delete reservation); nothing when Slurm has none of that name. The nodes take every
    job again."
  - The upgrade playbook holds a batch's nodes so while it runs a job across them (C(gpufleet_upgrade_multinode)) before
    they take anyone's work.
  - Runs C(scontrol) where the module runs (a node of the cluster, or a delegate such as the slurmctld host), as a
    Slurm operator (root).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  name:
    description: The reservation's name (letters, digits, C(.), C(_), C(-)).
    type: str
    required: true
  nodes:
    description: The nodes' Slurm C(NodeName)s; required for O(state=present).
    type: list
    elements: str
    default: []
  state:
    description: Hold the nodes, or end the hold.
    type: str
    choices: [present, absent]
    default: present
  duration:
    description: Minutes the hold lasts at most (it ends by itself then, should the run that made it be lost).
    type: int
    default: 60
  users:
    description: The users whose jobs may run in the reservation.
    type: list
    elements: str
    default: [root]
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Reads the reservation and says what it would do.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: A host with C(scontrol) that can reach slurmctld. Tested with Debian 12's slurm-wlm 22.05.
seealso:
  - name: Slurm advanced reservations
    description: MAINT and IGNORE_JOBS, and reservations on nodes in use.
    link: https://slurm.schedmd.com/reservations.html
  - module: gpufleet.stack.slurm_node
    description: Drain and resume one node.
"""

EXAMPLES = r"""
- name: Hold the upgraded nodes for the job across them
  gpufleet.stack.slurm_reservation:
    name: gpufleet-upgrade-gpu-07
    nodes: [gpu-07, gpu-08]
    duration: 30

- name: End the hold
  gpufleet.stack.slurm_reservation:
    name: gpufleet-upgrade-gpu-07
    state: absent
"""

RETURN = r"""
reservation:
  description: The reservation as Slurm shows it at the end, C(name), C(nodes) (Slurm's hostlist), C(flags), C(users),
    C(state), C(end); null once it is gone.
  returned: always
  type: dict
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import scontrol as sl

# One argv field each: no space, comma or = that scontrol would read as another field or list item.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def run(module, argv, absent_ok=False):
    """scontrol's output; None where absent_ok and Slurm says it has no such reservation."""
    rc, out, err = module.run_command(argv)
    if rc != 0 and absent_ok and "not found" in f"{out} {err}":
        return None
    if rc != 0:
        module.fail_json(msg=f"slurm_reservation: {' '.join(argv)} failed (rc {rc}): {(err or out).strip()}")
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "nodes": {"type": "list", "elements": "str", "default": []},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "duration": {"type": "int", "default": 60},
            "users": {"type": "list", "elements": "str", "default": ["root"]},
        },
        supports_check_mode=True,
    )
    p = module.params
    for where, value in [("name", p["name"])] + [("nodes", n) for n in p["nodes"]] + [("users", u) for u in p["users"]]:
        if not _NAME.fullmatch(value):
            module.fail_json(msg=f"slurm_reservation: {where} {value!r} is not a Slurm name: letters, digits, . _ -")
    if p["state"] == "present" and not p["nodes"]:
        module.fail_json(msg="slurm_reservation: nodes is empty: name the nodes to hold (an empty Nodes= is no hold)")
    if not 1 <= p["duration"] <= 10080:
        module.fail_json(msg=f"slurm_reservation: duration {p['duration']} is not 1 to 10080 minutes (a week)")
    scontrol = module.get_bin_path("scontrol", required=True)
    show = [scontrol, "show", "reservation", p["name"]]
    found = sl.parse_reservation(run(module, show, absent_ok=True))
    wanted = sorted(set(p["nodes"]))
    if p["state"] == "absent":
        if found and not module.check_mode:
            run(module, [scontrol, "delete", f"ReservationName={p['name']}"])
        module.exit_json(changed=bool(found), reservation=None)
    if found and sorted(run(module, [scontrol, "show", "hostnames", found["nodes"]]).split()) == wanted:
        module.exit_json(changed=False, reservation=found)
    if not module.check_mode:
        if found:
            run(module, [scontrol, "update", f"ReservationName={p['name']}", f"Nodes={','.join(wanted)}"])
        else:
            fields = sl.reservation_fields(p["name"], wanted, p["duration"], p["users"])
            run(module, [scontrol, "create", "reservation", *fields])
        found = sl.parse_reservation(run(module, show))
    module.exit_json(changed=True, reservation=found)


if __name__ == "__main__":
    main()
