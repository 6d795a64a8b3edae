#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: config_files
short_description: Ensure the content and mode of several small text files in one task
version_added: "0.1.0"
description:
  - Writes each file of O(files) whose content or mode differs from the one given, atomically, and leaves the others
    alone; creates missing parent directories (mode C(0755)).
  - One module run for the whole list. C(ansible.builtin.template) costs a C(stat) and a C(file) run per file even
    when nothing changes, which on a converged host is most of a role's time; render templates on the controller with
    C(lookup('ansible.builtin.template', ...)) and pass the text as the value of its path in O(files).
  - For small configuration files the roles own (apt pins and sources, drop-ins, profile scripts). Files another
    tool owns, or that need a C(validate) command, are written with C(ansible.builtin.copy).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  files:
    description:
      - "The files: C(path: content), each path absolute, each content the whole text of its file."
    type: dict
    required: true
  mode:
    description: File mode of every file, as an octal string. Files that need different modes take separate tasks.
    type: str
    default: "0644"
  owner:
    description: Owner of every file (name or uid); unset leaves the owner as it is (a new file gets the user's).
    type: str
  group:
    description: Group of every file (name or gid); unset leaves the group as it is.
    type: str
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files would change, writes nothing.
  diff_mode:
    support: full
  platform:
    platforms: posix
seealso:
  - module: ansible.builtin.template
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: Start the GPU units only where the driver's control device exists
  gpufleet.stack.config_files:
    files: "{{ dict(paths | zip([lookup('ansible.builtin.template', 'gpu-unit-dropin.conf.j2')] * paths | length)) }}"
  vars:
    paths:
      - /etc/systemd/system/nvidia-persistenced.service.d/gpufleet-driver.conf
      - /etc/systemd/system/nvidia-fabricmanager.service.d/gpufleet-driver.conf
  register: dropins

- name: Pin NCCL
  gpufleet.stack.config_files:
    files:
      /etc/apt/preferences.d/gpufleet-nccl.pref: "{{ lookup('ansible.builtin.template', 'pin.pref.j2') }}"
"""

RETURN = r"""
files:
  description: Each file, in the order given, with whether it changed (or would change, in check mode).
  returned: always
  type: list
  elements: dict
  sample: [{"dest": "/etc/nccl.conf", "changed": true, "created": false}]
changed_files:
  description: The paths that changed, for conditions such as "reload when a drop-in changed".
  returned: always
  type: list
  elements: str
  sample: ["/etc/nccl.conf"]
"""


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.stack.plugins.module_utils._node.atomic import (
    TargetError,
    check_dest,
    check_owner,
    parse_mode,
    read,
    write,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "dict", "required": True},
            "mode": {"type": "str", "default": "0644"},
            "owner": {"type": "str"},
            "group": {"type": "str"},
        },
        supports_check_mode=True,
    )
    # Every argument is checked before the first file is written: a bad entry never leaves half of them done.
    try:
        mode = parse_mode("mode", module.params["mode"])
        check_owner(module.params["owner"], module.params["group"])
        for dest, content in module.params["files"].items():
            check_dest("files", dest)
            if not isinstance(content, str):
                raise TargetError(
                    f"files entry {dest!r} must map the path to the file's text (got {type(content).__name__}); "
                    "e.g. /etc/nccl.conf: \"{{ lookup('template', 'nccl.conf.j2') }}\""
                )
    except TargetError as err:
        module.fail_json(msg=f"config_files: {err}")
    results, diffs = [], []
    for dest, content in module.params["files"].items():
        data = content.encode()
        current, current_mode = read(dest)
        changed = current != data or current_mode != mode
        if changed and module._diff:
            before = "" if current is None else current.decode(errors="replace")
            diffs.append({"before_header": dest, "after_header": dest, "before": before, "after": content})
        if changed and not module.check_mode:
            write(module, dest, data, mode)
        # Owner and group after the write (a new file is the user's); in check mode these only report.
        if current is not None or not module.check_mode:
            changed = module.set_owner_if_different(dest, module.params["owner"], changed)
            changed = module.set_group_if_different(dest, module.params["group"], changed)
        results.append({"dest": dest, "changed": changed, "created": current is None})
    changed_files = [r["dest"] for r in results if r["changed"]]
    module.exit_json(changed=bool(changed_files), files=results, changed_files=changed_files, diff=diffs)


if __name__ == "__main__":
    main()
