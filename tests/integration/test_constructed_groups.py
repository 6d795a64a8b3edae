"""Facts into inventory: playbooks/facts.yml fills the fact cache, and the shipped gpu_groups config turns it into
groups a user can target on the next run, the same groups ansible.builtin.constructed makes from the same cache with
Jinja (the config the collection shipped before). Runs on this machine under the NVML simulator."""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from _facts_run import facts_playbook

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# What inventories/*/zz-gpufleet.groups.yml replaced: the same groups with Jinja, templated per host.
CONSTRUCTED = textwrap.dedent("""\
    plugin: ansible.builtin.constructed
    strict: false
    groups:
      fabricmanager_required: gpufleet_gpu.fabricmanager_required | default(false)
      gpu_driver_not_loaded: gpufleet_gpu.driver_state | default('') in ['not_loaded', 'mismatch']
    keyed_groups:
      - prefix: gpu_model
        key: >-
          (gpufleet_gpu.gpus | default([]) | map(attribute='name') | unique
          | map('regex_replace', '^NVIDIA ', '') | map('lower') | list)
      - prefix: driver_branch
        key: gpufleet_gpu.driver_version.split('.')[0]
      - prefix: gpu_health
        key: gpufleet_gpu.health_status
""")


def groups_of(inventory, env):
    graph = subprocess.run(
        [BIN / "ansible-inventory", "-i", inventory, "--export", "--list"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return {name: data.get("hosts", []) for name, data in json.loads(graph.stdout).items() if name != "_meta"}


def test_cached_facts_become_groups(tmp_path, ansible_env):
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(
        "all:\n  hosts:\n    node-a:\n      ansible_connection: local\n"
        f"      ansible_python_interpreter: {sys.executable}\n"
    )
    shutil.copy(ROOT / "inventories/sandbox/zz-gpufleet.groups.yml", inventory)
    env = ansible_env
    facts_playbook(inventory, tmp_path / "report", env, "hot-failing")
    groups = groups_of(inventory, env)
    for group in ("gpu_model_a100_sxm4_40gb", "driver_branch_570", "gpu_health_critical"):
        assert groups.get(group) == ["node-a"], f"{group} missing from {sorted(groups)}"
    assert "gpu_health_ok" not in groups
    # The same groups as constructed makes from the same cache.
    (inventory / "zz-gpufleet.groups.yml").unlink()
    (inventory / "zz-gpufleet.constructed.yml").write_text(CONSTRUCTED)
    assert groups_of(inventory, env) == groups
    report = json.loads((tmp_path / "report" / "fleet-report.json").read_text())
    assert report["rows"][0]["host"] == "node-a"
    assert report["rows"][0]["health"] == "critical"
