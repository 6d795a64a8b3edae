# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's linear strategy, where a host that stops answering fails its task instead of leaving the play."""

from __future__ import annotations

DOCUMENTATION = r"""
name: rollout
short_description: Linear, but a host that stops answering fails its task, so the block's rescue records it
version_added: "0.3.0"
description:
  - Runs a play exactly as C(ansible.builtin.linear) does, with one difference. When a task finds its host
    unreachable (the SSH connection lost, the node powered off or gone), the task fails instead, its result marked
    C(gpufleet_unreachable=true) and its message saying the host stopped answering.
  - Why. Ansible drops an unreachable host from the play without running the C(rescue) or C(always) of its block
    (Ansible's blocks guide says so), and when every host of a C(serial) batch is gone the whole playbook ends. A
    rolling upgrade that loses a node mid-install would then record nothing, say nothing and leave no report.
    C(playbooks/upgrade.yml) runs its batches with this strategy, so that its rescue names the host as unreachable
    with the step it was in, keeps what the controller knew of it and stops the rollout as any failure does.
  - Tasks with C(ignore_unreachable) keep Ansible's own behaviour.
author:
  - gpufleet.stack maintainers (@gpufleet)
"""

from ansible.plugins.strategy.linear import StrategyModule as LinearStrategyModule
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.rollout import unreachable_as_failed


class StrategyModule(LinearStrategyModule):
    # Every result of a worker, for the strategy and for the callbacks, becomes a raw result here (ansible-core
    # 2.19's single conversion point); an unreachable one is turned into a failure before anything reads it.
    def _convert_wire_task_result_to_raw(self, wire_task_result):
        result = super()._convert_wire_task_result_to_raw(wire_task_result)
        if not result.task.ignore_unreachable:
            unreachable_as_failed(result._return_data)
        return result
