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


# Each limit, each reading of the settings, and the messages whole (make mutation).
EVERY = ["AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK"]


@pytest.mark.parametrize("limit", EVERY)
def test_each_limit_slurm_knows_is_propagated_by_all_and_excepted_by_name(limit):
    assert limit in sc.propagated_limits({"PropagateResourceLimits": "ALL"})
    assert limit in sc.propagated_limits({"PropagateResourceLimits": limit.lower()})
    assert limit not in sc.propagated_limits({"PropagateResourceLimitsExcept": f" {limit.lower()} ,(null)"})


def test_unknown_names_none_and_null_propagate_nothing_extra():
    assert sc.propagated_limits({"PropagateResourceLimits": "NONE"}) == set()
    assert sc.propagated_limits({"PropagateResourceLimits": "MEMLOCK,BOGUS"}) == {"MEMLOCK"}
    assert sc.propagated_limits({}) == set(EVERY)  # Slurm's default: ALL
    assert (
        sc.propagated_limits({"PropagateResourceLimits": "(null)", "PropagateResourceLimitsExcept": "(null)"}) == set()
    )


def test_the_messages_name_the_settings_and_the_fix():
    found = sc.memlock_problem({"PropagateResourceLimits": "ALL"})
    assert found.startswith(
        "slurm.conf propagates the submitting shell's memlock limit into jobs (PropagateResourceLimits = ALL, "
        "PropagateResourceLimitsExcept = (null)): a job started from a login shell gets that shell's limit"
    )
    assert found.endswith(
        "Add PropagateResourceLimitsExcept=MEMLOCK to slurm.conf (SchedMD's FAQ, https://slurm.schedmd.com/faq.html#memlock)"
    )
    assert (
        sc.memlock_problem({})
        == "scontrol show config printed no PropagateResourceLimits line: not a Slurm configuration"
    )
    assert (
        sc.device_constraint_problem({}) == "scontrol show config printed no TaskPlugin line: not a Slurm configuration"
    )
    assert sc.device_constraint_problem({"TaskPlugin": "Task/Affinity, task/cgroup"}) == ""
    assert sc.device_constraint_problem({"TaskPlugin": "task/affinity"}).startswith(
        "slurm.conf has TaskPlugin = task/affinity: without task/cgroup, ConstrainDevices=yes in cgroup.conf confines "
        "nothing and every job can open every GPU. Set TaskPlugin=task/cgroup"
    )


def test_show_config_lines_and_what_is_not_a_setting():
    text = (
        "Configuration data as of 2026-12-06T10:00:00\n"
        "AccountingStorageBackupHost = (null)\n"
        "TaskPlugin              = task/affinity,task/cgroup  \n"
        "Slurmctld(primary) at mn-ctl is UP\n"
        "MailProg=/bin/mail\n"
        "  indented = no\n"
    )
    assert sc.parse_show_config(text) == {
        "AccountingStorageBackupHost": "(null)",
        "TaskPlugin": "task/affinity,task/cgroup",
        "MailProg": "/bin/mail",
    }
    assert sc.parse_show_config(None) == {}


def test_merge_appends_in_order_replaces_any_case_and_ends_with_a_newline():
    assert (
        sc.merge_keys("", {"ConstrainDevices": "yes", "ConstrainCores": "yes"})
        == "ConstrainDevices=yes\nConstrainCores=yes\n"
    )
    assert (
        sc.merge_keys("#c\nconstraindevices = no\n  CONSTRAINDEVICES=no", {"ConstrainDevices": "yes"})
        == "#c\nConstrainDevices=yes\n"
    )
    assert sc.merge_keys(None, {}) == "\n"
