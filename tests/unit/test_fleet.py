"""sandbox/fleet's pure parts: argument errors and the inventory it writes (no Docker needed)."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def node(name, image="debian12", port=22200):
    labels = {"gpufleet.sandbox": "1", "gpufleet.sandbox.image": image, "gpufleet.sandbox.ssh_port": str(port)}
    return {"Name": f"/{name}", "Config": {"Labels": labels}}


def test_inventory_reaches_nodes_through_docker_by_default(fleet):
    inventory = yaml.safe_load(fleet.render_inventory([node("gpu-1"), node("gpu-2", "debian13")]))
    hosts = inventory["all"]["children"]["gpu_nodes"]["hosts"]
    assert list(hosts) == ["gpu-1", "gpu-2"]
    assert {h["ansible_connection"] for h in hosts.values()} == {"community.docker.docker"}
    assert hosts["gpu-2"]["gpufleet_sandbox_image"] == "debian13"


def test_an_ssh_inventory_reaches_each_node_on_its_port_as_a_user_with_become_and_checks_host_keys(fleet):
    rendered = fleet.render_inventory([node("gpu-1"), node("gpu-2", port=22201)], "ssh")
    hosts = yaml.safe_load(rendered)["all"]["children"]["gpu_nodes"]["hosts"]
    assert [(h["ansible_connection"], h["ansible_host"], h["ansible_port"]) for h in hosts.values()] == [
        ("ssh", "127.0.0.1", 22200),
        ("ssh", "127.0.0.1", 22201),
    ]
    gpu1 = hosts["gpu-1"]
    assert (gpu1["ansible_user"], gpu1["ansible_become"]) == ("fleet", True)
    assert gpu1["ansible_ssh_private_key_file"] == str(fleet.SSH_DIR / "id_ed25519")
    args = gpu1["ansible_ssh_common_args"]
    assert f"-o UserKnownHostsFile={fleet.SSH_DIR / 'known_hosts'}" in args and "StrictHostKeyChecking=yes" in args


def test_a_node_made_before_ssh_says_to_remake_it(fleet):
    old = {"Name": "/gpu-9", "Config": {"Labels": {"gpufleet.sandbox": "1"}}}
    with pytest.raises(fleet.FleetError, match="made before sandbox nodes had SSH"):
        fleet.render_inventory([old], "ssh")


def test_empty_inventory_is_valid_and_has_no_hosts(fleet):
    inventory = yaml.safe_load(fleet.render_inventory([]))
    assert inventory["all"]["children"]["gpu_nodes"]["hosts"] == {}


def test_every_node_runs_with_host_networking_and_no_privileged(fleet):
    args = fleet.NODE_RUN_ARGS
    assert args[args.index("--network") + 1] == "host"
    assert "--privileged" not in args
    assert args[args.index("--cap-add") + 1] == "SYS_ADMIN"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["up", "0"], "N must be a positive number"),
        (["up"], "N must be a positive number"),
        (["up", "2", "--name", "x"], "either N or --name"),
    ],
)
def test_bad_arguments_say_what_to_do(fleet, capsys, argv, message):
    assert fleet.main(argv) == 1
    assert message in capsys.readouterr().err


def test_recipe_digest_changes_with_the_suite(fleet):
    assert fleet.recipe_digest("debian12") != fleet.recipe_digest("debian13")


@pytest.fixture
def no_engine(fleet, monkeypatch):
    monkeypatch.setattr(fleet, "engine_answers", lambda: False)
    return fleet


def test_without_root_it_says_how_to_start_an_engine(no_engine, monkeypatch):
    monkeypatch.setattr(no_engine.os, "geteuid", lambda: 1000)
    with pytest.raises(no_engine.FleetError, match=r"needs root.*dockerd --bridge=none --iptables=false"):
        no_engine.ensure_engine()


def test_without_apt_it_says_to_install_docker(no_engine, monkeypatch):
    monkeypatch.setattr(no_engine.os, "geteuid", lambda: 0)
    monkeypatch.setattr(no_engine.shutil, "which", lambda name: None)
    with pytest.raises(no_engine.FleetError, match="not a Debian/Ubuntu host with apt-get"):
        no_engine.ensure_engine()


def test_an_engine_with_a_bridge_is_refused_unless_allowed(fleet, monkeypatch):
    monkeypatch.setattr(fleet, "engine_answers", lambda: True)

    def fake_run(argv, check=True, **kw):
        assert argv[:3] == ["docker", "network", "ls"]
        return fleet.subprocess.CompletedProcess(argv, 0, stdout="bridge\n", stderr="")

    monkeypatch.setattr(fleet, "run", fake_run)
    with pytest.raises(fleet.FleetError, match=r"bridge network.*--allow-bridge"):
        fleet.ensure_engine()
    fleet.ensure_engine(allow_bridge=True)


def test_unknown_profile_lists_the_known_ones(fleet):
    with pytest.raises(fleet.FleetError, match=r"known names: .*a100-sxm4-40gb-x8-nvswitch"):
        fleet.profile_path("no-such-gpu")


def test_a_removed_nodes_slurm_cgroups_go_deepest_first_and_others_stay(fleet, tmp_path, monkeypatch):
    # As slurmd makes them on this cgroup v1 host: /sys/fs/cgroup/<controller>/slurm_<node>/uid_0/job_N/step_0.
    for controller in ("devices", "freezer"):
        (tmp_path / controller / "slurm_gpu-1" / "uid_0" / "job_7" / "step_0").mkdir(parents=True)
        (tmp_path / controller / "slurm_gpu-10" / "uid_0").mkdir(parents=True)
        (tmp_path / controller / "docker").mkdir(parents=True)
    (tmp_path / "cpu,cpuacct").mkdir()
    (tmp_path / "cpu").symlink_to("cpu,cpuacct")
    monkeypatch.setattr(fleet, "CGROUP_ROOT", tmp_path)
    fleet.release_cgroups([node("gpu-1")])
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("*/*"))
    assert left == ["devices/docker", "devices/slurm_gpu-10", "freezer/docker", "freezer/slurm_gpu-10"]


def test_a_container_another_lane_removes_while_listing_is_not_an_error(fleet, monkeypatch):
    """Two scenario lanes: one lists the nodes, the other removes one before it is inspected (a CI run failed so)."""
    answers = {
        "ps": fleet.subprocess.CompletedProcess([], 0, "aaa\nbbb\n", ""),
        "inspect": fleet.subprocess.CompletedProcess([], 1, '[{"Name": "/kept"}]\n', "Error: No such object: bbb\n"),
    }
    monkeypatch.setattr(fleet, "run", lambda argv, check=True, **kw: answers[argv[1]])
    assert fleet.containers(None) == [{"Name": "/kept"}]
    answers["inspect"] = fleet.subprocess.CompletedProcess([], 1, "", "Cannot connect to the Docker daemon\n")
    with pytest.raises(fleet.FleetError, match="docker inspect failed"):
        fleet.containers(None)
