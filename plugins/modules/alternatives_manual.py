#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: alternatives_manual
short_description: Several update-alternatives links set to a chosen path, in manual mode, in one module run
version_added: "0.1.0"
description:
  - For each link of O(links), reads C(update-alternatives --query) and runs C(update-alternatives --set) only when
    the link is not in manual mode or points elsewhere. C(--set) puts the link in manual mode, so a package
    installed later (at a higher priority) does not take it.
  - Each path must already be registered as an alternative of its link (the packages do that, such as each
    C(cuda-toolkit-X-Y-config-common) for C(cuda) and C(cuda-<major>)).
  - C(community.general.alternatives) costs a module run per link and leaves auto mode alone when the link already
    points right.
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  links:
    description: "Link name to the path it must select: C(cuda: /usr/local/cuda-12.8)."
    type: dict
    required: true
extends_documentation_fragment:
  - gpufleet.stack.attributes
attributes:
  check_mode:
    support: full
    details: Reads and reports which links would be set; a link not registered yet (its package's install is only
      predicted) is reported as changing.
  diff_mode:
    support: none
  platform:
    platforms: debian
"""

EXAMPLES = r"""
- name: /usr/local/cuda and /usr/local/cuda-12 to CUDA 12.8
  gpufleet.stack.alternatives_manual:
    links:
      cuda: /usr/local/cuda-12.8
      cuda-12: /usr/local/cuda-12.8
"""

RETURN = r"""
links:
  description: "Each link: C(name), C(path), C(before) (value and mode read) and C(changed)."
  returned: always
  type: list
  elements: dict
changed_links:
  description: The links set (or that would be).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule


def parse_query(text):
    """{"status", "value", "alternatives"} from `update-alternatives --query NAME`."""
    found = {"status": "", "value": "", "alternatives": []}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        if key == "Status":
            found["status"] = value.strip()
        elif key == "Value":
            found["value"] = value.strip()
        elif key == "Alternative":
            found["alternatives"].append(value.strip())
    return found


def main():
    module = AnsibleModule(argument_spec={"links": {"type": "dict", "required": True}}, supports_check_mode=True)
    tool = module.get_bin_path("update-alternatives", required=True)
    results = []
    for name, path in module.params["links"].items():
        rc, out, err = module.run_command([tool, "--query", name])
        # 2: no such alternative yet (check mode before the first install): --set is what would happen.
        if rc not in (0, 2):
            module.fail_json(msg=f"update-alternatives --query {name} failed ({rc}): {err.strip()}")
        current = parse_query(out) if rc == 0 else {"status": "", "value": "", "alternatives": []}
        changed = (current["status"], current["value"]) != ("manual", path)
        if changed and not module.check_mode:
            if path not in current["alternatives"]:
                module.fail_json(
                    msg=f"{path} is not an alternative of {name} (registered: "
                    f"{', '.join(current['alternatives']) or 'none'}); install the package that registers it first"
                )
            module.run_command([tool, "--set", name, path], check_rc=True)
        before = f"{current['value'] or 'none'} ({current['status'] or 'absent'})"
        results.append({"name": name, "path": path, "before": before, "changed": changed})
    changed_links = [r["name"] for r in results if r["changed"]]
    module.exit_json(changed=bool(changed_links), links=results, changed_links=changed_links)


if __name__ == "__main__":
    main()
