# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin: take or give back the run lock of playbooks/upgrade.yml on the controller (_controller/runlock)."""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import socket
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import runlock

ARGUMENT_SPEC = {
    "state": {"type": "str", "choices": ["held", "released"], "default": "held"},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "dir": {"type": "path", "required": True},
    "playbook": {"type": "str", "default": "playbooks/upgrade.yml"},
    "max_age": {"type": "int", "default": 86400},
}


def _pid_exists(pid):
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def _records(directory):
    found = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("run-") and name.endswith(".json"):
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as stream:
                    record = json.load(stream)
                if isinstance(record, dict):
                    found.append((name, record))
            except (OSError, ValueError):
                continue  # a record being written, or not ours
    return found


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        directory, here = args["dir"], socket.gethostname()
        # The playbook's own process (this action runs in a worker forked from it): the run the record stands for.
        pid = os.getppid()
        mine = os.path.join(directory, f"run-{here}-{pid}.json")
        if args["state"] == "released":
            existed = os.path.exists(mine)
            if existed and not self._task.check_mode:
                os.unlink(mine)
            return dict(result, changed=existed, msg=f"released {mine}" if existed else "no lock of this run")
        try:
            if not os.path.isdir(directory):
                # Every operator's runs write here, as in /var/tmp itself: writable by all, each record its owner's.
                os.makedirs(directory, exist_ok=True)
                os.chmod(directory, 0o1777)
            with open(os.path.join(directory, ".lock"), "a", encoding="utf-8") as guard:
                fcntl.flock(guard, fcntl.LOCK_EX)  # two runs starting at once take turns here
                now = time.time()
                records = [(n, r) for n, r in _records(directory) if n != os.path.basename(mine)]
                for name, record in records:  # a killed run's record on this controller: nobody holds its hosts
                    if record.get("controller") == here and not _pid_exists(record.get("pid")):
                        os.unlink(os.path.join(directory, name))
                held = runlock.holders(
                    [r for _n, r in records],
                    args["hosts"],
                    here=here,
                    pid_exists=_pid_exists,
                    now=now,
                    max_age=args["max_age"],
                )
                if held:
                    raise AnsibleActionFail(
                        "another upgrade is running on these hosts: "
                        + "; ".join(runlock.describe(r, common, now) for r, common in held)
                        + f". Wait for it, or limit this run to other hosts (--limit); a run that was killed on "
                        f"another controller stops holding them after {args['max_age']} s (records in {directory})"
                    )
                record = {
                    "user": getpass.getuser(),
                    "controller": here,
                    "pid": pid,
                    "started": now,
                    "playbook": args["playbook"],
                    "hosts": sorted(args["hosts"]),
                }
                if not self._task.check_mode:
                    with open(mine, "w", encoding="utf-8") as stream:
                        json.dump(record, stream)
        except OSError as err:
            raise AnsibleActionFail(f"run_lock: cannot use {directory} ({err}); set gpufleet_upgrade_lock_dir") from err
        return dict(result, changed=True, lock=mine, msg=f"{len(args['hosts'])} hosts held by this run ({mine})")
