"""Each inventory value checked to its real domain on the controller (issue 30): paths, URLs, ports, numbers, modes,
names and the inventory's own host names, with hostile or mistyped values of every kind. Each case names what the
message must say: the variable as written, and why."""

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._common import schema as sc
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import inventory as inv

from .test_schema import ROLE_SPECS, SCHEMA, all_specs, specs


def problems(name, value):
    return inv.check_host(SCHEMA, ROLE_SPECS, {name: value}, "facts")


def mount(**keys):
    return [{"path": "/mnt/datasets", "type": "tmpfs", "size": "64g", **keys}]


REFUSED = [
    # Paths the collection writes, into the system's own trees.
    ("dataset_cache_mounts", mount(path="/etc"), "/etc itself holds other programs' files"),
    ("dataset_cache_mounts", mount(path="/etc/ssl/private"), "a mount there would hide the system's own files"),
    ("dataset_cache_mounts", mount(path="/"), "/ itself"),
    ("dataset_cache_mounts", mount(path="/usr/share/datasets"), "the package manager's own tree"),
    ("dataset_cache_mounts", mount(path="/boot/efi"), "the package manager's own tree"),
    ("dataset_cache_mounts", mount(path="/proc/sys"), "kernel or runtime filesystem"),
    ("dataset_cache_mounts", mount(path="/run/user/0"), "kernel or runtime filesystem"),
    ("dataset_cache_mounts", mount(path="/var/lib"), "/var/lib itself"),
    ("dataset_cache_mounts", mount(path="/root/data"), "a mount there would hide"),
    ("dataset_cache_mounts", mount(type="device", device="/tmp/disk.img", fstype="ext4"), "not under /dev"),
    ("dataset_cache_mounts", mount(type="device", device="/dev/../etc/shadow", fstype="ext4"), "not normalised"),
    ("dataset_cache_state_file", "/etc/passwd", "configuration that runs code or grants access"),
    ("dataset_cache_state_file", "/etc/sudoers.d/gpufleet", "configuration that runs code or grants access"),
    ("node_drain_state_file", "/etc/cron.d/drain", "configuration that runs code"),
    ("node_drain_state_file", "/sys/kernel/notes", "kernel or runtime filesystem"),
    ("container_toolkit_docker_config", "/etc/systemd/system/docker.service", "configuration that runs code"),
    ("container_toolkit_cdi_spec", "/usr/lib/x86_64-linux-gnu/libc.so.6", "the package manager's own tree"),
    ("gpufleet_upgrade_state_dir", "/var/lib/dpkg", "the package manager's own tree"),
    ("gpufleet_upgrade_state_dir", "/opt", "/opt itself"),
    ("gpu_monitoring_textfile_dir", "/etc", "/etc itself"),
    ("horovod_venv", "/usr", "the package manager's own tree"),
    ("gpufleet_report_dir", "/etc/apt/sources.list.d", "configuration that runs code"),
    # Paths that are not what they look like.
    ("gpufleet_report_dir", "reports/../../../etc", "not normalised"),
    ("gpufleet_report_dir", "-rf", "starts with -"),
    ("gpufleet_upgrade_state_dir", "/var/lib//gpufleet", "write it as /var/lib/gpufleet"),
    ("gpufleet_upgrade_state_dir", "/var/lib/./gpufleet", "write it as /var/lib/gpufleet"),
    ("gpufleet_upgrade_state_dir", "/var/lib/gpufleet/..", "not normalised"),
    ("gpufleet_upgrade_state_dir", "/var/lib/gpu fleet", "whitespace or a character"),
    ("gpufleet_upgrade_state_dir", "/var/lib/$(id)", "whitespace or a character"),
    ("gpufleet_upgrade_state_dir", "/var/lib/x;reboot", "whitespace or a character"),
    ("gpufleet_upgrade_state_dir", "/var/lib/`id`", "whitespace or a character"),
    ("horovod_venv", "opt/train", "not an absolute path"),
    # URLs: hosts, ports, schemes and characters a shell or apt reads differently.
    ("gpufleet_nvidia_repo_url", "http://mirror$(id).example/nvidia", "its host is not a DNS name"),
    ("gpufleet_nvidia_repo_url", "http://a;b.example/", "its host is not a DNS name"),
    ("gpufleet_nvidia_repo_url", "http://-mirror.example/", "its host is not a DNS name"),
    ("gpufleet_nvidia_repo_url", "https://mirror..example/", "its host is not a DNS name"),
    ("gpufleet_nvidia_repo_url", "https://" + "a" * 64 + ".example/", "its host is not a DNS name"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example:0/", "its port is not 1-65535"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example:65536/", "not a URL"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example:-1/", "not a URL"),
    ("gpufleet_nvidia_repo_url", "ftp://mirror.example/", "scheme must be http, https or file"),
    ("gpufleet_nvidia_repo_url", "javascript:alert(1)", "scheme must be http, https or file"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example/`id`/", "a shell or apt would read differently"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example/a'b", "a shell or apt would read differently"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example/a%zz", "a stray %"),
    ("gpufleet_nvidia_repo_url", "https://mirror.example/<script>", "a shell or apt would read differently"),
    ("nvidia_repo_cuda_key_url", "https://k.example/key?t=a;reboot", "a shell or apt would read differently"),
    ("horovod_pip_index_url", "http://[::1/simple", "not a URL"),
    # Numbers: ASCII digits, finite, with an upper bound that makes sense for the thing.
    ("gpufleet_upgrade_drain_timeout", 604801, "out of range (0 to 604800)"),
    ("gpufleet_upgrade_gate_timeout", 10**12, "out of range (0 to 86400)"),
    ("gpufleet_upgrade_ready_timeout", float("inf"), "not a whole number"),
    ("gpufleet_upgrade_ready_timeout", float("nan"), "not a whole number"),
    ("gpufleet_upgrade_ready_timeout", "1e3", "not a whole number"),
    ("gpufleet_upgrade_ready_timeout", "0x10", "not a whole number"),
    ("gpu_validation_timeout", 86401, "out of range (1 to 86400)"),
    ("gpu_validation_max_bytes", 2**39, "out of range"),
    ("gpufleet_upgrade_serial", "\u0661\u0668\u0660", "not a host count or a percentage"),
    ("gpufleet_upgrade_serial", "\uff15\uff10%", "not a host count or a percentage"),
    ("gpu_monitoring_interval", "2w", "longer than 86400 s"),
    ("gpu_monitoring_interval", "99999999999h", "longer than 86400 s"),
    ("gpufleet_apt_lock_timeout", 3601, "out of range (0 to 3600)"),
    ("gpufleet_apt_lock_timeout", "\u0661\u0662\u0660", "not a whole number"),
    ("gpufleet_upgrade_free_mib", {"boot": 300}, "which is not in the form /boot"),
    ("gpufleet_upgrade_free_mib", {"/boot/../etc": 300}, "which is not in the form /boot"),
    ("gpufleet_upgrade_free_mib", {"/boot": -1}, "out of range (0 to 1048576)"),
    ("gpufleet_upgrade_free_mib", {"/boot": 1e9}, "not a whole number"),
    # Ports.
    ("gpu_monitoring_node_exporter_listen_address", ":0", "its port is not 1-65535"),
    ("gpu_monitoring_dcgm_exporter_listen_address", "127.0.0.1:99999", "its port is not 1-65535"),
    # File modes that are not real or not safe.
    ("dataset_cache_mounts", mount(mode="0777"), "anyone could delete or replace anyone's files"),
    ("dataset_cache_mounts", mount(mode="4755"), "setuid"),
    ("dataset_cache_mounts", mount(mode="0644"), "its owner could not enter it"),
    ("dataset_cache_mounts", mount(mode="0888"), "not in the expected form"),
    ("dataset_cache_mounts", mount(mode="755 "), "not in the expected form"),
    # Names a command line would read as options.
    ("node_drain_slurm_node_name", "-rf", "not in the expected form"),
    ("node_drain_slurm_delegate_to", "-oProxyCommand=id", "not in the expected form"),
    ("node_drain_slurm_delegate_to", "ctl;reboot", "not in the expected form"),
    ("node_drain_slurm_delegate_to", "../ctl", "not in the expected form"),
    ("node_drain_slurm_delegate_to", "slurm ctl", "not in the expected form"),
    ("gpu_validation_image", "--privileged", "not in the expected form"),
    ("gpu_validation_image", "ubuntu;reboot", "not in the expected form"),
    ("dataset_cache_mounts", mount(owner="-root"), "not in the expected form"),
    ("dataset_cache_mounts", mount(options=["-oremount"]), "not in the expected form"),
    # Multi-node (issue 28): limits, Slurm files, NCCL's interface, the job across nodes.
    ("rdma_memlock_limit", "64k", "not in the expected form"),
    ("rdma_memlock_limit", "0", "not in the expected form"),
    ("rdma_memlock_limit", "unlimited\nroot hard core 0", "control character"),
    ("rdma_nofile_limit", 1048577, "out of range"),
    ("rdma_nofile_limit", "\u0661\u0660\u0662\u0664", "not a whole number"),
    ("rdma_limits_file", "/etc/security/limits.conf", "it is not under /etc/security/limits.d"),
    ("rdma_limits_file", "/etc/security/limits.d/../limits.conf", "normalised"),
    ("rdma_limit_units", ["slurmd;reboot"], "not in the expected form"),
    ("rdma_limit_units", ["../../ssh"], "not in the expected form"),
    ("rdma_core_version", "44.0;rm", "not in the expected form"),
    ("rdma_peermem", "always", "not one of the choices"),
    ("slurm_gres_cgroup_conf", "/etc/sudoers.d/slurm", "configuration that runs code or grants access"),
    ("slurm_gres_cgroup_conf", "slurm/cgroup.conf", "absolute"),
    ("nccl_socket_ifname", "eth0 lo", "not in the expected form"),
    ("nccl_socket_ifname", "averyverylongname0", "not in the expected form"),
    ("gpu_validation_multinode_python", "python3", "absolute"),
    ("gpu_validation_multinode_nodes", ["gpu-1", "-w"], "not in the expected form"),
    ("gpu_validation_multinode_nodes", ["gpu-1", "gpu-1"], "more than once"),
    ("gpu_validation_multinode_master_addr", "-oProxyCommand=id", "not in the expected form"),
    ("gpu_validation_multinode_port", 80, "out of range"),
    ("gpu_validation_multinode_bytes", 0, "out of range"),
    ("gpu_validation_multinode_environment", {"LD_PRELOAD;x": "/tmp/x.so"}, "which is not in the form"),
    ("gpu_validation_multinode_environment", {"NCCL_DEBUG": "INFO\nX=1"}, "control character"),
    # NVLink fabric parts (issue 28, item 6).
    ("nvidia_driver_nvlsm", "always", "not one of the choices"),
    ("nvidia_driver_imex", "maybe", "not one of the choices"),
    ("nvidia_driver_nvlsm_version", "2025.10.14;rm -rf /", "not in the expected form"),
    ("nvidia_driver_nvlsm_version", "latest", "not in the expected form"),
    ("nvidia_driver_imex_nodes", ["10.0.0.11", "10.0.0.12 10.0.0.13"], "not in the expected form"),
    ("nvidia_driver_imex_nodes", ["-oProxyCommand=id"], "not in the expected form"),
    ("nvidia_driver_imex_nodes", ["tray-1\ntray-2"], "control character"),
    ("rdma_gdrcopy_version", "2.5.1;reboot", "not in the expected form"),
    ("rdma_gdrcopy_version", "latest", "not in the expected form"),
    ("rdma_gdrcopy", "maybe", "not"),
    # A list with elements of the wrong kind names the variable, not a Python error.
    ("gpufleet_components", [["cuda"]], "gpufleet_components[0]"),
    ("gpufleet_components", [{"cuda": True}], "gpufleet_components[0]"),
    ("gpu_validation_multinode_reservation", "maint --uid=0", "not in the expected form"),
    ("gpu_validation_multinode_reservation", "-x", "not in the expected form"),
    ("gpu_validation_multinode_submit_host", "ctl;id", "not in the expected form"),
    ("gpufleet_upgrade_multinode", "sometimes", "not"),
]


@pytest.mark.parametrize(("name", "value", "said"), REFUSED, ids=[f"{n}={v!r}"[:80] for n, v, _said in REFUSED])
def test_hostile_values_are_refused_naming_the_variable_and_why(name, value, said):
    found = problems(name, value)
    assert found, f"{name}={value!r} was accepted"
    assert said in " ".join(found)
    assert all(message.startswith(name) for message in found)


ACCEPTED = [
    ("dataset_cache_mounts", mount(path="/mnt/datasets/imagenet", mode="1777")),
    ("dataset_cache_mounts", mount(path="/var/cache/datasets", mode="2775")),
    ("dataset_cache_mounts", mount(type="device", device="/dev/nvme1n1", fstype="xfs", path="/scratch")),
    ("dataset_cache_state_file", "/var/lib/gpufleet/dataset-cache.json"),
    ("rdma_memlock_limit", "unlimited"),
    ("rdma_peermem", False),
    ("rdma_peermem", "AUTO"),
    ("rdma_memlock_limit", 4096),
    ("rdma_limits_file", "/etc/security/limits.d/90-gpufleet-rdma.conf"),
    ("rdma_limit_units", ["slurmd", "slurmd.service"]),
    ("slurm_gres_cgroup_conf", "/etc/slurm/cgroup.conf"),
    ("nccl_socket_ifname", "ens1f0"),
    ("gpu_validation_multinode_nodes", ["mn-gpu1", "gpu-2.example"]),
    ("gpu_validation_multinode_master_addr", "127.0.0.1"),
    ("gpu_validation_multinode_environment", {"GLOO_SOCKET_IFNAME": "lo", "NCCL_IB_HCA": "=mlx5_0:1"}),
    ("container_toolkit_docker_config", "/etc/docker/daemon.json"),
    ("container_toolkit_containerd_config", "/etc/containerd/config.toml"),
    ("container_toolkit_cdi_spec", "/etc/cdi/nvidia.yaml"),
    ("gpufleet_upgrade_state_dir", "/var/lib/gpufleet/"),
    ("gpu_monitoring_textfile_dir", "/var/lib/prometheus/node-exporter"),
    ("horovod_venv", "/usr/local/gpufleet/train"),
    ("horovod_python", "/usr/bin/python3"),  # read, not written
    ("gpufleet_report_dir", "reports"),
    ("gpufleet_report_dir", "/srv/reports/fleet"),
    ("gpufleet_nvidia_repo_url", "https://developer.download.nvidia.com/compute/cuda/repos"),
    ("gpufleet_nvidia_repo_url", "http://10.0.0.5:8080/nvidia"),
    ("gpufleet_nvidia_repo_url", "http://[fd00::5]:8080/nvidia"),
    ("gpufleet_nvidia_repo_url", "https://user:p%40ss@mirror.corp.example/nvidia/"),
    ("gpufleet_nvidia_repo_url", "file:///srv/mirror/nvidia"),
    ("gpufleet_nvidia_repo_url", "http://repo_mirror.internal/nvidia"),
    ("nvidia_repo_cuda_key_url", "https://k.example/key.asc?token=abc&expires=1"),
    ("gpufleet_upgrade_drain_timeout", 604800),
    ("gpufleet_upgrade_drain_timeout", "3600"),
    ("gpu_monitoring_interval", "1h 30min"),
    ("gpu_monitoring_node_exporter_listen_address", ":9100"),
    ("gpu_monitoring_dcgm_exporter_listen_address", "[::1]:9400"),
    ("gpu_validation_image", "registry.example.org:5000/team/cuda-base:12.8"),
    ("gpu_validation_image", "nvidia/cuda:12.8.0-base-ubuntu24.04"),
    ("node_drain_slurm_node_name", "gpu-017"),
    ("node_drain_slurm_delegate_to", "slurm-ctl.example.org"),
    ("node_drain_slurm_delegate_to", ""),
    ("gpufleet_apt_lock_timeout", 0),
    ("gpufleet_upgrade_free_mib", {"/boot": 300, "/usr": 8192, "/var/lib/dkms": 1024}),
    ("nvidia_driver_nvlsm", "auto"),
    ("rdma_gdrcopy", True),
    ("rdma_gdrcopy_version", "2.5.1-1"),
    ("rdma_gdrcopy_version", "2.4.4"),
    ("nvidia_driver_imex", True),
    ("nvidia_driver_nvlsm_version", "*"),
    ("nvidia_driver_nvlsm_version", "2025.10.14-1"),
    ("nvidia_driver_imex_nodes", ["10.0.0.11", "tray-2.rack7.example", "fd00::11"]),
    ("gpu_validation_multinode_reservation", "gpufleet-upgrade-gpu-017"),
    ("gpu_validation_multinode_submit_host", "gpu-017.rack7.example"),
    ("gpufleet_upgrade_multinode", False),
]


def test_the_job_across_nodes_needs_slurm_and_the_training_python():
    """gpufleet_upgrade_multinode runs through Slurm in the training environment: each missing part is named with
    its fix, on the controller, before a node is drained."""
    bare = inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_upgrade_multinode": True}, "facts")
    assert bare == [
        "gpufleet_upgrade_multinode is true, which needs gpufleet_scheduler: slurm, and gpufleet_scheduler is "
        '"none": set gpufleet_scheduler: slurm, or gpufleet_upgrade_multinode: false',
        "gpufleet_upgrade_multinode is true, which needs gpu_validation_multinode_python, and "
        "gpu_validation_multinode_python is not set: set it, or gpufleet_upgrade_multinode: false",
    ]
    kubernetes = {"gpufleet_upgrade_multinode": "yes", "gpufleet_scheduler": "kubernetes"}
    assert 'gpufleet_scheduler is "kubernetes"' in " ".join(inv.check_host(SCHEMA, ROLE_SPECS, kubernetes, "facts"))
    ready = {"gpufleet_scheduler": "slurm", "gpu_validation_multinode_python": "/opt/train/bin/python"}
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_upgrade_multinode": True, **ready}, "facts") == []
    # Off (or not a boolean: that is said once, by the type check) needs nothing.
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_upgrade_multinode": "false"}, "facts") == []
    assert len(inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_upgrade_multinode": "sometimes"}, "facts")) == 1
    # A needed variable that waits for facts is checked on the host, not here.
    deferred = frozenset({"gpufleet_scheduler", "gpu_validation_multinode_python"})
    assert inv.check_host(SCHEMA, ROLE_SPECS, {"gpufleet_upgrade_multinode": True}, "facts", deferred) == []


@pytest.mark.parametrize(("name", "value"), ACCEPTED, ids=[f"{n}={v!r}"[:80] for n, v in ACCEPTED])
def test_real_values_pass(name, value):
    assert problems(name, value) == []


@pytest.mark.parametrize(
    "host",
    ["gpu-01", "gpu-01.rack3.example.org", "10.0.0.5", "fd00::5", "node_7"],
)
def test_real_host_names_pass(host):
    assert inv.host_name_problems(host) == []


@pytest.mark.parametrize(
    "host",
    [
        "gpu;reboot",
        "gpu$(id)",
        "<img src=x>",
        "gpu 01",
        "-gpu",
        ".hidden",
        "gpu/../x",
        "a..b",
        "gpu\n01",
        "",
        "\uff47\uff50\uff55",
    ],
)
def test_hostile_host_names_are_refused(host):
    (message,) = inv.host_name_problems(host)
    assert message.startswith("the inventory host name ") and "ansible_host" in message


def test_every_path_the_collection_writes_says_so_and_every_int_has_bounds():
    """The domains above hold only where the schema says what a path is for and how big a number may be."""
    writes = {name for name, spec in all_specs() for s in specs(spec) if s.get("type") == "path" and s.get("writes")}
    assert {
        "gpufleet_report_dir",
        "gpufleet_upgrade_state_dir",
        "dataset_cache_mounts",
        "dataset_cache_state_file",
        "node_drain_state_file",
        "container_toolkit_docker_config",
        "container_toolkit_containerd_config",
        "container_toolkit_cdi_spec",
        "horovod_venv",
        "horovod_wheel_cache",
        "gpu_monitoring_textfile_dir",
    } <= writes
    unbounded = [name for name, spec in all_specs() for s in specs(spec) if s.get("type") == "int" and "max" not in s]
    assert unbounded == []


@pytest.mark.parametrize(
    ("path", "writes", "harmful"),
    [
        ("/usr/local/cuda-12.8", "dir", False),
        ("/usr/localx", "dir", True),  # not /usr/local: /usr's
        ("/etc/docker/daemon.json", "file", False),
        ("/etc/docker", "mount", True),
        ("/etc/systemd/system/x.service.d/y.conf", "file", True),
        ("/devices", "dir", False),  # not /dev
        ("/var/lib/gpufleet", "dir", False),
    ],
)
def test_harm_is_judged_by_whole_path_components(path, writes, harmful):
    assert bool(sc.harm(path, writes)) is harmful
