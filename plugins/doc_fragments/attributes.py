# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared attribute documentation (the pattern of community.general's attributes fragment)."""

from __future__ import annotations


class ModuleDocFragment:
    # The descriptions every module's attributes share; each module adds its own support levels.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return the changed status it predicts without modifying the target.
  diff_mode:
    description: Returns details on what changed (or would change in check mode) when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
    support: full
"""

    # Modules that only read and report: the facts modules and stack_assert.
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode does the same work and reports the same result.
  diff_mode:
    support: none
"""

    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
"""

    # Modules whose work is an action plugin on the controller (fleet_report, run_lock): each adds its check_mode.
    CONTROLLER = r"""
options: {}
attributes:
  diff_mode:
    support: none
  platform:
    platforms: all
    details: Runs on the controller.
  action:
    description: Implemented by an action plugin on the controller.
    support: full
"""
