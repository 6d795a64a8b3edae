#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node
short_description: Drain a Slurm node and wait for its jobs, resume it and wait until Slurm takes it back
version_added: "0.2.0"
description:
  - "O(state=drained): C(scontrol update State=DRAIN Reason=...) unless the node is already drained with that reason;
    a drain by someone else (a reason that does not start with O(prefix)) is kept as it is. Then waits up to
    O(timeout) seconds until no job runs on the node (C(IDLE+DRAIN), sinfo's C(drained)). On timeout, by O(on_timeout):
    C(fail) leaves the node drained and fails naming the jobs; C(resume) gives back a node we drained and returns
    RV(timed_out) without failing, for a caller that skips the node."
  - "O(state=resumed): C(scontrol update State=RESUME) only for our drain. With O(expected_gpus) or O(ready_timeout),
    then waits until Slurm has the node back: slurmd registered and responding, not DOWN, DRAIN or INVALID (Slurm's
    C(gres/gpu count reported lower than configured) drains it again on registration), its C(Gres=) GPU count equal to
    O(expected_gpus). Fails naming what is wrong when it does not come back in time."
  - "O(state=failed): drain with O(reason) (what failed), or renew our drain with it; never waits. An admin's drain
    keeps its reason."
  - "O(state=present): read only."
  - Runs C(scontrol) and C(squeue) where the module runs (the node itself, which has C(slurm.conf) and the munge key,
    or a delegate such as the slurmctld host).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  name:
    description: The node's Slurm C(NodeName).
    type: str
    required: true
  state:
    description: What to do (see the description).
    type: str
    choices: [drained, resumed, failed, present]
    default: present
  reason:
    description: The drain reason for O(state=drained) and O(state=failed); it must start with O(prefix).
    type: str
    default: ""
  prefix:
    description: Drains whose reason starts with this are ours; only those are resumed or renewed.
    type: str
    default: "gpufleet:"
  timeout:
    description: Seconds to wait for the node's jobs after the drain; C(0) looks once.
    type: int
    default: 3600
  on_timeout:
    description:
      - When jobs outlive O(timeout), C(fail) (the node stays drained) or C(resume) (a drain of ours is undone).
    type: str
    choices: [fail, resume]
    default: fail
  poll_interval:
    description: Seconds between two looks at the node while waiting.
    type: int
    default: 10
  expected_gpus:
    description:
      - For O(state=resumed), the GPUs the node has (NVML); Slurm's configured C(Gres=gpu) count must equal it.
    type: int
  ready_timeout:
    description: For O(state=resumed), seconds to wait until Slurm has taken the node back; C(0) with no
      O(expected_gpus) does not check.
    type: int
    default: 0
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Reads the node and says what it would do; neither drains, waits, nor resumes.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: A host with C(scontrol) and C(squeue) that can reach slurmctld. Tested with Debian 12's slurm-wlm 22.05.
seealso:
  - name: scontrol(1)
    description: State=DRAIN/RESUME and Reason.
    link: https://slurm.schedmd.com/scontrol.html
  - module: gpufleet.stack.gpu_processes
    description: The processes on the GPUs that no Slurm job owns, after the drain.
"""

EXAMPLES = r"""
- name: Drain the node and wait up to an hour for its jobs
  gpufleet.stack.slurm_node:
    name: gpu-07
    state: drained
    reason: "gpufleet: upgrade to driver 570.172.08"
    timeout: 3600
  delegate_to: slurm-ctl

- name: Give it back and wait until Slurm shows its 8 GPUs again
  gpufleet.stack.slurm_node:
    name: gpu-07
    state: resumed
    expected_gpus: 8
    ready_timeout: 120
"""

RETURN = r"""
node:
  description: The node as Slurm shows it at the end, C(state), C(base), C(flags), C(reason), C(gres), C(gres_gpus).
  returned: always
  type: dict
ours:
  description: The node is (or was, before a resume) drained by us (reason starting with O(prefix)).
  returned: always
  type: bool
jobs_at_request:
  description: The jobs running when the drain was requested, C(id), C(user), C(name), C(state), C(time).
  returned: state=drained
  type: list
  elements: dict
jobs:
  description: The jobs still running at the end (after a timeout).
  returned: state=drained
  type: list
  elements: dict
timed_out:
  description: Jobs outlived O(timeout).
  returned: state=drained
  type: bool
resumed:
  description: The node was resumed (O(state=resumed), or O(on_timeout=resume) after a timeout).
  returned: always
  type: bool
waited:
  description: Seconds spent waiting.
  returned: always
  type: int
problems:
  description: For O(state=resumed), why Slurm has not taken the node back (empty when it has).
  returned: state=resumed
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import scontrol as sl


class Slurm:
    """scontrol/squeue through run_command; every failure fails the module with what Slurm said."""

    def __init__(self, module, name):
        self.module, self.name = module, name
        self.scontrol = module.get_bin_path("scontrol", required=True)
        self.squeue = module.get_bin_path("squeue", required=True)

    def _run(self, argv):
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.module.fail_json(msg=f"slurm_node: {' '.join(argv)} failed (rc {rc}): {(err or out).strip()}")
        return out

    def node(self):
        node = sl.parse_node(self._run([self.scontrol, "show", "node", self.name]))
        if not node["name"]:
            self.module.fail_json(
                msg=f"slurm_node: scontrol shows no node {self.name}; name is its NodeName in slurm.conf"
            )
        return node

    def jobs(self):
        argv = [self.squeue, "--noheader", f"--nodelist={self.name}", f"--states={sl.BUSY_JOB_STATES}"]
        return sl.parse_squeue(self._run([*argv, f"--format={sl.SQUEUE_FORMAT}"]))

    def update(self, *fields):
        self._run([self.scontrol, "update", f"NodeName={self.name}", *fields])


def wait_for(read, done, timeout, interval):
    """Poll read() until done(value) or timeout; (value, seconds waited)."""
    started = time.monotonic()
    value = read()
    while not done(value) and time.monotonic() - started < timeout:
        time.sleep(min(interval, max(timeout - (time.monotonic() - started), 0.1)))
        value = read()
    return value, int(time.monotonic() - started)


def drained(module, slurm, p):
    node = slurm.node()
    action = sl.drain_action(node, p["reason"], p["prefix"])
    ours = action != "keep"
    busy = [] if sl.is_free(node) else slurm.jobs()
    result = {"ours": ours, "jobs_at_request": busy, "changed": action in ("drain", "renew"), "resumed": False}
    if module.check_mode:
        return dict(
            result, node=node, jobs=busy, timed_out=False, waited=0, msg=f"would {action}; check mode waits not"
        )
    if action in ("drain", "renew"):
        slurm.update("State=DRAIN", f"Reason={p['reason']}")
    node, waited = wait_for(slurm.node, sl.is_free, p["timeout"], p["poll_interval"])
    if sl.is_free(node):
        return dict(result, node=node, jobs=[], timed_out=False, waited=waited)
    jobs = slurm.jobs()
    described = sl.describe_jobs(jobs) or "jobs"
    if p["on_timeout"] == "resume":
        if ours:
            slurm.update("State=RESUME")
        return dict(
            result,
            node=slurm.node(),
            jobs=jobs,
            timed_out=True,
            waited=waited,
            resumed=ours,
            msg=f"{p['name']} still runs {described} after {p['timeout']} s: "
            + ("resumed, as it was" if ours else "left drained by someone else"),
        )
    module.fail_json(
        msg=f"slurm_node: {p['name']} still runs {described} after {p['timeout']} s (state {node['state']}). The node "
        f'stays drained with reason "{node["reason"]}": let the jobs finish and rerun (a longer timeout waits for '
        f"them), or cancel them (scancel {' '.join(j['id'] for j in jobs)}).",
        node=node,
        jobs=jobs,
        jobs_at_request=busy,
        ours=ours,
        timed_out=True,
        waited=waited,
    )
    return None


def resumed(module, slurm, p):
    node = slurm.node()
    ours = sl.is_ours(node, p["prefix"])
    result = {"ours": ours, "resumed": ours, "changed": ours, "waited": 0}
    if module.check_mode:
        return dict(result, node=node, problems=[])
    if ours:
        slurm.update("State=RESUME")
    if p["expected_gpus"] is None and p["ready_timeout"] <= 0:
        return dict(result, node=slurm.node(), problems=[])
    if not ours and sl.is_drained(node):
        # Someone else's drain: the node stays out by their choice, which is not ours to judge here.
        return dict(result, node=node, problems=[], msg=f"{p['name']} stays drained: {node['reason']}")

    def problems(n):
        return sl.readiness_problems(n, p["expected_gpus"])

    node, waited = wait_for(slurm.node, lambda n: not problems(n), p["ready_timeout"], p["poll_interval"])
    found = problems(node)
    if found:
        module.fail_json(
            msg=f"slurm_node: Slurm has not taken {p['name']} back after {waited} s: {'; '.join(found)}",
            node=node,
            problems=found,
            ours=ours,
            resumed=ours,
            changed=ours,
        )
    return dict(result, node=node, problems=[], waited=waited)


def failed(module, slurm, p):
    node = slurm.node()
    action = sl.drain_action(node, p["reason"], p["prefix"])
    if action in ("drain", "renew") and not module.check_mode:
        slurm.update("State=DRAIN", f"Reason={p['reason']}")
        node = slurm.node()
    return {
        "node": node,
        "ours": action != "keep",
        "changed": action in ("drain", "renew"),
        "resumed": False,
        "waited": 0,
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["drained", "resumed", "failed", "present"], "default": "present"},
            "reason": {"type": "str", "default": ""},
            "prefix": {"type": "str", "default": "gpufleet:"},
            "timeout": {"type": "int", "default": 3600},
            "on_timeout": {"type": "str", "choices": ["fail", "resume"], "default": "fail"},
            "poll_interval": {"type": "int", "default": 10},
            "expected_gpus": {"type": "int"},
            "ready_timeout": {"type": "int", "default": 0},
        },
        required_if=[("state", "drained", ["reason"]), ("state", "failed", ["reason"])],
        supports_check_mode=True,
    )
    p = dict(module.params)
    p["reason"] = sl.one_line_reason(p["reason"])
    if p["state"] in ("drained", "failed") and not p["reason"].startswith(p["prefix"]):
        module.fail_json(
            msg=f'slurm_node: reason "{p["reason"]}" must start with prefix "{p["prefix"]}", or resume would not '
            "recognise the drain as ours; put the prefix in front of it"
        )
    if p["timeout"] < 0 or p["poll_interval"] < 1 or p["ready_timeout"] < 0:
        module.fail_json(
            msg=f"slurm_node: timeout {p['timeout']} and ready_timeout {p['ready_timeout']} must be >= 0 seconds and "
            f"poll_interval {p['poll_interval']} >= 1"
        )
    slurm = Slurm(module, p["name"])
    if p["state"] == "present":
        module.exit_json(changed=False, node=slurm.node(), ours=False, resumed=False, waited=0)
    handler = {"drained": drained, "resumed": resumed, "failed": failed}[p["state"]]
    module.exit_json(**handler(module, slurm, p))


if __name__ == "__main__":
    main()
