"""Slurm's configuration as a GPU node needs it, held to `scontrol show config` recorded from Debian 12's Slurm
22.05.8: the defaults (task/none, PropagateResourceLimits = ALL) and a GPU cluster's (task/affinity,task/cgroup,
PropagateResourceLimitsExcept=MEMLOCK)."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node.slurm import conf as sc

FIXTURES = Path(__file__).with_name("fixtures")
DEFAULT = sc.parse_show_config((FIXTURES / "show-config-default.txt").read_text())
GPU = sc.parse_show_config((FIXTURES / "show-config-cgroup-memlock.txt").read_text())


def test_show_config_is_read_as_scontrol_prints_it():
    assert DEFAULT["TaskPlugin"] == "task/none"
    assert DEFAULT["PropagateResourceLimits"] == "ALL"
    assert DEFAULT["PropagateResourceLimitsExcept"] == "(null)"
    assert GPU["TaskPlugin"] == "task/affinity,task/cgroup"
    assert GPU["PropagateResourceLimits"] == "(null)"
    assert GPU["ConstrainDevices"] == "no"  # the cgroup.conf section: the controller's own file
    assert not any(" at " in key or key.startswith("Configuration") for key in DEFAULT)


def test_the_default_cluster_hands_jobs_the_shells_memlock():
    assert "MEMLOCK" in sc.propagated_limits(DEFAULT)
    problem = sc.memlock_problem(DEFAULT)
    assert "PropagateResourceLimits = ALL, PropagateResourceLimitsExcept = (null)" in problem
    assert "PropagateResourceLimitsExcept=MEMLOCK" in problem


def test_a_cluster_excepting_memlock_passes():
    assert sc.propagated_limits(GPU) == {"AS", "CORE", "CPU", "DATA", "FSIZE", "NOFILE", "NPROC", "RSS", "STACK"}
    assert sc.memlock_problem(GPU) == ""


@pytest.mark.parametrize(
    ("setting", "propagates"),
    [
        ({"PropagateResourceLimits": "NONE"}, False),
        ({"PropagateResourceLimits": "NOFILE,STACK"}, False),
        ({"PropagateResourceLimits": "memlock"}, True),  # Slurm reads the names in any case
        ({"PropagateResourceLimits": "ALL", "PropagateResourceLimitsExcept": "NOFILE"}, True),
        ({"PropagateResourceLimits": "(null)", "PropagateResourceLimitsExcept": "MEMLOCK,NOFILE"}, False),
    ],
)
def test_each_way_of_writing_the_propagation(setting, propagates):
    assert ("MEMLOCK" in sc.propagated_limits(setting)) is propagates
    assert bool(sc.memlock_problem(setting)) is propagates


def test_output_that_is_not_a_configuration_is_named():
    assert "not a Slurm configuration" in sc.memlock_problem({})
    assert "not a Slurm configuration" in sc.device_constraint_problem({})


def test_device_constraint_needs_task_cgroup():
    problem = sc.device_constraint_problem(DEFAULT)
    assert problem.startswith("slurm.conf has TaskPlugin = task/none: without task/cgroup")
    assert "TaskPlugin=task/cgroup" in problem
    assert sc.device_constraint_problem(GPU) == ""
    assert sc.device_constraint_problem({"TaskPlugin": "task/cgroup,task/affinity"}) == ""
    assert sc.device_constraint_problem({"TaskPlugin": "task/affinity"})


def test_merge_keeps_the_sites_lines_and_sets_the_key_once():
    site = "# site settings\nCgroupPlugin=cgroup/v1\nconstraindevices=no\nConstrainCores=yes\nConstrainDevices=no\n"
    merged = sc.merge_keys(site, {"ConstrainDevices": "yes"})
    assert merged == "# site settings\nCgroupPlugin=cgroup/v1\nConstrainDevices=yes\nConstrainCores=yes\n"
    assert sc.merge_keys(merged, {"ConstrainDevices": "yes"}) == merged
    assert sc.merge_keys(None, {"ConstrainDevices": "yes"}) == "ConstrainDevices=yes\n"
    assert (
        sc.merge_keys("ConstrainCores=yes", {"ConstrainDevices": "yes"}) == "ConstrainCores=yes\nConstrainDevices=yes\n"
    )
    # A key that only starts like ours is another key.
    assert (
        sc.merge_keys("ConstrainDevicesX=1\n", {"ConstrainDevices": "yes"})
        == "ConstrainDevicesX=1\nConstrainDevices=yes\n"
    )
