# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper: write each task's wall time per host to $GPUFLEET_TASK_TIMES (JSON lines)."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_timer
type: aggregate
short_description: Records task wall times for benchmarks/
description: Appends one JSON line per task and host to the file named by GPUFLEET_TASK_TIMES.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._started = {}

    def v2_runner_on_start(self, host, task):
        self._started[(host.get_name(), task._uuid)] = time.monotonic()

    def _record(self, result, status):
        key = (result._host.get_name(), result._task._uuid)
        started = self._started.pop(key, None)
        if started is None or not os.environ.get("GPUFLEET_TASK_TIMES"):
            return
        with open(os.environ["GPUFLEET_TASK_TIMES"], "a", encoding="utf-8") as stream:
            stream.write(
                json.dumps(
                    {
                        "host": key[0],
                        "task": result._task.get_name(),
                        "action": result._task.action,
                        "delegated": bool(result._task.delegate_to),
                        # The arguments given: stack_assert with versions or installed runs no module on the host.
                        "args": sorted(result._task.args),
                        "status": status,
                        # A loop runs its module once per item: the items that ran, not the one task.
                        "runs": sum(not r.get("skipped") for r in result._result["results"])
                        if isinstance(result._result.get("results"), list)
                        else 1,
                        "seconds": time.monotonic() - started,
                    }
                )
                + "\n"
            )

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result):
        # Skipped tasks are walked too (the recap counts them): listed so that --tasks can say which.
        self._record(result, "skipped")
