# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test harness only (tests/integration/test_molecule.py): count the assertions each playbook run checked.

Appends one JSON line per playbook run to $GPUFLEET_ASSERT_LOG: the playbook's file name and how many assert tasks
passed on any host. A Molecule verifier whose run checked none has proved nothing, and the harness fails it. Each line
also says when the run started, how long it took and how many host-task results it had, so that a CI run's logs say
where each scenario's minutes went (converge, idempotence, each playbook its verifier ran).
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: assert_count
type: aggregate
short_description: Count the assert tasks that passed in each playbook run (the Molecule harness's check)
description:
  - When a run ends, appends one JSON object to the file named by E(GPUFLEET_ASSERT_LOG), with the playbook's file
    name (C(playbook)) and the number of assert tasks that passed (C(asserts)).
requirements:
  - enabled in callbacks_enabled, with E(GPUFLEET_ASSERT_LOG) set
"""

ASSERTS = {"assert", "ansible.builtin.assert", "ansible.legacy.assert"}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "assert_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.playbook = ""
        self.asserts = 0
        self.results = 0
        self.started = time.time()

    def v2_playbook_on_start(self, playbook):
        self.playbook = os.path.basename(playbook._file_name)  # pylint: disable=protected-access
        self.started = time.time()

    def v2_runner_on_ok(self, result):
        self.results += 1
        if result._task.action in ASSERTS:  # pylint: disable=protected-access
            self.asserts += 1

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.results += 1

    def v2_runner_on_skipped(self, result):
        self.results += 1

    def v2_runner_on_unreachable(self, result):
        self.results += 1

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("GPUFLEET_ASSERT_LOG")
        if path:
            with open(path, "a", encoding="utf-8") as log:
                run = {
                    "playbook": self.playbook,
                    "asserts": self.asserts,
                    "started": time.strftime("%H:%M:%S", time.gmtime(self.started)),
                    "seconds": round(time.time() - self.started, 1),
                    "results": self.results,
                }
                log.write(json.dumps(run) + "\n")
