# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for gpufleet.stack.python_wheel (documented in plugins/modules/python_wheel.py).

The wheel is fetched and checked on the controller (GPU hosts often reach no package index, and Debian's
python3 refuses a system-wide pip install); the host gets its files in one config_files run.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import wheel as wh

ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "version": {"type": "str", "required": True},
    "sha256": {"type": "str", "default": ""},
    "known_sha256": {"type": "dict", "default": {}},
    "modules": {"type": "list", "elements": "str", "required": True},
    "dest": {"type": "path", "required": True},
    "wheel": {"type": "str", "default": ""},
    "index_url": {"type": "str", "default": ""},
    "cache": {"type": "str", "default": "~/.cache/gpufleet/wheels"},
    "var_prefix": {"type": "str", "default": ""},
}
LARGE_DIFF = 8192  # characters; a module's source in a diff says nothing a reader can use


def download(args, expected):
    """The checked wheel in the controller's cache, downloaded once: forks for other hosts wait on the lock."""
    var, name, version = args["var_prefix"], args["name"], args["version"]
    cache = os.path.expanduser(args["cache"])
    target = os.path.join(cache, wh.wheel_name(name, version))
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(target) and wh.file_sha256(target) == expected:
            return target, "cache"
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            argv = wh.pip_download_argv(sys.executable, name, version, tmp, args["index_url"])
            run = subprocess.run(argv, capture_output=True, text=True, check=False)
            got = [f for f in os.listdir(tmp) if f.endswith(".whl")]
            if run.returncode != 0 or len(got) != 1:
                tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-3:])
                raise wh.WheelError(
                    f"{name} {version} could not be downloaded on the controller ({' '.join(argv[2:])}): {tail}. "
                    f"Set {var}index_url to a reachable index (a mirror), or {var}wheel to the wheel file "
                    f"({wh.wheel_name(name, version)}) copied onto the controller"
                )
            wh.check_digest(os.path.join(tmp, got[0]), expected, args["index_url"] or "pip's configured index")
            os.replace(os.path.join(tmp, got[0]), target)
    return target, "downloaded"


def shorten(diffs):
    """Large files appear in a diff as their size, not their text."""
    for diff in diffs:
        for side in ("before", "after"):
            if len(diff.get(side, "")) > LARGE_DIFF:
                diff[side] = f"({len(diff[side])} characters)\n"
    return diffs


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        _validated, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            expected = wh.expected_sha256(args["version"], args["sha256"], args["known_sha256"], args["var_prefix"])
            if args["wheel"]:
                path, origin = os.path.expanduser(args["wheel"]), "given"
                if not os.path.isfile(path):
                    raise wh.WheelError(
                        f"{args['var_prefix']}wheel is {args['wheel']!r}, which is not a file on the "
                        "controller; give the path of the downloaded .whl"
                    )
                wh.check_digest(path, expected, f"{args['var_prefix']}wheel")
            else:
                path, origin = download(args, expected)
            files = wh.members(path, args["name"], args["version"], args["modules"])
        except wh.WheelError as err:
            raise AnsibleActionFail(f"python_wheel: {err}") from err
        written = self._execute_module(
            module_name="gpufleet.stack.config_files",
            module_args={"files": wh.host_files(args["dest"], files), "mode": "0644"},
            task_vars=task_vars,
        )
        if written.get("failed"):
            return dict(result, **written)
        result.update(
            changed=written["changed"],
            diff=shorten(written.get("diff", [])),
            files=written["files"],
            wheel=path,
            wheel_origin=origin,
            sha256=expected,
            msg=f"{args['name']} {args['version']} in {args['dest']}"
            + (" (changed)" if written["changed"] else " (as it was)"),
        )
        return result
