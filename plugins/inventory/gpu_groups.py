# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Groups from the cached GPU facts of playbooks/facts.yml, computed in Python (_controller/gpu_groups.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_groups
short_description: Groups from the cached GPU facts (model, driver branch, health, Fabric Manager)
version_added: "0.2.0"
description:
  - Puts every host whose cached facts hold C(gpufleet_gpu) (from M(gpufleet.stack.gpu_facts), through
    C(playbooks/facts.yml)) in C(gpu_model_<model>) (C(gpu_model_a100_sxm4_40gb)), C(driver_branch_<branch>)
    (C(driver_branch_570)), C(gpu_health_<status>) (C(gpu_health_critical)), C(fabricmanager_required) and
    C(gpu_driver_not_loaded), so a run can target C(--limit gpu_health_critical).
  - The same groups C(ansible.builtin.constructed) makes from the same facts with Jinja, at a fraction of the cost
    per host (one cache read, no templating); it reads whichever fact cache Ansible is configured with (jsonfile,
    Redis ...).
  - Name the file so it loads after the hosts (C(zz-gpufleet.groups.yml) in the inventory directory) and set
    C(plugin) to C(gpufleet.stack.gpu_groups).
options:
  plugin:
    description: The name of this plugin.
    type: str
    required: true
    choices: [gpufleet.stack.gpu_groups]
  prefixes:
    description: Other prefixes for the keyed groups, keys C(model), C(branch), C(health).
    type: dict
    default: {}
"""

EXAMPLES = r"""
# inventories/prod/zz-gpufleet.groups.yml
plugin: gpufleet.stack.gpu_groups
"""

import json

from ansible import constants as C
from ansible.plugins.inventory import BaseInventoryPlugin
from ansible.plugins.loader import cache_loader
from ansible_collections.gpufleet.stack.plugins.module_utils._controller.gpu_groups import groups_for

TAGGED = '"__ansible_type"'  # how Ansible's cache persistence marks a tagged value (vaulted, dated, ...)


def cached_facts(cache, host):
    """A host's facts from the fact cache. ansible-core 2.19 stores each entry as one JSON payload and decodes it with
    a hook run on every object (tags, UTF-8 checks): 1.8 s for 5,000 hosts of 17 KiB, 1.0 s with json's plain decoder.
    A payload holding no tagged value decodes the same either way, so it takes the plain decoder; anything else (a
    tagged value, another ansible-core's cache layout) goes through the cache's own get."""
    wrapped, key_of = getattr(cache, "__wrapped__", None), getattr(type(cache), "_get_key", None)
    if wrapped is not None and key_of is not None:
        try:
            entry = wrapped.get(key_of(host))
        except KeyError:
            entry = None
        payload = entry.get("__payload__") if isinstance(entry, dict) else None
        if isinstance(payload, str) and TAGGED not in payload:
            return json.loads(payload)
    return cache.get(host)


class InventoryModule(BaseInventoryPlugin):
    NAME = "gpufleet.stack.gpu_groups"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith((".yml", ".yaml"))

    def parse(self, inventory, loader, path, cache=False):
        super().parse(inventory, loader, path, cache=cache)
        self._read_config_data(path)
        prefixes = self.get_option("prefixes") or {}
        facts = cache_loader.get(C.CACHE_PLUGIN)
        for host in list(inventory.hosts):
            if not facts.contains(host):
                continue
            for group in groups_for(cached_facts(facts, host), prefixes):
                inventory.add_group(group)
                inventory.add_child(group, host)
