"""gpufleet.stack.container_runtime on localhost with a stand-in nvidia-ctk that merges as the real one does for
Docker (the nvidia runtime added, every other key kept): written once, modes and backups kept, check mode, CDI
only with a driver, refusals."""

import json
import os
import stat
from pathlib import Path

import pytest

# Prints the merge as `nvidia-ctk runtime configure --dry-run` does; `cdi generate` prints a spec. CTK_BROKEN=1
# prints something that is not JSON.
FAKE_CTK = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
if args[:2] == ["cdi", "generate"]:
    if os.environ.get("CTK_MISMATCH"):
        print("ERRO[0000] failed to generate CDI spec: failed to initialize NVML: Driver/library version mismatch",
              file=sys.stderr)
        sys.exit(1)
    print("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all")
    sys.exit(0)
opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
if os.environ.get("CTK_BROKEN"):
    print("{not json")
    sys.exit(0)
if opts["runtime"] == "containerd":
    print('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')
    print('  runtime_type = "io.containerd.runc.v2"')
    sys.exit(0)
try:
    conf = json.load(open(opts["config"]))
except FileNotFoundError:
    conf = {}
conf.setdefault("runtimes", {})["nvidia"] = {"args": [], "path": "nvidia-container-runtime"}
if "--set-as-default" in args:
    conf["default-runtime"] = "nvidia"
print(json.dumps(conf, indent=4))
"""


@pytest.fixture
def host(tmp_path):
    ctk = tmp_path / "nvidia-ctk"
    ctk.write_text(FAKE_CTK)
    ctk.chmod(0o755)
    docker = tmp_path / "etc" / "docker" / "daemon.json"
    docker.parent.mkdir(parents=True)
    docker.write_text('{"log-driver": "journald"}\n')
    docker.chmod(0o600)
    args = {
        "engines": {"docker": str(docker), "containerd": str(tmp_path / "etc/containerd/config.toml")},
        "ctk": str(ctk),
        "cdi_spec": str(tmp_path / "etc/cdi/nvidia.yaml"),
        "driver_paths": [str(tmp_path / "dev/nvidiactl"), str(tmp_path / "proc/driver/nvidia")],
        "dev_char_rule": str(tmp_path / "rules.d/71-nvidia-dev-char.rules"),
        "cdi_refresh_env": str(tmp_path / "etc/nvidia-container-toolkit/nvidia-cdi-refresh.env"),
        "cdi_refresh_spec": str(tmp_path / "run/cdi/nvidia.yaml"),
    }
    return tmp_path, docker, args


def test_configs_are_merged_once_keeping_keys_modes_and_a_backup(run_module, host):
    tmp_path, docker, args = host
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert rc == 0, result
    assert result["changed_engines"] == ["docker", "containerd"]
    merged = json.loads(docker.read_text())
    assert merged == {
        "log-driver": "journald",
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
    }
    assert stat.S_IMODE(docker.stat().st_mode) == 0o600  # the site's mode is kept
    backup = result["configs"][0]["backup"]
    assert backup and Path(backup).read_text() == '{"log-driver": "journald"}\n'
    toml = tmp_path / "etc/containerd/config.toml"
    assert stat.S_IMODE(toml.stat().st_mode) == 0o644 and stat.S_IMODE(toml.parent.stat().st_mode) == 0o755
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert (rc, result["changed"], result["changed_engines"]) == (0, False, []), result
    rc, result = run_module("gpufleet.stack.container_runtime", {**args, "default_runtime": True})
    assert (rc, result["changed_engines"], result["changed_units"]) == (
        0,
        ["docker"],
        ["docker.service"],
    ) and json.loads(docker.read_text())["default-runtime"]


def test_check_mode_predicts_and_diff_shows_the_merge(run_module, host):
    _tmp_path, docker, args = host
    rc, out = run_module("gpufleet.stack.container_runtime", args, "--check", "--diff", raw=True)
    assert rc == 0 and "CHANGED" in out and '"nvidia-container-runtime"' in out
    assert docker.read_text() == '{"log-driver": "journald"}\n'


def test_the_cdi_spec_only_with_a_loaded_driver(run_module, host):
    tmp_path, _docker, args = host
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert result["cdi"]["generated"] is False and "no NVIDIA driver loaded" in result["cdi"]["reason"]
    assert not (tmp_path / "etc/cdi/nvidia.yaml").exists()
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert (rc, result["cdi"]["generated"], result["cdi"]["changed"]) == (0, True, True), result
    assert "kind: nvidia.com/gpu" in (tmp_path / "etc/cdi/nvidia.yaml").read_text()
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert (rc, result["changed"]) == (0, False)
    rc, result = run_module("gpufleet.stack.container_runtime", {**args, "cdi": False})
    assert result["cdi"] == {**result["cdi"], "generated": False, "reason": "container_toolkit_cdi is false"}


def test_a_driver_waiting_for_its_reboot_skips_the_cdi_spec_and_the_udev_rule_is_written(run_module, host, ansible_env):
    """Packages upgraded, old module loaded: nvidia-ctk cannot initialise NVML, so no spec now (the upgrade makes it
    after the reboot); everything else of the run still happens."""
    tmp_path, _docker, args = host
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    ansible_env["CTK_MISMATCH"] = "1"
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert rc == 0, result
    assert result["cdi"]["generated"] is False and "Driver/library version mismatch" in result["cdi"]["reason"]
    rule = (tmp_path / "rules.d/71-nvidia-dev-char.rules").read_text()
    assert 'RUN+="' + args["ctk"] + ' system create-dev-char-symlinks --create-all"' in rule
    assert result["changed_engines"] == ["docker", "containerd"]  # the udev rule is no engine to restart
    assert result["changed_units"] == ["docker.service", "containerd.service"]


def test_without_nvidia_ctk_check_mode_predicts_and_a_run_refuses(run_module, host):
    args = {**host[2], "ctk": "/nonexistent/nvidia-ctk"}
    rc, result = run_module("gpufleet.stack.container_runtime", args, "--check")
    assert (rc, result["changed_engines"]) == (0, ["docker", "containerd"])
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert rc != 0 and "/nonexistent/nvidia-ctk is not installed" in result["msg"]


def test_a_merge_that_is_not_json_leaves_daemon_json_alone(run_module, host, ansible_env):
    _tmp_path, docker, args = host
    ansible_env["CTK_BROKEN"] = "1"
    rc, result = run_module(
        "gpufleet.stack.container_runtime", {**args, "engines": {"docker": args["engines"]["docker"]}}
    )
    assert rc != 0 and "is not JSON" in result["msg"] and str(docker) in result["msg"]
    assert docker.read_text() == '{"log-driver": "journald"}\n' and len(os.listdir(docker.parent)) == 1


# NVIDIA's file as toolkit 1.19.1 ships it (deployments/systemd/nvidia-cdi-refresh.env), shortened.
REFRESH_ENV = """# This file can be used to override the configuration of the
#   nvidia-ctk cdi generate
# command invoked by the nvidia-cdi-refresh.service.
# NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/var/run/cdi/nvidia.yaml
"""


def test_nvidias_refresh_units_write_the_one_spec_where_the_role_does(run_module, host):
    """Toolkit 1.18+: NVIDIA's nvidia-cdi-refresh.service writes /var/run/cdi/nvidia.yaml, which CDI prefers to
    /etc/cdi for the same devices. Its env file is pointed at the role's spec (comments kept) and the spec it wrote
    before is removed, so one spec exists; a second run changes nothing; with an older toolkit (no env file), or
    cdi false, nothing of NVIDIA's is touched."""
    _tmp_path, _docker, args = host
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert (rc, result["cdi"]["refresh"]) == (0, {}), result
    env, stale = Path(args["cdi_refresh_env"]), Path(args["cdi_refresh_spec"])
    env.parent.mkdir(parents=True)
    env.write_text(REFRESH_ENV)
    stale.parent.mkdir(parents=True)
    stale.write_text("cdiVersion: 0.5.0\n")
    rc, result = run_module("gpufleet.stack.container_runtime", {**args, "cdi": False})
    assert result["cdi"]["refresh"] == {} and env.read_text() == REFRESH_ENV and stale.exists()
    rc, result = run_module("gpufleet.stack.container_runtime", args, "--check")
    assert result["changed"] and result["cdi"]["refresh"]["removed"] == [str(stale)] and stale.exists()
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert rc == 0 and result["cdi"]["refresh"] == {"env": str(env), "changed": True, "removed": [str(stale)]}
    assert env.read_text() == REFRESH_ENV + f"NVIDIA_CTK_CDI_OUTPUT_FILE_PATH={args['cdi_spec']}\n"
    assert not stale.exists()
    rc, result = run_module("gpufleet.stack.container_runtime", args)
    assert (rc, result["changed"], result["cdi"]["refresh"]["changed"]) == (0, False, False), result


@pytest.mark.parametrize(
    ("current", "expect"),
    [
        ("", "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia.yaml\n"),
        # a site's own setting is replaced in place, another variable and comments kept
        (
            "A=1\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/srv/x.yaml\n# end\n",
            "A=1\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia.yaml\n# end\n",
        ),
        # a commented example is not a setting; a second active one and an export form are folded into one
        (
            "# NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/a\nexport NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/b\n"
            "NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/c\n",
            "# NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/a\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia.yaml\n",
        ),
        # a longer name that starts the same is another variable
        (
            "NVIDIA_CTK_CDI_OUTPUT_FILE_PATHS=/x\n",
            "NVIDIA_CTK_CDI_OUTPUT_FILE_PATHS=/x\nNVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia.yaml\n",
        ),
    ],
)
def test_the_refresh_env_holds_one_output_path(current, expect):
    from ansible_collections.gpufleet.stack.plugins.modules import container_runtime as cr

    assert cr.refresh_env_text(current, "/etc/cdi/nvidia.yaml") == expect
