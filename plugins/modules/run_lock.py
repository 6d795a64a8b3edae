#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# The work happens in the action plugin of the same name, on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: run_lock
short_description: Refuse a second upgrade run against hosts another run is upgrading, naming that run
version_added: "0.1.0"
description:
  - On the controller, in O(dir) (shared by every operator's runs; by default a directory of C(/var/tmp) with
    the sticky bit), one record per running C(playbooks/upgrade.yml) with its user, controller, process, start time
    and hosts.
  - O(state=held) refuses when a live record holds any of O(hosts), naming who holds which of them; otherwise it
    writes this run's record. A record is live while its process runs (same controller) or, written by another
    controller, for O(max_age) seconds. Two runs starting at once take turns under a file lock.
  - O(state=released) removes this run's record; C(playbooks/upgrade.yml) does so in its last play, and a run that
    was killed leaves a record the next run on the same controller sees is dead.
options:
  state:
    description: V(held) takes the hosts for this run, V(released) gives them back.
    type: str
    choices: [held, released]
    default: held
  hosts:
    description: The hosts this run upgrades (C(ansible_play_hosts_all)).
    type: list
    elements: str
    default: []
  dir:
    description: Directory of the records, on the controller (C(gpufleet_upgrade_lock_dir)).
    type: path
    required: true
  playbook:
    description: What the record says is running.
    type: str
    default: playbooks/upgrade.yml
  max_age:
    description: Seconds a record written on another controller counts as live.
    type: int
    default: 86400
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.controller
attributes:
  check_mode:
    support: full
    details: Refuses as it would, writes and removes nothing.
author:
  - gpufleet.stack maintainers (@gpufleet)
"""

EXAMPLES = r"""
- name: Take this run's hosts, or refuse naming the run that has them
  gpufleet.stack.run_lock:
    hosts: "{{ ansible_play_hosts_all }}"
    dir: /var/tmp/gpufleet-upgrade-locks
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
lock:
  description: This run's record.
  returned: when held
  type: str
  sample: /var/tmp/gpufleet-upgrade-locks/run-bastion-1-4242.json
"""
