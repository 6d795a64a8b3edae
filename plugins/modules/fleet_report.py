#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# The work happens in the action plugin of the same name, on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_report
short_description: Write a fleet report (JSON, Markdown, HTML) from cached GPU and stack facts
version_added: "0.1.0"
description:
  - Reads, on the controller, each host's cached C(gpufleet_gpu) facts (M(gpufleet.stack.gpu_facts)) and
    C(gpufleet_installed) facts (M(gpufleet.stack.stack_facts)), and its desired stack C(gpufleet_stack).
  - Writes C(fleet-report.json), C(fleet-report.md) and a self-contained C(fleet-report.html) to O(dest), one row
    per host, worst hosts first, with its GPUs, driver, the whole installed stack (driver and flavour, Fabric Manager,
    each CUDA toolkit, cuDNN, NCCL, Container Toolkit, frameworks), health findings, the last upgrade (from, to,
    when, outcome) and its drift from the desired stack; each host's GPUs (temperature against the slowdown
    threshold, memory, ECC, remapped rows, Xid); the fleet by GPU model, by driver and by kind of drift.
  - Drift is measured against the stack keys of the host's C(gpufleet_components), as verification does (a
    framework only with C(horovod)).
  - The HTML page filters its rows by health, kind of drift and text, in the page (no server); the filters live in
    the URL's fragment (C(fleet-report.html#health=critical&drift=driver)), so a filtered view can be linked.
  - Reports C(changed) only when a row changed since the last report; a newer facts time alone (the C(Facts from)
    column) rewrites the files without counting as a change.
options:
  hosts:
    description: Inventory hosts to report on, usually C(groups['all']).
    type: list
    elements: str
    required: true
  dest:
    description:
      - Directory on the controller to write the report files to; created when missing.
      - A relative path is relative to the directory C(ansible-playbook) runs in.
    type: path
    required: true
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.controller
attributes:
  check_mode:
    support: full
    details: Reports whether the report would change, without writing files.
author:
  - gpufleet.stack maintainers (@gpufleet)
seealso:
  - module: gpufleet.stack.gpu_facts
  - module: gpufleet.stack.stack_facts
"""

EXAMPLES = r"""
- name: Write the fleet report
  gpufleet.stack.fleet_report:
    hosts: "{{ groups['all'] }}"
    dest: "{{ playbook_dir }}/../reports"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
summary:
  description: Host counts.
  returned: always
  type: dict
  sample: {"hosts": 3, "ok": 1, "critical": 1, "warning": 0, "drifted": 1}
files:
  description: Paths of the report files.
  returned: always
  type: list
  elements: str
unhealthy:
  description: Hosts whose GPU health is critical or warning.
  returned: always
  type: list
  elements: str
drifted:
  description: Hosts that differ from their desired stack.
  returned: always
  type: list
  elements: str
"""
