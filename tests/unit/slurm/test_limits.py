"""The limits RDMA needs: the values as the role takes them, the files, and what a running process really holds
(/proc/PID/limits and CapEff recorded from a sandbox node: a Docker container without CAP_SYS_RESOURCE)."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._node import limits as lim

# /proc/1/limits of a sandbox node (the lines the module reads, as the kernel aligns them).
NODE_LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
Max file locks            unlimited            unlimited            locks
"""
CONTAINER_STATUS = "Name:\tsystemd\nCapInh:\t0000000000000000\nCapEff:\t00000000a82425fb\nCapBnd:\t00000000a82425fb\n"
HOST_STATUS = "CapEff:\t000001ffffffffff\n"


@pytest.mark.parametrize(
    ("value", "kib"), [("unlimited", None), ("infinity", None), (-1, None), ("4096", 4096), (65536, 65536)]
)
def test_memlock_values(value, kib):
    assert lim.parse_kib(value, "rdma_memlock_limit") == kib


@pytest.mark.parametrize("value", ["0", "64k", "1.5", "", "-2", "unlimited\n1", "99999999999999"])
def test_memlock_values_outside_the_domain_name_the_variable(value):
    with pytest.raises(ValueError, match=r"rdma_memlock_limit is .*write unlimited, or the limit in KiB"):
        lim.parse_kib(value, "rdma_memlock_limit")


@pytest.mark.parametrize(
    ("value", "ok"), [(1024, True), (1048576, True), (1023, False), (1048577, False), ("x", False)]
)
def test_nofile_bounds(value, ok):
    if ok:
        assert lim.parse_count(value, "rdma_nofile_limit") == value
    else:
        with pytest.raises(ValueError, match=r"rdma_nofile_limit is .* from 1024 to 1048576"):
            lim.parse_count(value, "rdma_nofile_limit")


def test_the_files_say_the_same_limits_in_their_units():
    assert lim.limits_conf(None, 1048576, "# managed") == (
        "# managed\n*    soft    memlock    unlimited\n*    hard    memlock    unlimited\n"
        "*    soft    nofile     1048576\n*    hard    nofile     1048576\n"
    )
    assert "memlock    4096\n" in lim.limits_conf(4096, 16384)
    assert lim.systemd_dropin(None, 1048576) == "[Service]\nLimitMEMLOCK=infinity\nLimitNOFILE=1048576\n"
    assert (
        lim.systemd_dropin(4096, 16384, "# managed")
        == "# managed\n[Service]\nLimitMEMLOCK=4194304\nLimitNOFILE=16384\n"
    )


def test_proc_limits_are_read_in_bytes_and_files():
    assert lim.parse_proc_limits(NODE_LIMITS) == {"memlock": (8388608, 8388608), "nofile": (20000, 20000)}
    assert lim.parse_proc_limits("Max locked memory         unlimited            unlimited            bytes") == {
        "memlock": (None, None)
    }


def test_a_process_below_the_wanted_limits_is_named():
    held = lim.parse_proc_limits(NODE_LIMITS)
    assert lim.shortfalls(held, None, 1048576) == [
        "memlock is 8388608 (wanted unlimited)",
        "nofile is 20000 (wanted 1048576)",
    ]
    assert lim.shortfalls(held, 8192, 20000) == []  # exactly the limit: held
    assert lim.shortfalls(held, 8193, 20000) == ["memlock is 8388608 (wanted 8389632)"]
    assert lim.shortfalls({"memlock": (None, None), "nofile": (20000, 20000)}, None, 16384) == []


def test_cap_sys_resource_is_read_from_capeff():
    assert lim.has_cap_sys_resource(CONTAINER_STATUS) is False
    assert lim.has_cap_sys_resource(HOST_STATUS) is True
    assert lim.has_cap_sys_resource("CapEff:\t0000000001000000\n") is True  # bit 24 alone
    assert lim.has_cap_sys_resource("") is False


@pytest.fixture
def node_limits(fake_scontrol, exec_module):
    """call(tmp_path, args, show_config=None): gpufleet.stack.node_limits run as Ansible runs it, with a stand-in
    scontrol printing a recorded configuration (none: no scontrol on PATH)."""

    def call(tmp_path, args, show_config=None):
        fake_scontrol(tmp_path / "bin", show_config)
        return exec_module("node_limits", {"units": [], **args}, tmp_path, tmp_path / "bin")

    return call


def test_the_module_writes_the_limits_file_once(node_limits, tmp_path):
    path = tmp_path / "limits.d" / "90-gpufleet-rdma.conf"
    args = {"limits_file": str(path), "memlock": "unlimited", "nofile": 1048576}
    first = node_limits(tmp_path, args, "show-config-cgroup-memlock.txt")
    assert (first["changed"], first["slurm"]) == (True, "ok")
    assert path.read_text() == lim.limits_conf(None, 1048576)
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert node_limits(tmp_path, args, "show-config-cgroup-memlock.txt")["changed"] is False
    assert node_limits(tmp_path, args)["slurm"] == "no scontrol"


def test_the_module_refuses_a_cluster_that_propagates_memlock_before_writing(node_limits, tmp_path):
    path = tmp_path / "90-gpufleet-rdma.conf"
    result = node_limits(tmp_path, {"limits_file": str(path)}, "show-config-default.txt")
    assert result["failed"] and "PropagateResourceLimitsExcept=MEMLOCK" in result["msg"]
    assert "rdma_slurm_check: false" in result["msg"]
    assert not path.exists()
    skipped = node_limits(tmp_path, {"limits_file": str(path), "slurm_check": False}, "show-config-default.txt")
    assert (skipped["changed"], skipped["slurm"]) == (True, "not checked")


def test_the_module_names_a_value_outside_the_domain(node_limits, tmp_path):
    result = node_limits(tmp_path, {"limits_file": str(tmp_path / "x.conf"), "memlock": "64k"})
    assert result["failed"] and result["msg"] == (
        "node_limits: memlock is '64k': write unlimited, or the limit in KiB as a whole number such as 65536"
    )
