#!/usr/bin/python
# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the work is done by the action plugin of the same name (plugins/action/inventory_check.py),
# which reads every host's variables and the schema on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: inventory_check
short_description: Check every host's inventory variables against the collection's schema, on the controller
version_added: "0.2.0"
description:
  - Reads the collection's variables (C(gpufleet_*) and the roles' own) that the inventory sets for each host of the
    play, and checks them against C(data/inventory_schema.yml) (types, element types, choices, version formats,
    ranges, URLs, paths) and each role's C(meta/argument_specs.yml). No host is contacted.
  - Fails once, listing every problem of every host, each naming the variable as the inventory writes it
    (C(gpufleet_stack.cuda[1])), its value and the fix. Hosts with the same problem are named together.
  - "Unknown variables and keys get 'did you mean'; versions written as YAML numbers are refused with 'quote it'
    (C(cuda: 12.10) reaches Ansible as the number 12.1); an empty or null C(gpufleet_stack) is refused."
  - Then checks each distinct desired stack once against the compatibility matrix (what M(gpufleet.stack.stack_assert)
    does), with the host's C(gpufleet_compat_matrix_extra) and C(gpufleet_stack_strict). Warnings and unknowns are
    shown without C(-v), once per distinct stack, with the hosts that have it.
  - Passwords in URLs are shown as C(***).
  - Run it once per play (C(run_once)), delegated to localhost, as the first task of C(site.yml), C(upgrade.yml) and
    C(facts.yml) do.
  - With O(role) instead, checks one role's variables as that role sees them (its defaults templated) for the
    current host, against the same schema. The roles' preflight does this, so a role run alone gets the same checks.
    A value the role's default took from an inventory variable is named with it, as in
    C(nccl_version (from gpufleet_stack.nccl\)).
author:
  - gpufleet.stack maintainers (@gpufleet)
options:
  playbook:
    description:
      - Which playbook's needs to check. C(site) and C(upgrade) need a desired stack with a key for every listed
        component and check it against the matrix (C(upgrade) in rollback mode does not); C(facts), C(monitoring)
        and C(validate) need no stack.
      - One of O(playbook) and O(role) is required.
    type: str
    choices: [site, upgrade, facts, monitoring, validate]
  hosts:
    description: The hosts to check; default, every host of the play (C(ansible_play_hosts_all)).
    type: list
    elements: str
  role:
    description: Check this role's variables (those of C(data/inventory_schema.yml) with the role's prefix) instead.
    type: str
  skip:
    description: With O(role), variables not to check (one the role does not use in this configuration).
    type: list
    elements: str
    default: []
  os_families:
    description:
      - With O(role), the OS families the role supports (C(ansible_facts['os_family'])); another one is a problem
        named with the distribution and O(os_fix). Empty, no OS check.
      - The host's minimal facts are gathered (C(ansible.builtin.setup) C(gather_subset=min)) when the play has none,
        and returned, so the role's later tasks have them. That is the only time this module contacts a host.
    type: list
    elements: str
    default: []
  os_fix:
    description: With O(os_families), what to do on another OS.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufleet.stack.attributes
  - gpufleet.stack.attributes.read_only
attributes:
  action:
    support: full
    description: Reads host variables and the collection's files on the controller.
  platform:
    platforms: posix
seealso:
  - module: gpufleet.stack.stack_assert
"""

EXAMPLES = r"""
- name: Check every host's inventory and desired stack before any host is touched
  gpufleet.stack.inventory_check:
    playbook: site
  run_once: true
  delegate_to: localhost

- name: Check the nccl role's settings (its preflight)
  gpufleet.stack.inventory_check:
    role: nccl
    skip: "{{ [] if nccl_channel == 'network' else ['nccl_cuda'] }}"
"""

RETURN = r"""
hosts:
  description: How many hosts were checked.
  returned: always
  type: int
stacks:
  description: How many distinct desired stacks were checked against the matrix.
  returned: always
  type: int
"""
