"""IMEX on multi-node NVLink nodes (_node/fabric/imex, module imex_domain): the domain's nodes from the hosts' GPU
facts, the nodes file the same on every node, the channel made now where the driver registered it, else at its
next load (NVreg_CreateImexChannel0)."""

import os

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import imex_nodes
from ansible_collections.gpufleet.stack.plugins.module_utils._node.fabric import imex

DOMAIN = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"  # a real GB200's (leptonai/gpud#1106)
MODULE = "ansible_collections.gpufleet.stack.plugins.modules.imex_domain"


def host(domain, **more):
    return {"ansible_facts": {"gpufleet_gpu": {"imex_required": True, "nvlink_domain": domain}}, **more}


def test_the_domain_is_every_host_whose_facts_report_it():
    hostvars = {
        "tray-3": host(DOMAIN, ansible_host="10.0.0.13"),
        "tray-1": host(DOMAIN, ansible_host="10.0.0.11", gpufleet_imex_address="192.168.7.11"),
        "tray-2": {"gpufleet_gpu": {"nvlink_domain": DOMAIN}},  # facts from the fact cache, by its name
        "other-rack": host("0f0f0f0f-0000-4000-8000-000000000001.7", ansible_host="10.0.1.1"),
        "login": {"ansible_host": "10.0.9.9"},  # no facts: not counted
    }
    found = imex_nodes.domain_nodes(hostvars, list(hostvars), "tray-3")
    assert found["domain"] == DOMAIN
    assert found["nodes"] == ["10.0.0.13", "192.168.7.11", "tray-2"]
    assert imex.nodes_text(["b", "a", "b"]) == "a\nb\n"  # sorted and once: byte-identical on every node


def test_no_domain_reported_no_nodes_and_why():
    found = imex_nodes.domain_nodes({"tray-1": host(None)}, ["tray-1"], "tray-1")
    assert found["nodes"] == [] and found["why"].startswith("tray-1 reports no NVLink domain")
    assert "nvidia_driver_imex_nodes" in found["why"]


@pytest.mark.parametrize(
    ("nodes", "problems"),
    [
        (["10.0.0.11", "tray-2", "fe80::1"], []),
        ([], ["no IMEX nodes: the domain needs at least this node"]),
        (["10.0.0.11 10.0.0.12"], ["'10.0.0.11 10.0.0.12' is not an IP address or host name"]),
        (["# comment"], ["'# comment' is not an IP address or host name"]),
        (["a\nb"], ["'a\\nb' is not an IP address or host name"]),
        (["tray-2\n"], ["'tray-2\\n' is not an IP address or host name"]),  # `$` alone would take it
        ([""], ["'' is not an IP address or host name"]),
    ],
)
def test_nodes_are_addresses(nodes, problems):
    assert imex.check_nodes(nodes) == problems


def test_the_channels_major_from_proc_devices():
    text = "Character devices:\n  1 mem\n195 nvidia\n234 nvidia-caps-imex-channels\n237 nvidia-caps\n"
    assert imex.channel_major(text) == 234
    assert imex.channel_major("Character devices:\n195 nvidia\n") is None


@pytest.fixture
def run(exec_module):
    """call(tmp_path, **args): gpufleet.stack.imex_domain with its files under tmp_path."""

    def call(tmp_path, **args):
        defaults = {
            "nodes_file": str(tmp_path / "etc" / "nodes_config.cfg"),
            "modprobe_file": str(tmp_path / "etc" / "gpufleet-imex.conf"),
            "channel": str(tmp_path / "dev" / "channel0"),
            "procfs_root": str(tmp_path),
        }
        return exec_module("imex_domain", {**defaults, **args}, tmp_path)

    return call


def test_the_module_writes_the_nodes_and_the_option_and_waits_for_the_driver(tmp_path, run):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "devices").write_text("Character devices:\n195 nvidia\n")  # no channel device registered
    first = run(tmp_path, nodes=["10.0.0.12", "10.0.0.11"])
    assert first["changed"] and first["channel0"] == "next_load"
    assert (tmp_path / "etc" / "nodes_config.cfg").read_text() == "10.0.0.11\n10.0.0.12\n"
    assert (tmp_path / "etc" / "gpufleet-imex.conf").read_text() == "options nvidia NVreg_CreateImexChannel0=1\n"
    again = run(tmp_path, nodes=["10.0.0.11", "10.0.0.12"])
    assert not again["changed"] and again["changed_files"] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root (CAP_MKNOD)")
def test_the_channel_is_made_now_where_the_driver_registered_it(tmp_path, run):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "devices").write_text("Character devices:\n234 nvidia-caps-imex-channels\n")
    result = run(tmp_path, nodes=["10.0.0.11"])
    if result.get("failed") and "Operation not permitted" in result.get("msg", ""):
        pytest.skip("this container may not make device nodes")
    assert result["channel0"] == "created"
    made = os.stat(tmp_path / "dev" / "channel0")
    assert (os.major(made.st_rdev), os.minor(made.st_rdev), made.st_mode & 0o777) == (234, 0, 0o666)
    assert run(tmp_path, nodes=["10.0.0.11"])["channel0"] == "present"


def test_a_bad_node_is_refused_before_anything_is_written(tmp_path, run):
    result = run(tmp_path, nodes=["10.0.0.11", "rm -rf /"])
    assert result["failed"] and result["msg"] == (
        "imex_domain: 'rm -rf /' is not an IP address or host name (nvidia_driver_imex_nodes)"
    )
    assert not (tmp_path / "etc").exists()
